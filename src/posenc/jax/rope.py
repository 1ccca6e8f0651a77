"""RoPE in JAX: exact cos/sin rows built inside the graph, and the rotation.

The functional forms take the NumPy API's arguments (:func:`posenc.rope_cos_sin`,
:func:`posenc.apply_rope`); the frequencies are built on the host at trace
time (static), the positions are traced. Rows are the NumPy core's float32
rows bit for bit (:mod:`posenc.jax._rows`).
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, check_int, show_value
from ..rope.apply import check_broadcast
from ..rope.cos_sin import check_axes
from ..rope.frequencies import RopeFrequencies, spec_frequencies
from ..rope.spec import RopeConfig, as_spec, spec_of
from ..support.arguments import default
from ..support.layout import check_rope_layout
from ..support.vocabulary import LadderSharing, RopeLayout, SectionLayout
from ._rows import computed_once, sincos_rows
from .inputs import as_input, check_output, check_traced_positions

__all__ = ["apply_rope", "frequencies", "rope_cos_sin", "rotate"]

_OUT_DTYPES = ("float32", "bfloat16", "float16")


def frequencies(
    head_dim: int | RopeConfig,
    *,
    base: float = default(10000.0),
    scaling: Any = None,
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    sections: Any = None,
    section_layout: SectionLayout = default("contiguous"),
    ladder: LadderSharing = default("shared"),
) -> RopeFrequencies:
    """The static frequencies (:func:`posenc.rope_frequencies`, a spec too), with the length rule fixed for tracing.

    DynamicNTK and LongRoPE follow the sequence length; inside a traced
    program the NumPy default (max(positions) + 1) would be a traced value, so
    ``seq_len`` must be given.
    """
    given = {"base": base, "scaling": scaling, "rotary_dim": rotary_dim, "sections": sections,
             "section_layout": section_layout, "ladder": ladder}
    spec = as_spec(head_dim, **given)
    return traced_frequencies(spec, seq_len)


def traced_frequencies(spec: RopeConfig, seq_len: Any) -> RopeFrequencies:
    """A checked spec's frequencies, refusing a length-following scaling without a static ``seq_len``."""
    if spec.scaling is not None and spec.scaling.cache_key(None) is not None and seq_len is None:
        raise PosEncError(
            f"{type(spec.scaling).__name__} follows the sequence length: pass seq_len (a static int) to the JAX "
            "functions; max(positions) + 1 is a traced value"
        )
    return spec_frequencies(spec, seq_len)


def _out_dtype(dtype: Any) -> Any:
    try:
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    except (TypeError, ValueError):
        name = None
    if name not in _OUT_DTYPES:  # with or without jax_enable_x64: the rows are float32 values
        raise PosEncError(f"dtype must be one of {_OUT_DTYPES}: posenc.jax builds float32 rows in 32-bit "
                          f"arithmetic (float64 rows: the NumPy API), got {show_value(dtype)}")
    return jnp.dtype(name)


def cos_sin_rows(positions: Any, freqs: RopeFrequencies) -> tuple[jax.Array, jax.Array]:
    """float32 (cos, sin) ``[..., r/2]`` of traced positions (``[..., n_axes]`` with sections)."""
    pos = check_traced_positions(positions)
    check_axes(pos, freqs.sections)
    lead = pos.shape if freqs.sections is None else pos.shape[:-1]
    check_output((2, *lead, freqs.rotary_dim // 2), "RoPE cos/sin rows")
    sin, cos = sincos_rows(pos, freqs.ladder, freqs.attention_factor, pair_axes=freqs.pair_axes)
    return cos, sin


def rope_cos_sin(
    positions: Any,
    head_dim: int | RopeConfig,
    *,
    base: float = default(10000.0),
    scaling: Any = None,
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    dtype: Any = jnp.float32,
    sections: Any = None,
    section_layout: SectionLayout = default("contiguous"),
    ladder: LadderSharing = default("shared"),
) -> tuple[jax.Array, jax.Array]:
    """Exact cos(ω_i p) and sin(ω_i p) times the attention factor, built in the graph.

    Args:
        positions: int32 or float32 ``[...]``, traced or not (``[..., n_axes]``
            with sections). Every int32 is exact; float32 positions are exact
            where |p·ω_i| >= 2**-60 (below, within 2**-90 absolute); traced,
            they give NaN at |p| >= 2**31 (or NaN, inf), concrete ones are
            refused. int64 (``jax_enable_x64`` on) within int32 too.
        head_dim, base, scaling, rotary_dim, seq_len, sections, section_layout, ladder: as
            :func:`posenc.rope_cos_sin` (static); ``seq_len`` is required for
            DynamicNTK and LongRoPE.
        dtype: float32 (the NumPy core's float32 bits), bfloat16 or float16
            (those bits rounded once more: within 1 ulp).

    Returns:
        (cos, sin), each ``[..., rotary_dim/2]``.

    Raises:
        PosEncError: for static arguments the NumPy function refuses, a
            missing ``seq_len``, a bad dtype, a positions array of another
            framework (a torch tensor), a float64 JAX array
            (``jax_enable_x64`` on), concrete positions (NumPy, Python, a JAX
            array outside a trace) outside int32, NaN, infinite, at or past
            2**31 or not float32 values, or an output larger than the device's
            memory, before any work.
            Under ``jax.jit`` JAX itself converts a NumPy int64 argument to
            int32 by keeping its low 32 bits (2**31 + 5 arrives as
            −2**31 + 5), and a float64 one to float32, silently, before posenc
            sees it: pass :func:`posenc.jax.positions` of it instead, which
            checks it.

    >>> import jax
    >>> c, s = jax.jit(lambda p: rope_cos_sin(p, 4, base=100.0))(jnp.array([0, 1000]))
    >>> np.asarray(c, np.float64).round(5).tolist()
    [[1.0, 1.0], [0.56238, 0.86232]]
    """
    dt = _out_dtype(dtype)
    freqs = frequencies(head_dim, base=base, scaling=scaling, rotary_dim=rotary_dim, seq_len=seq_len,
                        sections=sections, section_layout=section_layout, ladder=ladder)
    cos, sin = cos_sin_rows(positions, freqs)
    return cos.astype(dt), sin.astype(dt)


def rotate(x: jax.Array, cos: jax.Array, sin: jax.Array, layout: RopeLayout, rotary_dim: int) -> jax.Array:
    """Rotate the first ``rotary_dim`` channels of x (``[..., h_d]``) by float32 rows ``[..., r/2]``.

    The math is NumPy's, in float32: each product rounded, then the sum,
    then the result rounded once into x's dtype (for float32 rows and x, the
    bits of :func:`posenc.apply_rope`'s rotation); channels past
    ``rotary_dim`` are passed through untouched. XLA would contract a
    product and the sum that reads it into one FMA inside a fusion (one
    rounding, not two: other bits); an integer no-op between them
    (:func:`_rounded`) keeps every product rounded on its own, eagerly and
    under ``jit``, on any backend.

    Raises:
        PosEncError: for an x that is no float array, a layout or rotary_dim
            that does not fit it, or rows that do not broadcast to
            ``x.shape[:-1] + (rotary_dim // 2,)``.

    >>> rotate(jnp.ones((2, 4)), jnp.ones(2), jnp.zeros(2), "half", 4).tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    x = float_array(x, "x", min_ndim=1)
    layout = check_rope_layout(layout)
    rotary_dim = check_int(rotary_dim, "rotary_dim", minimum=2)
    if rotary_dim % 2 or rotary_dim > x.shape[-1]:
        raise PosEncError(f"rotary_dim must be even and <= x.shape[-1] = {x.shape[-1]}, got {rotary_dim}")
    n = rotary_dim // 2
    cos, sin = float_array(cos, "cos"), float_array(sin, "sin")
    want = (*x.shape[:-1], n)
    for name, rows in (("cos", cos), ("sin", sin)):
        try:
            ok = np.broadcast_shapes(rows.shape, want) == want
        except ValueError:
            ok = False
        if not ok:
            raise PosEncError(f"{name} must broadcast to {want} (x's leading axes, rotary_dim // 2), "
                              f"got shape {tuple(rows.shape)}")
    return _rotated(x, cos, sin, layout, rotary_dim)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _rotated(x: jax.Array, cos: jax.Array, sin: jax.Array, layout: RopeLayout, rotary_dim: int) -> jax.Array:
    # one compiled program, called eagerly too (one dispatch, not a dozen)
    n = rotary_dim // 2
    cos, sin = cos.astype(jnp.float32), sin.astype(jnp.float32)  # float32 math (float64 rows: x64 on)
    if layout == "head_half":  # Gemma 4's proportional pairs (i, i + h_d/2): posenc.rope.scaling.proportional
        hh = x.shape[-1] // 2
        a, b = x[..., :n].astype(jnp.float32), x[..., hh:hh + n].astype(jnp.float32)
        o1 = (_rounded(a * cos, cos) - _rounded(b * sin, sin)).astype(x.dtype)
        o2 = (_rounded(b * cos, cos) + _rounded(a * sin, sin)).astype(x.dtype)
        return jnp.concatenate([o1, x[..., n:hh], o2, x[..., hh + n:]], axis=-1)
    xr = x[..., :rotary_dim].astype(jnp.float32)
    if layout == "half":
        x1, x2 = xr[..., :n], xr[..., n:]
    else:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    o1 = _rounded(x1 * cos, cos) - _rounded(x2 * sin, sin)
    o2 = _rounded(x2 * cos, cos) + _rounded(x1 * sin, sin)
    out = jnp.concatenate([o1, o2], axis=-1) if layout == "half" else jnp.stack([o1, o2], axis=-1).reshape(xr.shape)
    out = out.astype(x.dtype)
    if rotary_dim == x.shape[-1]:
        return out
    return jnp.concatenate([out, x[..., rotary_dim:]], axis=-1)


@jax.custom_jvp
def _rounded(product: jax.Array, factor: jax.Array) -> jax.Array:
    """``product`` (``… * factor``), rounded to float32 on its own: never contracted into an FMA with its sum.

    Between the multiply and the add that reads it sits an integer OR, with
    the quiet-NaN bit where ``factor`` is NaN (where the product is a quiet NaN
    already): a no-op on every value, which no compiler can prove, so XLA
    (and LLVM beneath it) cannot fuse the pair into one FMA. The identity's
    derivative is its own (a bitcast has none: jax would give 0).
    """
    nan = (factor != factor).astype(jnp.uint32) << 22
    return jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(product, jnp.uint32) | nan, jnp.float32)


@_rounded.defjvp
def _rounded_jvp(primals: Any, tangents: Any) -> tuple[Any, Any]:
    (product, factor), (d_product, _) = primals, tangents
    return _rounded(product, factor), d_product


def float_array(value: Any, name: str, min_ndim: int = 0) -> jax.Array:
    """value as a float JAX array (traced or not), or a PosEncError naming it."""
    given = as_input(value, name)
    if isinstance(given, np.ndarray):
        if given.dtype.kind not in "iuf" and given.dtype.name != "bfloat16":
            raise PosEncError(f"{name} must be an array of floats, got {show_value(value)}")
        arr = jnp.asarray(given)
    else:
        arr = given
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        raise PosEncError(f"{name} must be a float array, got dtype {arr.dtype}")
    if arr.ndim < min_ndim:
        raise PosEncError(f"{name} must have at least {min_ndim} dimensions, got shape {tuple(arr.shape)}")
    return arr


def _check_x(x: Any) -> jax.Array:
    arr = float_array(x, "x")
    if arr.ndim < 2:
        raise PosEncError(f"x must be [..., s, h_d] (at least 2 dimensions), got shape {tuple(arr.shape)}")
    return arr


def apply_rope(
    x: Any,
    positions: Any,
    *,
    base: float = default(10000.0),
    scaling: Any = None,
    layout: RopeLayout = default("half"),
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    sections: Any = None,
    section_layout: SectionLayout = default("contiguous"),
    ladder: LadderSharing = default("shared"),
    spec: RopeConfig | None = None,
) -> jax.Array:
    """Rotate queries or keys by their positions, exact rows built in the graph (:func:`posenc.apply_rope`).

    Args:
        x: float ``[..., s, h_d]`` (e.g. ``[b, n_h, s, h_d]``), any float dtype.
        positions: int32/float32, broadcasting to ``x.shape[:-1]`` (``[s]``;
            ``[b, 1, s]`` for ``[b, n_h, s, h_d]``; ``[b, s, 1]`` for MaxText's
            ``[b, s, n_h, h_d]``), with a trailing ``n_axes`` with sections.
        base, scaling, layout, rotary_dim, seq_len, sections, section_layout, ladder: as
            :func:`posenc.apply_rope` (static), ``layout="head_half"`` included.
        spec: a :class:`~posenc.RopeConfig` in their place, as :func:`posenc.apply_rope`:
            the same spec, built and checked by the same code.

    Returns:
        x rotated, same shape and dtype: for float32 x, the bits of
        :func:`posenc.apply_rope` (the rows and the rotation, eagerly and
        under ``jit``: see :func:`rotate`); other dtypes get the float32
        result rounded once.

    Raises:
        PosEncError: for an x that is no float array ``[..., s, h_d]``,
            positions that do not broadcast to it, static arguments the NumPy
            function refuses, a positions array of another framework (a torch
            tensor), a float64 JAX array (``jax_enable_x64`` on), concrete
            positions (NumPy, Python, a JAX array outside a trace) outside
            int32, NaN, infinite, at or past 2**31 or not float32 values, or
            an output larger than the device's memory, before any work.
            Under ``jax.jit`` JAX itself converts a NumPy int64 argument to
            int32 by keeping its low 32 bits (2**31 + 5 arrives as
            −2**31 + 5), and a float64 one to float32, silently, before posenc
            sees it: pass :func:`posenc.jax.positions` of it instead, which
            checks it.

    >>> q = jnp.array([[1.0, 0.0, 0.0, 0.0]])        # [s=1, h_d=4]
    >>> np.asarray(apply_rope(q, jnp.array([2]), base=100.0, layout="interleaved"), np.float64).round(4).tolist()
    [[-0.4161, 0.9093, 0.0, 0.0]]
    """
    arr = _check_x(x)
    given = {"base": base, "scaling": scaling, "layout": layout, "rotary_dim": rotary_dim, "sections": sections,
             "section_layout": section_layout, "ladder": ladder}
    cfg = spec_of(spec, arr.shape[-1], **given)
    freqs = traced_frequencies(cfg, seq_len)
    pos = check_traced_positions(positions)
    check_broadcast(pos, freqs.sections, arr.shape)
    # the output, the rows (once per position) and the rotation's float32 products
    rows = 2 * 4 * int(np.prod(pos.shape if freqs.sections is None else pos.shape[:-1], dtype=object)) \
        * (freqs.rotary_dim // 2)
    check_output(arr.shape, "apply_rope output", dtype=arr.dtype, work=rows + 4 * arr.size)
    # the rows once per position, not once per head (XLA would fuse the builder into the rotation)
    cos, sin = computed_once(lambda p: cos_sin_rows(p, freqs), pos)
    return rotate(arr, cos, sin, cfg.layout, freqs.rotary_dim)
