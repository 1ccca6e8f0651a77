"""The 32-bit exact path on torch tensors: :mod:`posenc.exact.fixed`'s algorithm, no float64 anywhere.

The algorithm is written once, over an array namespace
(:mod:`posenc.exact.fixed_sincos`, :mod:`~posenc.exact.fixed_phase`,
:mod:`~posenc.exact.fixed_dot`): NumPy's in the tests, ``jax.numpy`` in
:mod:`posenc.jax`, and the namespace below here. Nothing is re-derived: this
module only lends it torch's operations (:data:`TORCH_OPS`).

torch's ``uint32`` has no arithmetic (no add, shift or compare on CPU in
torch 2.13), so a uint32 value is held in an int64 tensor, in [0, 2**32)
(:class:`U32`): every operation that can leave that range (add, subtract,
shift left, invert, a multiply of two wide values) is masked back, and a
multiply whose operands could reach 2**64 is split into 16-bit halves first,
so no int64 ever overflows (a signed overflow is something a C++ or Triton
compiler may assume away). Each U32 carries a static bound on its bit length,
known from the operations that made it (``x & 0xFFFF`` has 16 bits,
``x >> 16`` 16 bits), so the limb products of the algorithm are single
multiplies. Signed values (exponents, counts) are plain int64 tensors.

The result: sin/cos in float32 bit for bit as :mod:`posenc.jax` and
:data:`~posenc.exact.fixed_sincos.NUMPY_OPS` give them (and so as the NumPy
float32 core, :mod:`posenc.exact.fixed`), with no float64 node in the graph,
eager, under ``make_fx`` and ``torch.compile(fullgraph=True)``, on any device
with int64 (MPS included).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..errors import PosEncError
from ..exact.fixed import FLOAT_LIMIT, INT_LIMIT, FixedLadder, fixed_ladder, scale_words
from ..exact.fixed_phase import phase_of_floats, phase_of_integers
from ..exact.fixed_sincos import Ops, sincos_f32
from ..exact.ladder import Ladder

__all__ = ["NARROW_FLOATS", "TORCH_OPS", "U32", "FixedWords", "fixed_sincos", "round_once", "rows_dtype_ok",
           "words_of"]

M32 = 0xFFFFFFFF


def _raw(x: Any) -> Any:
    return x.t if isinstance(x, U32) else x


def _bits_of(x: Any) -> int:
    if isinstance(x, U32):
        return x.bits
    if isinstance(x, (bool, int)):
        return int(x).bit_length()
    return 32


class U32:
    """A uint32 array held in an int64 tensor (or a Python int), with a static bound ``bits`` on its bit length."""

    __slots__ = ("bits", "t")

    def __init__(self, t: Any, bits: int = 32) -> None:
        self.t = t
        self.bits = min(bits, 32)

    @staticmethod
    def of(x: Any) -> U32:
        """x (a U32, an int, a bool or integer tensor) read as uint32: a negative x wraps, as a cast does."""
        if isinstance(x, U32):
            return x
        if isinstance(x, (bool, int)):
            v = int(x) & M32
            return U32(v, v.bit_length())
        if x.dtype == torch.bool:
            return U32(x.to(torch.int64), 1)
        return U32(x.to(torch.int64) & M32, 32)

    def _wrap(self, t: Any, bits: int) -> U32:
        if bits > 32:
            return U32(t & M32, 32)
        return U32(t, bits)

    def __add__(self, other: Any) -> U32:
        o = U32.of(other)
        return self._wrap(self.t + o.t, max(self.bits, o.bits) + 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> U32:
        o = U32.of(other)
        return U32((self.t - o.t) & M32, 32)

    def __rsub__(self, other: Any) -> U32:
        return U32.of(other) - self

    def __mul__(self, other: Any) -> U32:
        o = U32.of(other)
        if isinstance(o.t, int) and o.t == 0:
            return U32(0 * self.t, 0)
        if self.bits + o.bits <= 62:
            return self._wrap(self.t * o.t, self.bits + o.bits)
        # both wide: a·b mod 2**32 from b's 16-bit halves, every product below 2**48
        hi = (self.t * (o.t >> 16)) & 0xFFFF
        return U32(((hi << 16) + self.t * (o.t & 0xFFFF)) & M32, 32)

    __rmul__ = __mul__

    def __and__(self, other: Any) -> U32:
        o = U32.of(other)
        return U32(self.t & o.t, min(self.bits, o.bits))

    __rand__ = __and__

    def __or__(self, other: Any) -> U32:
        o = U32.of(other)
        return U32(self.t | o.t, max(self.bits, o.bits))

    __ror__ = __or__

    def __xor__(self, other: Any) -> U32:
        o = U32.of(other)
        return U32(self.t ^ o.t, max(self.bits, o.bits))

    __rxor__ = __xor__

    def __invert__(self) -> U32:
        return U32(self.t ^ M32, 32)

    def __lshift__(self, other: Any) -> U32:
        s = _raw(other)
        if isinstance(s, int):
            return self._wrap(self.t << s, self.bits + s)
        return U32((self.t << s) & M32, 32)

    def __rlshift__(self, other: Any) -> U32:
        return U32.of(other) << self

    def __rshift__(self, other: Any) -> U32:
        s = _raw(other)
        if isinstance(s, int):
            return U32(self.t >> s, max(0, self.bits - s))
        return U32(self.t >> s, self.bits)

    def __lt__(self, other: Any) -> Any:
        return self.t < _raw(U32.of(other))

    def __le__(self, other: Any) -> Any:
        return self.t <= _raw(U32.of(other))

    def __gt__(self, other: Any) -> Any:
        return self.t > _raw(U32.of(other))

    def __ge__(self, other: Any) -> Any:
        return self.t >= _raw(U32.of(other))

    def __eq__(self, other: Any) -> Any:
        return self.t == _raw(U32.of(other))

    def __ne__(self, other: Any) -> Any:
        return self.t != _raw(U32.of(other))

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> U32:
        return U32(self.t[key], self.bits)

    @property
    def shape(self) -> Any:
        return self.t.shape if isinstance(self.t, torch.Tensor) else ()

    def astype(self, dtype: Any) -> Any:
        """To ``xp.uint32`` (itself) or ``xp.int32`` (the signed value, an int64 tensor)."""
        if dtype is _Namespace.uint32:
            return self
        if self.bits < 32:
            return self.t
        return self.t - ((self.t >> 31) << 32)


class _Namespace:
    """The few ``numpy`` functions the shared algorithm calls, on :class:`U32` and int64 tensors."""

    uint32 = "uint32"
    int32 = "int32"

    @staticmethod
    def asarray(x: Any, dtype: Any = None) -> Any:
        if isinstance(x, (U32, int)):
            return U32.of(x)
        return U32(x, 32)  # a buffer row of words (int64, already in [0, 2**32))

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> Any:
        if isinstance(a, U32) or isinstance(b, U32):
            ua, ub = U32.of(a), U32.of(b)
            return U32(torch.where(cond, ua.t, ub.t), max(ua.bits, ub.bits))
        return torch.where(cond, a, b)

    @staticmethod
    def zeros_like(x: Any) -> Any:
        if isinstance(x, U32):
            return U32(torch.zeros_like(x.t) if isinstance(x.t, torch.Tensor) else 0, 0)
        return torch.zeros_like(x)

    @staticmethod
    def ones_like(x: Any) -> Any:
        if isinstance(x, U32):
            return U32(torch.ones_like(x.t) if isinstance(x.t, torch.Tensor) else 1, 1)
        return torch.ones_like(x)

    @staticmethod
    def clip(x: Any, lo: int, hi: int) -> Any:
        return torch.clamp(_raw(x), lo, hi)

    @staticmethod
    def minimum(x: Any, v: int) -> Any:
        return torch.clamp(_raw(x), max=v)

    @staticmethod
    def zeros(shape: Any, dtype: Any = None) -> Any:
        z = torch.zeros(shape, dtype=torch.int64)
        return U32(z, 0) if dtype is _Namespace.uint32 else z

    @staticmethod
    def sum(x: Any, axis: int = -1, dtype: Any = None) -> U32:
        return U32(x.t.sum(axis) & M32, 32)

    @staticmethod
    def all(x: Any, axis: int = -1) -> Any:
        return torch.all(x, dim=axis)

    @staticmethod
    def broadcast_shapes(*shapes: Any) -> Any:
        return torch.broadcast_shapes(*shapes)


def _clz(x: Any) -> U32:
    """Leading zeros of a uint32 (32 for 0), by halving: shifts and compares only."""
    v = U32.of(x).t
    n = torch.zeros_like(v)
    for width, limit in ((16, 0xFFFF), (8, 0xFFFFFF), (4, 0xFFFFFFF), (2, 0x3FFFFFFF), (1, 0x7FFFFFFF)):
        c = v <= limit
        n = n + torch.where(c, width, 0)
        v = torch.where(c, v << width, v)  # stays below 2**32: shifted only while small enough
    return U32(torch.where(v == 0, 32, n), 6)


def _to_f32(b: Any) -> torch.Tensor:
    t = U32.of(b).t
    return (t - ((t >> 31) << 32)).to(torch.int32).view(torch.float32)


def _f32_bits(t: Any) -> U32:
    return U32(t.to(torch.float32).view(torch.int32).to(torch.int64) & M32, 32)


class _TorchOps(Ops):
    def u32(self, a: Any) -> Any:
        return U32.of(a)


#: The backend :mod:`posenc.exact.fixed_sincos` runs on: torch, uint32 held in int64.
TORCH_OPS = _TorchOps(_Namespace, _clz, _to_f32, _f32_bits)


class FixedWords:
    """A :class:`~posenc.exact.fixed.FixedLadder`'s words as int64 tensors on a device (what the phase reads)."""

    def __init__(self, frac_words: torch.Tensor, unwrap_words: torch.Tensor, int_words: torch.Tensor) -> None:
        self.frac_words = frac_words
        self.unwrap_words = unwrap_words
        self.int_words = int_words


def words_of(ladder: Ladder) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The ladder's 32-bit words as int64 arrays (frac ``[4, n]``, unwrap ``[4, n]``, int ``[n]``), or None.

    None where a frequency is outside the 32-bit path's range
    (:func:`~posenc.exact.fixed.fixed_ladder` refuses it): that ladder keeps the float64 path.
    """
    try:
        fixed: FixedLadder = fixed_ladder(ladder)
    except PosEncError:  # a frequency outside the 32-bit range
        return None
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (  # type: ignore[return-value]
        fixed.frac_words, fixed.unwrap_words, fixed.int_words))


def rows_dtype_ok(dtype: torch.dtype) -> bool:
    """Whether positions of this dtype take the 32-bit path (integers, float32 and narrower floats)."""
    return dtype != torch.float64 and (dtype.is_floating_point or dtype in (
        torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8))


#: The formats whose rows are rounded once from a wider value through a float32 rounded to odd.
NARROW_FLOATS = (torch.float16, torch.bfloat16)


def round_once(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float64 ``x`` in ``dtype``, rounded once (nearest-even); differentiable as ``x.to(dtype)``.

    torch's cast of float64 to float16 or bfloat16 goes through float32 (on
    CPU, torch 2.13: ``float64(1 + 2**-8 + 2**-30)`` becomes bfloat16 1.0, the
    value rounded once is 1 + 2**-7), rounding twice. Here the float32 is
    rounded to odd instead (the nearest float32 moved one unit towards x
    where it is inexact and even), whose cast rounds x once
    (:func:`posenc.exact.fixed_sincos.round_f32`). Other dtypes: a plain cast.

    >>> x = torch.tensor([1 + 2**-8 + 2**-30], dtype=torch.float64)
    >>> x.to(torch.bfloat16).item(), round_once(x, torch.bfloat16).item()
    (1.0, 1.0078125)
    """
    if dtype not in NARROW_FLOATS or x.dtype != torch.float64:
        return x.to(dtype)
    v = x.detach()
    y = v.to(torch.float32)
    b = y.view(torch.int32)
    fix = (y.to(torch.float64) != v) & ((b & 1) == 0)
    step = torch.where(y.abs().to(torch.float64) > v.abs(), -1, 1).to(torch.int32)  # magnitude down or up
    r = torch.where(fix, b + step, b).view(torch.float32).to(dtype)
    return r + (x - v).to(dtype) if x.requires_grad else r


def fixed_sincos(p: torch.Tensor, words: FixedWords, factor: float = 1.0,
                 pair_axes: torch.Tensor | None = None, odd: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """sin and cos of ``p[..., None]·ω_i`` (times ``factor``), float32 ``[..., n]`` each, exact, integers only.

    Args:
        p: positions ``[...]``: an integer tensor (int64 outside int32 gives
            NaN rows), or float32, float16 or bfloat16 (held exactly in
            float32; |p| >= 2**31, NaN or inf give NaN rows).
        words: the ladder's words (:class:`FixedWords`) on p's device.
        factor: a static multiplier (RoPE's attention factor), rounded in once.
        pair_axes: int64 ``[n]``: ``p`` is ``[..., n_axes]`` and ω_i turns
            with the position of axis ``pair_axes[i]`` (multi-axis RoPE), or None.
        odd: float32 rounded to odd (for a cast to float16 or bfloat16 that
            then rounds the exact value once).

    Returns:
        (sin, cos), float32 ``[..., n]``: the correctly rounded values
        except within 2**-56 (relative) of a rounding boundary
        (:mod:`posenc.exact.fixed`); the NumPy float32 core's bits over the
        golden batteries.
    """
    q = p.unsqueeze(-1) if pair_axes is None else torch.index_select(p, -1, pair_axes)
    bad = None
    if p.dtype.is_floating_point:
        q = q.to(torch.float32)
        bad = ~(torch.abs(q) < FLOAT_LIMIT)  # NaN too
        q = torch.where(bad, torch.zeros_like(q), q)
        phase = phase_of_floats(TORCH_OPS, q, words)  # type: ignore[arg-type]
    else:
        q = q.to(torch.int64)
        if p.dtype == torch.int64:
            bad = (q < -INT_LIMIT) | (q >= INT_LIMIT)
        phase = phase_of_integers(TORCH_OPS, q, words)  # type: ignore[arg-type]
    s, c = sincos_f32(TORCH_OPS, phase, None if factor == 1.0 else scale_words(factor), odd)
    if bad is not None:
        nan = torch.full_like(s[..., :1], float("nan"))
        s, c = torch.where(bad, nan, s), torch.where(bad, nan, c)
    return s, c

