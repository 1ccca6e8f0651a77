"""RoPE in JAX: exact cos/sin rows built inside the graph, and the rotation.

The functional forms take the NumPy API's arguments (:func:`posenc.rope_cos_sin`,
:func:`posenc.apply_rope`); the frequencies are built on the host at trace
time (static), the positions are traced. Rows are the NumPy core's float32
rows bit for bit (:mod:`posenc.jax._rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, check_int
from ..rope import functions
from ..rope.apply import apply_rope as numpy_apply_rope
from ..rope.frequencies import RopeFrequencies
from ..rope.spec import FREQUENCY_SETTINGS, RopeConfig, RopeFrequencySettings, spec_in
from ..rope.tables import check_axes
from ..support.layout import check_rope_layout
from ..support.signatures import parameters_of
from ..support.vocabulary import RopeLayout
from . import backend  # an attribute read per call: posenc.jax.backend may import first
from .inputs import check_output, check_traced_positions

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["apply_rope", "cos_sin_rows", "float_array", "rope_cos_sin", "rope_frequencies", "rotate",
           "traced_frequencies"]


def rope_frequencies(
    head_dim: int | RopeConfig,
    *,
    seq_len: int | None = None,
    **settings: Unpack[RopeFrequencySettings],
) -> RopeFrequencies:
    """The static frequencies (:func:`posenc.rope_frequencies`, a spec too), with the length rule fixed for tracing.

    DynamicNTK and LongRoPE follow the sequence length; inside a traced
    program the NumPy default (max(positions) + 1) would be a traced value, so
    ``seq_len`` must be given. (Named ``posenc.jax.frequencies`` before:
    one name per concept, NumPy's, whose ``posenc.frequencies`` is the sinusoid's.)

    >>> f = rope_frequencies(8, base=100.0)
    >>> f.rotary_dim, f.attention_factor
    (8, 1.0)
    """
    return backend.traced_frequencies(spec_in(head_dim, settings, FREQUENCY_SETTINGS), seq_len)


def traced_frequencies(spec: RopeConfig, seq_len: Any) -> RopeFrequencies:
    """A checked spec's frequencies, refusing a length-following scaling without a static ``seq_len``."""
    return backend.traced_frequencies(spec, seq_len)


def float_array(value: Any, name: str, min_ndim: int = 0) -> jax.Array:
    """value as a float JAX array (traced or not), or a PosEncError naming it."""
    return backend.float_array(value, name, min_ndim)


def _out_dtype(dtype: Any) -> Any:
    """A JAX output dtype, checked: float32, bfloat16 or float16 (the other JAX modules' rule too)."""
    return backend.JAX.table_dtype(dtype)


def cos_sin_rows(positions: Any, freqs: RopeFrequencies) -> tuple[jax.Array, jax.Array]:
    """float32 (cos, sin) ``[..., r/2]`` of traced positions (``[..., n_axes]`` with sections)."""
    pos = check_traced_positions(positions)
    check_axes(pos, freqs.sections)
    lead = pos.shape if freqs.sections is None else pos.shape[:-1]
    check_output((2, *lead, freqs.rotary_dim // 2), "RoPE cos/sin rows")
    return backend.float32_rows(pos, freqs)


def rope_cos_sin(
    positions: Any,
    head_dim: int | RopeConfig,
    *,
    seq_len: int | None = None,
    dtype: Any = jnp.float32,
    **settings: Unpack[RopeFrequencySettings],
) -> tuple[jax.Array, jax.Array]:
    """Exact cos(ω_i p) and sin(ω_i p) times the attention factor, built in the graph.

    Args:
        positions: int32 or float32 ``[...]``, traced or not (``[..., n_axes]``
            with sections). Every int32 is exact; float32 positions are exact
            where |p·ω_i| >= 2**-60 (below, within 2**-90 absolute); traced,
            they give NaN at |p| >= 2**31 (or NaN, inf), concrete ones are
            refused. int64 (``jax_enable_x64`` on) within int32 too.
        head_dim: a :class:`~posenc.RopeConfig` (the spec) or channels per
            head with the settings as keywords, as :func:`posenc.rope_cos_sin` (static).
        seq_len: static; required for DynamicNTK and LongRoPE.
        dtype: float32 (the NumPy core's float32 bits), bfloat16 or float16
            (the exact value rounded once into them, not those bits rounded again).
        **settings: without a spec, its frequency fields, as
            :func:`posenc.rope_cos_sin` (static).

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
    return functions.rope_cos_sin(backend.JAX, positions, head_dim, seq_len=seq_len, dtype=dtype, **settings)


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
    return backend.rotated(x, cos, sin, layout, rotary_dim)


@parameters_of(numpy_apply_rope)
def apply_rope(*args: Any, **kwargs: Any) -> jax.Array:
    """Rotate queries or keys by their positions, exact rows built in the graph (:func:`posenc.apply_rope`).

    Args:
        x: float ``[..., s, h_d]`` (e.g. ``[b, n_h, s, h_d]``), any float dtype.
        positions: int32/float32, broadcasting to ``x.shape[:-1]`` (``[s]``;
            ``[b, 1, s]`` for ``[b, n_h, s, h_d]``; ``[b, s, 1]`` for MaxText's
            ``[b, s, n_h, h_d]``), with a trailing ``n_axes`` with sections.
        spec: a :class:`~posenc.RopeConfig` holding every setting, as
            :func:`posenc.apply_rope`: the same spec, checked by the same code
            (:func:`posenc.rope.functions.apply_rope`).
        seq_len: static; required for DynamicNTK and LongRoPE, and for xPos
            with ``center`` under ``jit`` (its centre c = seq_len//2; concrete
            positions default to max(positions) + 1, as NumPy).
        xpos: None, or a :class:`posenc.XPos` (static): pair i is also
            multiplied by ζ_i^(±(p − c)/scale_base), as :func:`posenc.apply_rope`.
            Concrete positions get NumPy's rows bit for bit; traced ones rows
            built in the graph from 32-bit integers (:mod:`posenc.jax._xpos`):
            the correctly rounded float32 of the exact product except where it
            lies within 2**-55 (relative) of a float32 rounding boundary, so
            always within 1 float32 ulp, and NumPy's bits on every value of
            the tests' battery.
        role: with xpos, ``"q"`` (factor ζ^(+…)) or ``"k"`` (ζ^(−…)).
        **settings: without a spec, its fields, as :func:`posenc.apply_rope`
            (static), ``layout="head_half"`` included.

    Returns:
        x rotated, same shape and dtype: for float32 x, the bits of
        :func:`posenc.apply_rope` (the rows and the rotation, eagerly and
        under ``jit``: see :func:`rotate`); other dtypes get the float32
        result rounded once. With xpos, traced positions whose factors leave
        the normal range of q or k (float32; float16 for float16 x) — those
        :func:`posenc.apply_rope` refuses — give NaN rows, never other values.

    Raises:
        PosEncError: for an x that is no float array ``[..., s, h_d]``,
            positions that do not broadcast to it, static arguments the NumPy
            function refuses, a positions array of another framework (a torch
            tensor), a float64 JAX array (``jax_enable_x64`` on), concrete
            positions (NumPy, Python, a JAX array outside a trace) outside
            int32, NaN, infinite, at or past 2**31 or not float32 values, or
            an output larger than the device's memory, before any work;
            with xpos: a bad role, xpos with sections, concrete positions
            whose factors leave the range (NumPy's message), or traced
            positions with ``center`` and no ``seq_len``.
            Under ``jax.jit`` JAX itself converts a NumPy int64 argument to
            int32 by keeping its low 32 bits (2**31 + 5 arrives as
            −2**31 + 5), and a float64 one to float32, silently, before posenc
            sees it: pass :func:`posenc.jax.positions` of it instead, which
            checks it.

    >>> import posenc
    >>> q = jnp.array([[1.0, 0.0, 0.0, 0.0]])        # [s=1, h_d=4]
    >>> cfg = posenc.RopeConfig(4, base=100.0, layout="interleaved")
    >>> np.asarray(apply_rope(q, jnp.array([2]), spec=cfg), np.float64).round(4).tolist()
    [[-0.4161, 0.9093, 0.0, 0.0]]

    xPos (c = seq_len//2 = 512; at p = 0 pair 0 grows by ζ_0**-1 = 3.5), the
    same bits traced as NumPy's:

    >>> xq = jax.jit(lambda x, p: apply_rope(x, p, spec=cfg, xpos=posenc.XPos(), role="q", seq_len=1025))
    >>> np.asarray(xq(q, jnp.array([0])), np.float64).round(4).tolist()
    [[3.5, 0.0, 0.0, 0.0]]
    >>> bool((np.asarray(xq(q, jnp.array([700]))) == posenc.apply_rope(
    ...     np.asarray(q), [700], spec=cfg, xpos=posenc.XPos(), role="q", seq_len=1025)).all())
    True
    """
    return functions.apply_rope(backend.JAX, *args, **kwargs)
