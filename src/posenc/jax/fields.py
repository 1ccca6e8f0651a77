"""Neural-field encodings in JAX: nerf_encoding and fourier_features of traced inputs, exact in the graph."""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, check_int
from ..exact.fixed import INT_LIMIT, fixed_ladder
from ..exact.fixed_dot import MAX_TERMS, phase_of_dot
from ..exact.fixed_sincos import sincos_f32
from ..fields import functions
from ..fields.conventions import FieldConvention, FieldPlan
from ..fields.encoding import fourier_features as numpy_fourier_features
from ..fields.encoding import nerf_encoding as numpy_nerf_encoding
from ..fields.numpy_backend import arrange
from ..support.memory import shape_of
from ..support.signatures import parameters_of
from ._rows import JAX_OPS, rounds_to_odd, sincos_rows
from .inputs import check_output, check_traced_positions
from .rope import _out_dtype

__all__ = ["JAX_FIELDS", "JaxFields", "fourier_features", "nerf_encoding"]


class JaxFields:
    """The :class:`~posenc.fields.backend.FieldBackend` primitives over JAX arrays, traced or not.

    Coordinates are read by :mod:`posenc.jax.inputs`' rule (float32 and
    narrower floats, int32; |x| < 2**31 for the bands, any finite value for a
    phase in turns); the plan is cached per (preset, n_freqs) and held to the
    32-bit exact range; the rows are built in the graph from 32-bit integers
    (:mod:`posenc.jax._rows`, :mod:`posenc.exact.fixed_dot`).
    """

    name = "jax"

    def field_dtype(self, dtype: Any) -> Any:
        return _out_dtype(dtype)

    def field_plan(self, preset: FieldConvention, n_freqs: Any) -> FieldPlan:
        return _plan(preset, n_freqs)

    def check_nerf(self, x: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> None:
        shape = shape_of(x)
        if shape is not None:  # a ragged x: the points' check names it
            lead, d = (shape[:-1], shape[-1]) if shape else ((), 1)
            check_output((*lead, 2 * len(plan.ladder) * d + (d if include_input else 0)), "NeRF encoding",
                         dtype=dtype)

    def nerf_points(self, x: Any) -> jax.Array:
        pts = check_traced_positions(x, "x")
        return pts.reshape(1) if pts.ndim == 0 else pts

    def nerf_rows(self, points: jax.Array, plan: FieldPlan, include_input: bool, dtype: Any) -> jax.Array:
        lead, d, n = points.shape[:-1], points.shape[-1], len(plan.ladder)
        m = int(np.prod(lead))
        if n:
            s, c = sincos_rows(points, plan.ladder, odd=rounds_to_odd(dtype))  # [..., d, n]
            enc = arrange(plan, s.reshape(m, d, n), c.reshape(m, d, n), jnp.stack, jnp.concatenate, jnp.transpose)
        else:
            enc = jnp.zeros((m, 0), jnp.float32)
        if include_input:
            raw = points.reshape(m, d).astype(jnp.float32)
            enc = jnp.concatenate([raw, enc] if plan.input_at == "first" else [enc, raw], axis=-1)
        return enc.reshape((*lead, enc.shape[-1])).astype(dtype)

    def check_fourier(self, x: Any, b: Any, dtype: Any) -> None:
        xs, bs = shape_of(x), shape_of(b)
        if xs is not None and bs is not None and len(bs) == 2:  # else the matrix's check names B
            lead, d = (xs[:-1], xs[-1]) if xs else ((), 1)
            m = bs[0]
            # each feature's sum of d exact products: XLA keeps ~70 bytes per feature, and materializes every
            # product's words (~66 bytes each) past d = 32 (measured on the CPU: tests/jax/test_jax_inputs.py)
            features = int(np.prod(lead, dtype=object)) * m
            check_output((*lead, 2 * m), "Fourier features", dtype=dtype,
                         work=features * (80 + (66 * d if d > 32 else 0)))

    def fourier_points(self, x: Any) -> jax.Array:
        pts = check_traced_positions(x, "x", limit=None)
        return pts.reshape(1) if pts.ndim == 0 else pts

    def fourier_matrix(self, b: Any, points: jax.Array) -> jax.Array:
        d = points.shape[-1]
        if d < 1:
            raise PosEncError(f"x must hold at least one coordinate on its last axis, got d = {d}")
        mat = check_traced_positions(b, "B", limit=None)
        if mat.ndim != 2 or mat.shape[1] != d or mat.shape[0] < 1:
            raise PosEncError(f"B must be a matrix [m, d] with m >= 1 and d = {d} (x's last axis), "
                              f"got shape {tuple(mat.shape)}")
        if d > MAX_TERMS:
            raise PosEncError(f"x's last axis d = {d} is past {MAX_TERMS}, the longest sum B·v the exact path holds")
        return mat

    def fourier_rows(self, points: jax.Array, matrix: jax.Array, dtype: Any) -> jax.Array:
        pairs = _features(points, matrix, rounds_to_odd(dtype))  # [..., 2, m]: cos, sin
        return pairs.reshape(*pairs.shape[:-2], 2 * pairs.shape[-1]).astype(dtype)  # no -1: x may be empty


#: the JAX primitives (no state but the plans' cache: one is enough)
JAX_FIELDS = JaxFields()


@parameters_of(numpy_nerf_encoding, dtype=jnp.float32)
def nerf_encoding(*args: Any, **kwargs: Any) -> jax.Array:
    """The frequency encoding of (traced) coordinates ``x [..., d]``: :func:`posenc.nerf_encoding` in the graph.

    Args:
        x: float32 (or bfloat16, float16, int32) coordinates ``[..., d]``, traced
            or not; a scalar is one point of one coordinate. A traced
            coordinate at or beyond 2**31 in magnitude (or NaN, inf) gives NaN
            channels; a concrete one is refused.
        n_freqs: bands L (static); the fastest band must stay below 2**31·2π
            (the 32-bit exact range: L <= 31 for ``"nerf"``).
        convention, include_input: as :func:`posenc.nerf_encoding` (static).
        dtype: float32, bfloat16 or float16.

    Returns:
        ``[..., 2·L·d (+ d)]``. float32 values are the correctly rounded
        sin/cos of ω_k·x (ω_k the preset's exact band) except where the exact
        value lies within 2**-56 (relative) of a rounding boundary: within 1
        float32 ulp always, and the NumPy core's float32 bits on the tests'
        battery. Differentiable in x: the derivative is ω_k·cos and −ω_k·sin
        of the exact rows (ω_k rounded to float32).

    Raises:
        PosEncError: for an ``n_freqs`` that is not an integer or whose
            fastest band leaves the exact range, an unknown convention, a bad
            ``include_input`` or dtype, x of another framework, a float64 JAX
            x (``jax_enable_x64`` on), a concrete x outside int32, NaN,
            infinite, at or past 2**31 or not float32 values, or an output
            larger than the device's memory, before any work.
            Under ``jax.jit`` JAX itself converts a NumPy int64 argument to
            int32 by keeping its low 32 bits (2**31 + 5 arrives as
            −2**31 + 5), and a float64 one to float32, silently, before posenc
            sees it: pass :func:`posenc.jax.positions` of it instead, which
            checks it.

    >>> np.asarray(nerf_encoding(jnp.array([0.5]), 1), np.float64).round(4).tolist()
    [0.5, 0.4794, 0.8776]
    >>> jax.jit(lambda x: nerf_encoding(x, 4, convention="nerfstudio"))(jnp.ones((2, 3))).shape
    (2, 24)
    """
    return functions.nerf_encoding(JAX_FIELDS, *args, **kwargs)


def _plan(preset: FieldConvention, n_freqs: Any) -> FieldPlan:
    # n_freqs's type checked before the cache is asked: its keys hold 4 == 4.0 == Fraction(4) == Decimal(4) alike
    # (and cannot hold [4]), so a refusal must not depend on which call came first
    check_int(n_freqs, "n_freqs")
    try:
        hash(preset)
    except TypeError:
        return _planned(preset, n_freqs)
    return _cached_plan(preset, n_freqs)


def _planned(preset: FieldConvention, n_freqs: Any) -> FieldPlan:
    plan = preset.plan(n_freqs)
    try:
        fixed_ladder(plan.ladder)
    except PosEncError as exc:
        raise PosEncError(f"n_freqs = {n_freqs} with {preset!r}: {exc}") from None
    return plan


_cached_plan = functools.lru_cache(maxsize=64, typed=True)(_planned)  # one ladder per preset and band count


@parameters_of(numpy_fourier_features, dtype=jnp.float32)
def fourier_features(*args: Any, **kwargs: Any) -> jax.Array:
    """Tancik et al.'s random Fourier features ``[cos(2π B v) | sin(2π B v)]`` of (traced) ``x``: exact in the graph.

    :func:`posenc.fourier_features` inside ``jit`` with ``jax_enable_x64``
    off (Tancik et al. 2020, arXiv:2006.10739, §4). B·v is not a float32 dot
    product: each B_ij·v_j is formed exactly from the operands' integer
    significands and the sum is taken mod 1 in 128-bit fixed point
    (:mod:`posenc.exact.fixed_dot`), then sin/cos of 2π times it by the
    32-bit kernel (:mod:`posenc.exact.fixed`). Only 32-bit integer
    operations: no float64, no dot, no host callback.

    Args:
        x: coordinates v ``[..., d]``, float32 (or bfloat16, float16, int32),
            traced or not; a scalar is one point of one coordinate. Any finite
            value is in range; a traced NaN or infinity gives NaN channels
            (for the features it meets), a concrete one is refused.
        b: B ``[m, d]`` (m >= 1), float32 (or bfloat16, float16, int32),
            traced or not; a NumPy or Python B must hold float32 values
            exactly (cast a float64 Gaussian draw with ``.astype(np.float32)``:
            JAX without x64 has no float64 to keep). A traced non-finite B_ij
            gives NaN channels for feature i.
        dtype: float32, bfloat16 or float16.

    Returns:
        ``[..., 2m]``: the m cosines, then the m sines. float32 values of
        magnitude 2**-60 and above are the correctly rounded cos/sin of
        2π·(B·v), B·v the exact sum of the float32 (or int32) operands, except
        where the exact value lies within 2**-56 (relative) of a rounding
        boundary (within 1 float32 ulp always); on the tests' battery they are
        the NumPy function's float32 bits. Each product's bits below 2**-128
        are cut (the phase is within d·2**-128), so a smaller value (a sine
        near a multiple of π) is within 2π·d·2**-128 absolute; where B·v is a
        multiple of 1/4 its 0 is exact (+0).
        Differentiable in x and B: the cosines' tangent −2π·sin·(B·dv + dB·v)
        and the sines' +2π·cos·(B·dv + dB·v) are computed in float32 from the
        exact values; they are not claimed exact.

    Raises:
        PosEncError: for a B not of shape ``[m, d]`` with d x's last axis, a
            bool, complex or float64 operand (traced or not), an operand of
            another framework, a concrete value that is not finite or not
            float32-exact (or an integer outside int32), d past 65535, a bad
            dtype, or an output (with the exact sums' working words) larger
            than the device's memory, before any work.
            Under ``jax.jit`` JAX itself converts a NumPy float64 argument to
            float32 (and an int64 to its low 32 bits), silently, before posenc
            sees it: pass :func:`posenc.jax.positions`-checked values, or
            float32 ones.

    >>> np.asarray(fourier_features(jnp.float32([[1 / 8, 1 / 4]]), jnp.float32([[1, 0], [2, 1]]))).tolist()
    [[0.7071067690849304, -1.0, 0.7071067690849304, 0.0]]
    >>> jax.jit(fourier_features)(jnp.ones((5, 3)), jnp.ones((16, 3))).shape
    (5, 32)
    """
    return functions.fourier_features(JAX_FIELDS, *args, **kwargs)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _features(v: jax.Array, b: jax.Array, odd: bool) -> jax.Array:
    return _exact_features(v, b, odd)


@_features.defjvp
def _features_jvp(odd: bool, primals: Any, tangents: Any) -> tuple[Any, Any]:
    # d/dv (cos, sin)(2π B v) = 2π·(−sin, cos)·(B dv + dB v), in float32 (the integer bit path has no
    # derivative: jax would give 0 silently); an int32 operand's tangent is float0 (no derivative)
    (v, b), (dv, db) = primals, tangents
    pairs = _exact_features(v, b, odd)
    u = jnp.zeros(pairs.shape[:-2] + pairs.shape[-1:], jnp.float32)
    if dv.dtype != jax.dtypes.float0:
        u = u + (b.astype(jnp.float32) * dv[..., None, :]).sum(-1)
    if db.dtype != jax.dtypes.float0:
        u = u + (db * v.astype(jnp.float32)[..., None, :]).sum(-1)
    w = jnp.float32(2 * np.pi) * u
    turned = pairs[..., ::-1, :] * jnp.float32([[-1.0], [1.0]])  # (cos, sin) -> (−sin, cos): one expression
    return pairs, turned * w[..., None, :]


@functools.partial(jax.jit, static_argnums=(2,))
def _exact_features(v: jax.Array, b: jax.Array, odd: bool) -> jax.Array:
    # one compiled program per shape and dtype (called eagerly, the few hundred integer operations per value
    # would each be dispatched on their own)
    bad = None
    for name, arr in (("v", v), ("b", b)):  # a traced int64 (x64 on): NaN features where it leaves int32
        if arr.dtype == jnp.int64:
            out = jnp.any((arr < -INT_LIMIT) | (arr >= INT_LIMIT), axis=-1)
            out = out[..., None] if name == "v" else out
            bad = out if bad is None else bad | out
            v, b = (arr.astype(jnp.int32), b) if name == "v" else (v, arr.astype(jnp.int32))
    pairs = _dot_features(v, b, odd)
    return pairs if bad is None else jnp.where(bad[..., None, :], jnp.nan, pairs)


#: a quarter turn in the phase's top word, and none: sin(2π(φ + 1/4)) is cos(2πφ), bit for bit
#: (tests/exact/test_fixed_dot.py holds sincos_f32 to it)
_QUARTER = np.array([[1 << 30], [0]], dtype=np.uint32)


def _dot_features(v: jax.Array, b: jax.Array, odd: bool) -> jax.Array:
    """(cos, sin) of 2π·(B·v) as float32 ``[..., 2, m]``: one sine over the phase and the phase a quarter on.

    One expression for both halves, not a sine and a cosine concatenated:
    XLA (CPU) fused the concatenation (ours, or a caller's [x | features])
    with the shared integer arithmetic and ran 80 to 600 times slower
    (X[16384, 3], B[24, 3] traced in one jit: 15.8 s against 0.03 s).
    """
    if v.dtype == jnp.int32 and b.dtype == jnp.int32:  # B·v an integer: cos 1, sin 0 (XLA's simplifier would
        ones = jnp.ones((*v.shape[:-1], b.shape[0]), jnp.float32)  # loop on the kernel of a constant phase)
        return jnp.stack([ones, 0 * ones], axis=-2)
    phase, finite = phase_of_dot(JAX_OPS, v, b)
    words = (phase[0][..., None, :] + jnp.asarray(_QUARTER), *(w[..., None, :] for w in phase[1:]))
    shape = jnp.broadcast_shapes(*(w.shape for w in words))
    sin, _ = sincos_f32(JAX_OPS, tuple(jnp.broadcast_to(w, shape) for w in words), None, odd)  # type: ignore[arg-type]
    return jnp.where(finite[..., None, :], sin, jnp.nan)
