"""Exact rows inside the traced program: the 32-bit path of :mod:`posenc.exact.fixed` on ``jax.numpy``.

Everything here runs on int32/uint32 values (no float64, no dot), so the rows
are the NumPy core's float32 rows bit for bit, with ``jax_enable_x64`` off or
on, on CPU, GPU or TPU, inside ``jit``, ``vmap``, ``grad`` and ``shard_map``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, cast

import jax.numpy as jnp
import numpy as np

import jax

from ..exact.fixed import FLOAT_LIMIT, INT_LIMIT, FixedLadder, fixed_ladder, scale_words
from ..exact.fixed_phase import phase_of_floats, phase_of_integers
from ..exact.fixed_sincos import Ops, sincos_f32
from ..exact.ladder import Ladder
from ..timesteps.conventions import round_to
from .inputs import is_traced

__all__ = ["JAX_OPS", "computed_once", "host_rows", "rounds_to_odd", "sincos_rows"]

JAX_OPS = Ops(
    jnp,
    jax.lax.clz,
    lambda b: jax.lax.bitcast_convert_type(b, jnp.float32),
    lambda t: jax.lax.bitcast_convert_type(t.astype(jnp.float32), jnp.uint32),
)

#: The output formats whose rows are built as float32 rounded to odd, then cast: each value rounded once.
NARROW = ("bfloat16", "float16")


def rounds_to_odd(dtype: Any) -> bool:
    """Whether rows meant for ``dtype`` are built rounded to odd (``odd=True`` below): float16 and bfloat16.

    Their cast from a float32 rounded to odd rounds the exact value once
    (:func:`posenc.exact.fixed_sincos.round_f32`, as posenc.torch's rows);
    from the nearest float32 it rounded twice, one unit off where that
    float32 lands on the format's midpoint (~2**-16 of bfloat16 values,
    ~2**-13 of float16's).

    >>> rounds_to_odd(jnp.bfloat16), rounds_to_odd(jnp.float32)
    (True, False)
    """
    return jnp.dtype(dtype).name in NARROW


def host_rows(build: Callable[[Any], np.ndarray], dtype: Any) -> jax.Array:
    """Static rows built on the host by the NumPy API, ``build(np_dtype)``, as a JAX array of ``dtype``.

    For float16 and bfloat16 the float64 rows are rounded once into the
    format (:func:`posenc.timesteps.conventions.round_to`, exact in
    float32, so the cast after it moves no bit): the float32 rows cast
    would round twice (NumPy has no bfloat16, and JAX with x64 off reads a
    float64 array as float32 first). Other dtypes: the float32 rows, cast.

    >>> host_rows(lambda dt: np.array([1 + 2**-8 + 2**-30], dt), jnp.bfloat16).tolist()
    [1.0078125]
    """
    name = jnp.dtype(dtype).name
    if name not in NARROW:
        return jnp.asarray(build(np.float32)).astype(dtype)
    once = round_to(np.asarray(build(np.float64), np.float64), name, what="a row").astype(np.float32)
    return jnp.asarray(once).astype(dtype)


def sincos_rows(
    positions: jax.Array, ladder: Ladder, factor: float = 1.0, *, origin: int = 0, pair_axes: Any = None,
    odd: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """sin and cos of (p + origin)·ω_i times ``factor``, float32 ``[..., n]`` each, exact.

    Args:
        positions: int32 or float32 ``[...]`` (checked by
            :func:`posenc.jax.inputs.check_traced_positions`), or a traced
            int64 (``jax_enable_x64`` on: NaN rows where it leaves int32);
            with ``pair_axes``, ``[..., n_axes]``.
        ladder: the frequencies (static).
        factor: a static multiplier (RoPE's attention factor), rounded in once.
        origin: a static integer added to every position, exactly.
        pair_axes: int ``[n]``, the position axis of each pair (multi-axis RoPE), or None.
        odd: float32 rounded to odd, for rows cast to float16 or bfloat16
            (:func:`rounds_to_odd`); only that cast may read them.

    The pair is built once (:func:`computed_once`) and read from memory: the
    sines and cosines share their phase, fold and Horner argument, which two
    outputs read separately would each redo, in the program and at run time.
    """
    fixed = fixed_ladder(ladder)  # the frequency range checked here, outside any trace
    axes = None if pair_axes is None else tuple(int(a) for a in np.asarray(pair_axes).tolist())
    if not is_traced(positions):
        return _eager_rows(positions, fixed, float(factor), int(origin), axes, bool(odd))
    # differentiable in a real position: the bit path has no derivative
    rows = _real_rows if np.dtype(positions.dtype).kind == "f" else _rows
    return computed_once(lambda p: rows(p, ladder, float(factor), int(origin), axes, bool(odd)), positions)


#: Eager calls pad their positions to the next of these sizes: a power of two from 64 up to 2**16, then a
#: multiple of 2**16 (the padding is at most half the work below 2**16, at most 2**16 positions above).
_SMALLEST, _STEP = 64, 1 << 16


def _padded(n: int) -> int:
    """The size an eager call of n positions is compiled for (:data:`_SMALLEST`, :data:`_STEP`).

    >>> [_padded(n) for n in (0, 5, 64, 65, 40_000, 70_000)]
    [64, 64, 64, 128, 65536, 131072]
    """
    if n <= _SMALLEST:
        return _SMALLEST
    if n <= _STEP:
        return 1 << (n - 1).bit_length()
    return -(-n // _STEP) * _STEP


def _eager_rows(
    positions: Any, fixed: FixedLadder, factor: float, origin: int, axes: tuple[int, ...] | None, odd: bool
) -> tuple[jax.Array, jax.Array]:
    """:func:`sincos_rows` of concrete positions: one compiled program per padded size, not per shape and ladder.

    Eagerly there is no consumer to fuse the builder into, so it runs as its own compiled program, and a new
    program costs ~0.5 s to compile. The positions are flattened and padded with zeros to a size of
    :func:`_padded`, and the ladder's words are the program's arguments, not constants folded into it: a
    new length, base, scaling or layout of the same number of frequencies runs the program already compiled.
    The integer arithmetic is the same whether a word is a constant or an argument, and so are the bits.
    (Through :func:`computed_once`'s conditional every eager call compiled a new program: its branch is a new
    function each time.)
    """
    p = jnp.asarray(positions)
    lead = p.shape if axes is None else p.shape[:-1]
    n = math.prod(lead)
    flat = p.reshape((n,) if axes is None else (n, p.shape[-1]))
    flat = jnp.pad(flat, [(0, _padded(n) - n)] + [(0, 0)] * (flat.ndim - 1))  # position 0: a row like any other
    words = (fixed.frac_words, fixed.unwrap_words, fixed.int_words)
    sin, cos = _rows_of_words(flat, words, factor, origin, axes, odd)
    shape = (*lead, len(fixed))
    return sin[:n].reshape(shape), cos[:n].reshape(shape)


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _rows_of_words(
    positions: jax.Array, words: tuple[jax.Array, jax.Array, jax.Array], factor: float, origin: int,
    axes: tuple[int, ...] | None, odd: bool,
) -> tuple[jax.Array, jax.Array]:
    # the words as traced arguments in FixedLadder's fields (typed for the host's arrays): the phase code reads
    # only those three, through the array namespace
    fixed = FixedLadder(*cast(tuple[np.ndarray, np.ndarray, np.ndarray], words), turns=())
    return _build(positions, fixed, factor, origin, axes, odd)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4, 5))
def _real_rows(
    positions: jax.Array, ladder: Ladder, factor: float, origin: int, axes: tuple[int, ...] | None, odd: bool
) -> tuple[jax.Array, jax.Array]:
    return _rows(positions, ladder, factor, origin, axes, odd)


@_real_rows.defjvp
def _real_rows_jvp(
    ladder: Ladder, factor: float, origin: int, axes: tuple[int, ...] | None, odd: bool, primals: Any,
    tangents: Any,
) -> tuple[Any, Any]:
    # d/dp factor·(sin, cos)(ω p) = ω·(cos, −sin) rows: the exact rows times ω rounded to float32 (the
    # integer bit path itself has no derivative; jax would give 0 silently)
    (p,), (dp,) = primals, tangents
    sin, cos = _rows(p, ladder, factor, origin, axes, odd)
    w = jnp.asarray(np.asarray(ladder.w0, dtype=np.float32))
    dp = dp[..., None] if axes is None else jnp.take(dp, jnp.asarray(np.asarray(axes, dtype=np.int32)), axis=-1)
    return (sin, cos), (cos * (w * dp), -sin * (w * dp))


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5))
def _rows(
    positions: jax.Array, ladder: Ladder, factor: float, origin: int, axes: tuple[int, ...] | None, odd: bool
) -> tuple[jax.Array, jax.Array]:
    # one program per (ladder, factor, origin, axes, shape), inlined into the caller's trace
    return _build(positions, fixed_ladder(ladder), factor, origin, axes, odd)


def _build(
    positions: jax.Array, fixed: FixedLadder, factor: float, origin: int, axes: tuple[int, ...] | None, odd: bool
) -> tuple[jax.Array, jax.Array]:
    """The rows of ``positions`` ``[...]`` (``[..., n_axes]`` with ``axes``) from the ladder's words, traced."""
    if axes is None:
        p = positions[..., None]
    else:
        p = jnp.take(positions, jnp.asarray(np.asarray(axes, dtype=np.int32)), axis=-1)
    bad = None
    if np.dtype(p.dtype).kind == "i" and np.dtype(p.dtype).itemsize > 4:  # a traced int64 (x64 on): unchecked
        bad = (p < -INT_LIMIT) | (p >= INT_LIMIT)
        p = p.astype(jnp.int32)
    elif p.dtype != jnp.int32:
        bad = ~(jnp.abs(p) < FLOAT_LIMIT)  # NaN too
    if p.dtype == jnp.int32:
        phase = phase_of_integers(JAX_OPS, p, fixed, origin)
    else:
        phase = phase_of_floats(JAX_OPS, p, fixed, origin)
    sin, cos = sincos_f32(JAX_OPS, phase, None if factor == 1.0 else scale_words(factor), odd)
    if bad is not None:
        sin = jnp.where(bad, jnp.nan, sin)
        cos = jnp.where(bad, jnp.nan, cos)
    return sin, cos


def computed_once(build: Any, positions: jax.Array) -> Any:
    """``build(positions)`` (two float32 arrays), computed once and kept, for a program that reads them often.

    XLA fuses an elementwise producer into each of its consumers: the row
    builder (a few hundred integer operations per value) would be recomputed
    for every head of q and k. ``optimization_barrier`` does not stop that on
    the CPU (it is expanded before fusion); the branch of a conditional on a
    runtime predicate is a separate computation, so the rows are built once
    there and read from memory. The predicate, ``(bits | 1) != 0`` of the
    first position's bits, holds for every value: only the builder's branch
    ever runs, and the other is the cheapest one of the right type (zeros).
    Both branches the builder (as before) put it in the program twice: twice
    its equations in the jaxpr, and more for XLA to compile.
    """
    if positions.size == 0:
        return build(positions)

    def packed(p: jax.Array) -> jax.Array:
        # one complex64 output: inside one fusion the pair's shared work (phase, fold, t, the Horner sums)
        # is done once per value; two float32 outputs are two loop fusions that each redo all of it (XLA's
        # CPU backend has no multi-output loop fusion). Packing and unpacking move bits, never round.
        a, b = build(p)
        return jax.lax.complex(a, b)

    def never(p: jax.Array) -> jax.Array:
        # zeros made from p (0.0 times a float of its bits, which XLA does not fold): the branch keeps its
        # operand, so the layers' identical conditionals still merge into one (a branch without one loses
        # it after they are compared), and under shard_map its output varies as p does
        zero = _word(p).astype(jnp.float32) * np.float32(0.0)
        return jnp.broadcast_to(jax.lax.complex(zero, zero), jax.eval_shape(packed, p).shape)

    pred = (_word(positions) | 1) != 0  # true for every value, and XLA does not fold it: the conditional stays
    both = jax.lax.cond(pred, packed, never, positions)
    return jnp.real(both), jnp.imag(both)


def _word(positions: jax.Array) -> jax.Array:
    """The first position's bits as a uint32 scalar (a bitcast: converting a NaN or inf is undefined)."""
    first = positions.reshape(-1)[0]
    width = jnp.dtype(first.dtype).itemsize * 8
    word = jax.lax.bitcast_convert_type(first, jnp.dtype(f"uint{width}")) if width > 8 else first.view(jnp.uint8)
    return word.astype(jnp.uint32)
