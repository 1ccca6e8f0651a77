"""posenc's exact angle as torch operations: :mod:`posenc.exact.core` run on float64 tensors, on any device.

Off the host (an accelerator, or a trace) and for float32, float16 or
bfloat16 results, the modules take the 32-bit path instead
(:mod:`posenc.torch._fixed`, :meth:`LadderBuffers.sincos32`: integers only,
no float64 node); the float64 twin below stays for float64 inputs or outputs.

Continuous inputs (a diffusion time, a field coordinate) cannot be looked up
in a table, so the torch modules that take them compute sin/cos of p·ω the
way :mod:`posenc.exact` does, on the input's device, with no host round trip.
The arithmetic is not rewritten: :func:`reduce_core`, :func:`refold` and
:func:`sincos_core` are :mod:`posenc.exact.core`'s own functions, rebound
(as the numba engine rebinds them) to torch's ``round`` and ``floor``; the
branch on a far reduction becomes a ``torch.where``, so there is no
data-dependent control flow and ``torch.compile(fullgraph=True)`` traces it.

The frequencies live on the module as int64 buffers holding the float64
bits (``persistent=False``: nothing in the ``state_dict``), so ``.to(device)``
moves them and ``.half()`` or ``.to(torch.bfloat16)`` cannot round them.

Bits: in eager mode every operation is one IEEE float64 add, multiply,
``round`` or ``floor``, as in NumPy, and the float64 results equal
:func:`posenc.exact.fill_sincos`'s bit for bit (tests/torch/test_torch_exact.py).
A compiler may contract a multiply and an add into a fused multiply-add
(Triton does on GPUs); the products of the Dekker splits stay exact under it,
the polynomial's last bits may move by ~1 float64 ulp, ~2**-29 of a float32
ulp, so the float32 values still agree except at a near-tie.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError, show_value
from ..exact import Ladder, core, fill_sincos
from ._fixed import NARROW_FLOATS, FixedWords, fixed_sincos, words_of
from ._fixed_op import register_ladder, sincos32

__all__ = ["LadderBuffers", "check_input", "exact_sincos", "exact_sincos32", "host_eager", "host_values",
           "reference_times_twin", "round_twin", "sincos", "tracing"]


class _TorchOps:
    """The NumPy functions :mod:`posenc.exact.core` calls, as torch's."""

    rint = staticmethod(torch.round)  # ties to even, as np.rint
    floor = staticmethod(torch.floor)
    where = staticmethod(torch.where)


def _horner(c: tuple[float, ...], z: Any) -> Any:
    """core.horner for a tuple of Python floats (a NumPy scalar times a tensor would leave torch)."""
    acc = c[-1] * z + c[-2]
    for j in range(len(c) - 3, -1, -1):
        acc = acc * z + c[j]
    return acc


_ENV = {
    "np": _TorchOps,
    "horner": _horner,
    "SIN_C": tuple(float(v) for v in core.SIN_C),
    "COS_C": tuple(float(v) for v in core.COS_C),
}


# The twins' globals are a module of their own (registered, so torch.compile's guards find it by name):
# exact.core's names with the two above replaced.
_TWIN = types.ModuleType(__name__ + "_core", "posenc.exact.core rebound to torch")
_TWIN.__dict__.update({k: v for k, v in vars(core).items() if not k.startswith("__")})
_TWIN.__dict__.update(_ENV, __builtins__=vars(core)["__builtins__"])
sys.modules[_TWIN.__name__] = _TWIN


def _twin(fn: Any) -> Any:
    clone = types.FunctionType(fn.__code__, _TWIN.__dict__, fn.__name__, fn.__defaults__)
    clone.__module__ = _TWIN.__name__
    setattr(_TWIN, fn.__name__, clone)
    return clone


reduce_core = _twin(core.reduce_core)
refold = _twin(core.refold)
sincos_core = _twin(core.sincos_core)
quadrant = _twin(core.quadrant)
turns_core = _twin(core.turns_core)
split = core.split


def sincos(p: torch.Tensor, words: tuple[torch.Tensor, ...],
           lo: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """sin and cos of ``(p + lo) · ω``, float64 ``[m, n]``, for float64 ``p [m, 1]`` and a ladder's 7 words ``[n]``.

    The same operations, in the same order, as :func:`posenc.exact.angles.fill_sincos`'s NumPy engine.
    """
    w0, w1, w2, w0h, w0l, w1h, w1l = words
    ph, pl = split(p)
    qh, ql = split(lo) if lo is not None else (None, None)
    k, x, y = reduce_core(p, ph, pl, lo, qh, ql, lo is not None, w0, w1, w2, w0h, w0l, w1h, w1l)
    far = torch.abs(x) > 0.8
    k2, x2, y2 = refold(x, y)
    x, y = torch.where(far, x2, x), torch.where(far, y2, y)
    k = k + torch.where(far, k2, torch.zeros_like(k2))
    return quadrant(k, *sincos_core(x, y))


_WORDS = ("w0", "w1", "w2", "w0h", "w0l", "w1h", "w1l")
#: the 32-bit path's words (:mod:`posenc.torch._fixed`), int64; w32: float32(ω) as its bits (for the derivative)
_FIXED = ("fixed_frac", "fixed_unwrap", "fixed_int", "w32")


def tracing() -> bool:
    """True while torch.compile, torch.export or ``make_fx`` traces: no host round trip, no sync then."""
    if torch.compiler.is_compiling():
        return True
    return _proxy_mode()() is not None


@functools.cache
def _proxy_mode() -> Any:
    """``get_proxy_mode``, imported once (an import statement per call cost a microsecond on every module call)."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    return get_proxy_mode


def host_eager(x: torch.Tensor) -> bool:
    """Whether ``x`` is a real CPU tensor outside any trace: the NumPy core can compute in place."""
    if x.device.type != "cpu" or tracing():
        return False
    if (type(x) is torch.Tensor and not torch._is_functional_tensor(x)
            and not torch._C._functorch.is_functorch_wrapped_tensor(x)):
        return True  # a plain tensor, no wrapper: every branch of is_fake answers False (is_fake took ~4 µs)
    return not torch._subclasses.fake_tensor.is_fake(x)


class LadderBuffers(nn.Module):
    """A :class:`~posenc.exact.Ladder` as non-persistent int64 buffers (its float64 bits), and its sin/cos.

    >>> from fractions import Fraction
    >>> from posenc.exact import geometric_ladder
    >>> lad = LadderBuffers(geometric_ladder(2, 10000.0, Fraction(2)))
    >>> s, c = lad.sincos(torch.tensor([1000.0], dtype=torch.float64))
    >>> [round(float(v), 5) for v in (s[0, 0], c[0, 0], s[0, 1], c[0, 1])]
    [0.82688, 0.56238, -0.54402, -0.83907]
    >>> dict(lad.state_dict())
    {}
    """

    def __init__(self, ladder: Ladder, *, host_core: bool = True) -> None:
        super().__init__()
        w0h, w0l, w1h, w1l = ladder.splits
        self._bits = tuple(np.ascontiguousarray(arr, dtype=np.float64).view(np.int64).copy()
                           for arr in (ladder.w0, ladder.w1, ladder.w2, w0h, w0l, w1h, w1l))
        fixed = words_of(ladder)
        #: whether the 32-bit path holds this ladder (every frequency in its range)
        self.has_fixed = fixed is not None
        # the 32-bit path's node finds its ladder by this key; traced on a CPU tensor the NumPy core serves it,
        # unless host_core is False (a ladder whose dyadic bands the core's three doubles cannot hold exactly)
        self.key = register_ladder(ladder) if fixed is not None else -1
        self.host_core = host_core
        w32 = np.asarray(ladder.w0, dtype=np.float32).view(np.int32).astype(np.int64)
        self._fixed_bits = () if fixed is None else (*fixed, w32)
        for name, bits in zip((*_WORDS, *_FIXED), self._bits + self._fixed_bits, strict=False):
            self.register_buffer(name, torch.from_numpy(bits.copy()), persistent=False)
        self.size = len(ladder)
        self.ladder = ladder

    def _apply(self, fn: Any, recurse: bool = True) -> LadderBuffers:
        super()._apply(fn, recurse)
        # to_empty() after a meta-device init leaves the buffers uninitialised: the words are written again
        # from the ladder wherever they now are (7·n int64s; a move or a cast leaves them as they were)
        with torch.no_grad():
            for name, bits in zip((*_WORDS, *_FIXED), self._bits + self._fixed_bits, strict=False):
                buf = getattr(self, name)
                if not buf.is_meta and buf.dtype == torch.int64:
                    buf.copy_(torch.from_numpy(bits))
        return self

    def words(self) -> tuple[torch.Tensor, ...]:
        """The seven float64 words ``[n]`` (views of the int64 buffers, on their device)."""
        return tuple(getattr(self, name).view(torch.float64) for name in _WORDS)

    @property
    def home(self) -> torch.device:
        """The device the words are on (read from an int64 buffer: no float64 view in a traced graph)."""
        return cast(torch.Tensor, self._buffers["w0"]).device  # not through Module.__getattr__: read per call

    def fixed_words(self) -> FixedWords:
        """The 32-bit path's words on the module's device (only where :attr:`has_fixed`)."""
        return FixedWords(self._buffer("fixed_frac"), self._buffer("fixed_unwrap"), self._buffer("fixed_int"))

    def _buffer(self, name: str) -> torch.Tensor:
        return cast(torch.Tensor, getattr(self, name))  # a registered buffer

    def omega32(self) -> torch.Tensor:
        """float32(ω_i) ``[n]``: the derivative's factor on the 32-bit path."""
        return self._buffer("w32").to(torch.int32).view(torch.float32)

    def sincos32(self, p: torch.Tensor, factor: float = 1.0, pair_axes: torch.Tensor | None = None, *,
                 dtype: torch.dtype = torch.float32, inline: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """sin/cos of ``p[..., None]·ω`` (times ``factor``), float32 ``[..., n]``, integers only (no float64).

        ``p``: integer, float32, float16 or bfloat16 positions (see
        :func:`posenc.torch._fixed.fixed_sincos`); with ``pair_axes``
        ``[..., n_axes]``, pair i at the position of axis ``pair_axes[i]``.
        One graph node when traced (:func:`posenc.torch._fixed.sincos32`);
        ``inline=True`` spells the 32-bit operations out instead.
        """
        if inline:
            s, c = fixed_sincos(p, self.fixed_words(), factor, pair_axes, odd=dtype in NARROW_FLOATS)
            return s.to(dtype), c.to(dtype)
        s, c = sincos32(p, self.fixed_words(), self.key, factor, dtype, self.host_core)
        if pair_axes is not None:  # [..., n_axes, n]: pair i from the row of its axis
            pick = pair_axes.view(*([1] * (s.dim() - 1)), -1).expand(*s.shape[:-2], 1, -1)
            s, c = torch.gather(s, -2, pick).squeeze(-2), torch.gather(c, -2, pick).squeeze(-2)
        return s, c

    def sincos(self, p: torch.Tensor, lo: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """sin/cos of ``(p + lo)[..., None] · ω``, float64 ``[..., n]``, for float64 ``p [...]`` (and ``lo``).

        On a CPU tensor in eager mode (:func:`host_eager`) the NumPy core
        computes it in place (the same bits; cache-sized blocks, numba when
        installed: ~50× faster than torch's float64 operations one by one);
        elsewhere the torch twin.
        """
        shape = (*p.shape, self.size)
        if host_eager(p):  # not under make_fx either: its tensors cannot be read (it gave zeros, a constant)
            s = torch.empty(shape, dtype=torch.float64)
            c = torch.empty(shape, dtype=torch.float64)
            hi = p.detach().reshape(-1).numpy()
            rest = None if lo is None else lo.detach().reshape(-1).numpy()
            m = hi.shape[0]
            fill_sincos(hi, self.ladder, s.view(m, self.size).numpy(), c.view(m, self.size).numpy(), rest)
            return s, c
        s, c = sincos(p.reshape(-1, 1), self.words(), None if lo is None else lo.reshape(-1, 1))
        return s.reshape(shape), c.reshape(shape)


def exact_sincos(p: torch.Tensor, angles: LadderBuffers, hi: torch.Tensor | None = None,
                 lo: torch.Tensor | None = None, quarter: torch.Tensor | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """sin/cos of ``p[..., None] · ω`` (float64 ``p``; its value ``hi + lo`` when given), differentiable in ``p``.

    With ``quarter`` (whole floats, shaped as ``p``) the value is that of
    ``quarter·π/2 + (hi + lo)·ω`` (the quarter turns of
    :func:`posenc.exact.core.turns_core`, turned back by
    :func:`~posenc.exact.core.quadrant`), still differentiable in ``p``.

    The value never passes through autograd's view of the error-free
    transformations (whose derivatives mean nothing): it is computed
    detached, and when ``p`` needs a gradient a zero ``p − p.detach()``
    carries the formula's own derivative, d sin(ωp)/dp = ω cos(ωp) and
    d cos(ωp)/dp = −ω sin(ωp). (An autograd.Function would do the same, but
    torch.compile warns when it traces one.) Adding that zero can only turn
    an exact −0.0 into +0.0.
    """
    value = p.detach() if hi is None else hi.detach()
    s, c = angles.sincos(value, None if lo is None else lo.detach())
    if quarter is not None:
        s, c = quadrant(quarter.detach().unsqueeze(-1), s, c)
    if not p.requires_grad:
        return s, c
    zero = (p - p.detach()).unsqueeze(-1)
    w0 = angles.words()[0]
    return s + zero * (w0 * c), c - zero * (w0 * s)


def exact_sincos32(p: torch.Tensor, angles: LadderBuffers, value: torch.Tensor | None = None,
                   dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`exact_sincos` on the 32-bit path: float32 sin/cos of ``value[..., None]·ω`` (default ``p``).

    Differentiable in a floating ``p`` as :func:`exact_sincos` is, with
    float32(ω) as the derivative's factor (the integer bit path has none).
    """
    v = p.detach() if value is None else value.detach()
    s, c = angles.sincos32(v, dtype=dtype)
    if not p.requires_grad:
        return s, c
    zero = (p.to(torch.float32) - p.detach().to(torch.float32)).unsqueeze(-1)
    w = angles.omega32()
    return s + zero * (w * c), c - zero * (w * s)


_INTEGERS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def check_input(x: Any, name: str, device: torch.device, numpy_name: str) -> torch.Tensor:
    """``x`` for a posenc.torch module whose buffers are on ``device``: a real tensor on that device.

    A non-tensor, a bool, complex or other non-real dtype, and a tensor on
    another device (the meta device into a CPU module, say) are refused
    by name; the NumPy function ``numpy_name`` takes lists and arrays.
    """
    if not isinstance(x, torch.Tensor):
        raise PosEncError(f"{name} must be a torch.Tensor, got {show_value(x)} ({type(x).__name__}): pass "
                          f"torch.as_tensor({name}), or call {numpy_name}, which takes lists and arrays")
    if not (x.dtype.is_floating_point or x.dtype in _INTEGERS):
        raise PosEncError(f"{name} must be real numbers (an integer or floating tensor), got a tensor of dtype "
                          f"{str(x.dtype).removeprefix('torch.')}")
    if x.device != device:
        raise PosEncError(f"{name} is on {x.device} but the module's buffers are on {device}: move the "
                          f"module there (module.to({str(x.device)!r})) or {name} to {device}")
    return x


def host_values(x: torch.Tensor) -> np.ndarray:
    """A CPU tensor's values as a NumPy array that holds them exactly (integers as int64, floats as float64)."""
    v = x.detach()
    return (v.to(torch.int64) if not v.dtype.is_floating_point else v.to(torch.float64)).numpy()


#: dtype name -> (significand bits, smallest normal exponent, largest finite value): timesteps' _FORMATS.
_ROUNDING = {"float32": (24, -126, float(np.finfo(np.float32).max)), "float16": (11, -14, 65504.0),
             "bfloat16": (8, -126, float.fromhex("0x1.fep127"))}


def round_twin(x: torch.Tensor, name: str) -> torch.Tensor:
    """float64 ``x`` rounded once to nearest-even in ``name`` (float32, float16, bfloat16), as float64.

    :func:`posenc.timesteps.round_to` on tensors, with the exponent read from
    x's bits: ``round(x / q)·q`` for q the format's quantum at x (its ulp,
    or the subnormal spacing below the normal range). Every step is exact
    but the one ``round``, and none is a dtype cast, so a compiler cannot
    drop the rounding as Inductor drops ``x.to(torch.bfloat16).double()``.
    Past the format's largest value the result is inf, as the cast gives.
    """
    bits, emin, biggest = _ROUNDING[name]
    u = x.view(torch.int64)
    e = torch.clamp(((u >> 52) & 0x7FF) - 1023, min=emin)  # x's binade (zero and subnormals: the normal floor)
    q = ((e - (bits - 1) + 1023) << 52).view(torch.float64)  # 2**(e - bits + 1), a normal double
    r = torch.round(x / q) * q
    return torch.where(torch.abs(r) > biggest, r * float("inf"), r)


def reference_times_twin(t: torch.Tensor, name: str, factor: float, factor32: float) -> torch.Tensor:
    """:func:`posenc.timesteps.conventions.reference_times` on float64 tensors: the same operations, the same bits.

    ``factor32`` is float32(``factor``), the scalar torch's float32 multiply takes.
    """
    if name == "float64":
        return t * factor
    p = round_twin(round_twin(t, name) * factor32, "float32")  # the product exact in float64, rounded once
    return p if name == "float32" else round_twin(p, name)
