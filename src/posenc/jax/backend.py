"""The JAX backend: exact float32 rows built inside the graph (:mod:`posenc.jax._rows`), float32 rotation.

What :func:`posenc.jax.apply_rope` and :func:`posenc.jax.rope_cos_sin` run on
(:data:`JAX`). Its own rules: positions int32/float32, traced or not
(:func:`posenc.jax.inputs.check_traced_positions`); a length-following
scaling needs a static ``seq_len`` (max(positions) + 1 would be a traced
value); the rows are float32 (bfloat16/float16: the exact value rounded once); xPos's
rows from :mod:`posenc.jax._xpos`. Imported by :mod:`posenc.jax` only.
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, show_value
from ..rope.frequencies import RopeFrequencies, spec_frequencies
from ..rope.functions import check_broadcast
from ..rope.spec import RopeConfig
from ..rope.xpos import XPos
from ..sinusoidal.numpy_backend import NUMPY_ENCODING
from ..sinusoidal.plan import Plan
from ..support.vocabulary import RopeLayout
from ._rows import host_rows, rounds_to_odd, sincos_rows
from ._xpos import jax_xpos_cos_sin
from .inputs import as_input, check_output, check_traced_positions

__all__ = ["JAX", "JaxBackend", "float32_rows", "float_array", "rotated", "traced_frequencies"]

_OUT_DTYPES = ("float32", "bfloat16", "float16")


def traced_frequencies(spec: RopeConfig, seq_len: Any) -> RopeFrequencies:
    """A checked spec's frequencies, refusing a length-following scaling without a static ``seq_len``."""
    if spec.scaling is not None and spec.scaling.cache_key(None) is not None and seq_len is None:
        raise PosEncError(
            f"{type(spec.scaling).__name__} follows the sequence length: pass seq_len (a static int) to the JAX "
            "functions; max(positions) + 1 is a traced value"
        )
    return spec_frequencies(spec, seq_len)


def _lead(shape: tuple[int, ...], spec: RopeConfig) -> tuple[int, ...]:
    return shape if spec.multi_axis is None else shape[:-1]


class JaxBackend:
    """:class:`~posenc.rope.backend.Backend` and :class:`~posenc.sinusoidal.backend.EncodingBackend` over JAX
    arrays, traced or not (float32 rows and math)."""

    name = "jax"

    def sequence_dim(self, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value != -2:
            raise PosEncError(f"sequence_dim must be -2 (x is [..., s, h_d]) for {self.name}, got {value!r}")
        return -2

    def float_input(self, x: Any, name: str, sequence_dim: int) -> jax.Array:
        arr = float_array(x, name)
        if arr.ndim < 2:
            raise PosEncError(f"{name} must be [..., s, h_d] (at least 2 dimensions), got shape {tuple(arr.shape)}")
        return arr

    def table_dtype(self, dtype: Any) -> Any:
        try:
            name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        except (TypeError, ValueError):
            name = None
        if name not in _OUT_DTYPES:  # with or without jax_enable_x64: the rows are float32 values
            raise PosEncError(f"dtype must be one of {_OUT_DTYPES}: posenc.jax builds float32 rows in 32-bit "
                              f"arithmetic (float64 rows: the NumPy API), got {show_value(dtype)}")
        return jnp.dtype(name)

    def check_tables(self, shape: tuple[int, ...], spec: RopeConfig, dtype: Any) -> None:
        check_output((2, *_lead(shape, spec), int(spec.rotary_dim or spec.head_dim) // 2), "RoPE cos/sin rows")

    def check_output(self, x: jax.Array, shape: tuple[int, ...], spec: RopeConfig, xpos: XPos | None) -> None:
        # the output, the rows (once per position) and the rotation's float32 products; xPos's rows of concrete
        # positions come from the host, with float64 tables and factors behind them
        rows = 2 * 4 * int(np.prod(_lead(shape, spec), dtype=object)) * (int(spec.rotary_dim or spec.head_dim) // 2)
        check_output(x.shape, "apply_rope output", dtype=x.dtype, work=rows * (1 if xpos is None else 5) + 4 * x.size)

    def positions(self, value: Any) -> jax.Array:
        return check_traced_positions(value)

    def check_positions_shape(self, pos: jax.Array, x: jax.Array, spec: RopeConfig, sequence_dim: int) -> None:
        check_broadcast(pos, spec.multi_axis, x.shape)

    def frequencies(self, spec: RopeConfig, seq_len: int | None, pos: jax.Array) -> RopeFrequencies:
        return traced_frequencies(spec, seq_len)

    def cos_sin(self, pos: jax.Array, freqs: RopeFrequencies, dtype: Any) -> tuple[jax.Array, jax.Array]:
        # the rows once per position, not once per head (sincos_rows: computed_once)
        odd = rounds_to_odd(dtype)  # bfloat16, float16: each value rounded once
        cos, sin = float32_rows(pos, freqs, odd)
        return cos.astype(dtype), sin.astype(dtype)

    def rotation_dtype(self, x: jax.Array) -> Any:
        return jnp.float32

    def xpos_cos_sin(self, pos: jax.Array, freqs: RopeFrequencies, xpos: XPos, role: str, seq_len: int | None,
                     x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jax_xpos_cos_sin(pos, freqs, xpos, role, seq_len, x.dtype)

    def rotate(self, x: jax.Array, cos: jax.Array, sin: jax.Array, layout: RopeLayout, rotary_dim: int,
               sequence_dim: int) -> jax.Array:
        return rotated(x, cos, sin, layout, rotary_dim)

    # the sinusoid's primitives (posenc.sinusoidal.backend.EncodingBackend)

    def encoding_dtype(self, dtype: Any) -> Any:
        return self.table_dtype(dtype)

    def check_encoding(self, shape: tuple[int, ...], computed: int, d_model: int, origin: int, dtype: Any) -> None:
        check_output((*shape, max(computed, d_model)), "encoding", dtype=dtype)

    def encoding_positions(self, value: Any) -> jax.Array:
        return check_traced_positions(value)

    def encoding_rows(self, positions: jax.Array, plan: Plan, dtype: Any) -> jax.Array:
        sin, cos = sincos_rows(positions, plan.ladder, origin=plan.origin, odd=rounds_to_odd(dtype))
        n = len(plan.ladder)
        shape = positions.shape
        if plan.layout == "interleaved":
            out = jnp.stack([sin, cos], axis=-1).reshape((*shape, 2 * n))
        else:
            out = jnp.concatenate([sin, cos], axis=-1)
        if plan.d_model > 2 * n:
            out = jnp.concatenate([out, jnp.zeros((*shape, plan.d_model - 2 * n), out.dtype)], axis=-1)
        out = out[..., : plan.d_model]
        if plan.zero_at is not None:
            pad = (positions == plan.zero_at - plan.origin)[..., None]  # θ = zero_at: fairseq's padding row
            out = jnp.where(pad, 0.0, out)
        return out.astype(dtype)

    def table_rows(self, first: int, length: int, plan: Plan, dtype: Any) -> jax.Array:
        # static positions: the NumPy table as a constant (rounded once into bfloat16 / float16)
        return host_rows(lambda np_dt: NUMPY_ENCODING.table_rows(first, length, plan, np.dtype(np_dt)), dtype)


def float32_rows(pos: jax.Array, freqs: RopeFrequencies, odd: bool = False) -> tuple[jax.Array, jax.Array]:
    """float32 (cos, sin) ``[..., r/2]`` of checked positions (``[..., n_axes]`` with sections).

    ``odd``: rounded to odd, for a cast to bfloat16 or float16 (:func:`~posenc.jax._rows.rounds_to_odd`).
    """
    sin, cos = sincos_rows(pos, freqs.ladder, freqs.attention_factor, pair_axes=freqs.pair_axes, odd=odd)
    return cos, sin


@functools.partial(jax.jit, static_argnums=(3, 4))
def rotated(x: jax.Array, cos: jax.Array, sin: jax.Array, layout: RopeLayout, rotary_dim: int) -> jax.Array:
    """x's pairs rotated by float32 rows, as :func:`posenc.jax.rotate` describes (no checks: its callers').

    One compiled program, called eagerly too (one dispatch, not a dozen).
    """
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


#: the JAX backend (no state: one is enough)
JAX = JaxBackend()
