"""Triton source for the 32-bit exact sin/cos, generated from :mod:`posenc.exact.fixed_sincos` itself.

The algorithm is not written again for Triton. :func:`body` runs the shared
functions (:func:`~posenc.exact.fixed_phase.phase_of_integers`,
:func:`~posenc.exact.fixed_phase.phase_of_floats`,
:func:`~posenc.exact.fixed_sincos.sincos_f32`) on a recording namespace:
every array operation they perform on a :class:`Sym` appends one line of
Triton (``tl``) code, and Python-int constants fold on the host. The result
is straight-line code over uint32/int32 tensors, the same operations in the
same order as NumPy's and JAX's, which a ``@triton.jit`` kernel template
(:mod:`posenc.triton.kernels`) embeds. Triton's uint32 arithmetic wraps and
its shifts of unsigned values are logical, as NumPy's, so no masking is
needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..exact.fixed import scale_words
from ..exact.fixed_phase import phase_of_floats, phase_of_integers
from ..exact.fixed_sincos import Ops, sincos_f32

__all__ = ["Emitter", "Sym", "body"]

M32 = 0xFFFFFFFF
_TL = {"u": "tl.uint32", "i": "tl.int32"}


class Emitter:
    """The lines of generated code, and a counter for fresh names."""

    def __init__(self, prefix: str = "v") -> None:
        self.lines: list[str] = []
        self.prefix = prefix
        self.count = 0
        self.consts: dict[tuple[int, str], Sym] = {}

    def new(self, expr: str, kind: str) -> Sym:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {expr}")
        return Sym(self, name, kind)

    def const(self, value: int, kind: str) -> Sym:
        v = value & M32 if kind == "u" else value
        key = (v, kind)
        if key not in self.consts:
            name = f"k{len(self.consts)}"
            self.lines.append(f"{name} = tl.full([1, 1], {v}, {_TL[kind]})")
            self.consts[key] = Sym(self, name, kind)
        return self.consts[key]


class Sym:
    """A traced tensor of kind ``u`` (uint32), ``i`` (int32), ``b`` (bool) or ``f`` (float32)."""

    __slots__ = ("e", "kind", "name")

    def __init__(self, e: Emitter, name: str, kind: str) -> None:
        self.e, self.name, self.kind = e, name, kind

    def _other(self, x: Any) -> Sym:
        if isinstance(x, Sym):
            if x.kind != self.kind and not (x.kind == "b" and self.kind == "b"):
                raise TypeError(f"mixed kinds {self.kind} and {x.kind} in generated code")
            return x
        if isinstance(x, bool):
            return self.e.new("True" if x else "False", "b") if self.kind == "b" else self.e.const(int(x), self.kind)
        return self.e.const(int(x), self.kind)

    def _bin(self, op: str, x: Any, kind: str | None = None, swap: bool = False) -> Sym:
        o = self._other(x)
        a, b = (o, self) if swap else (self, o)
        return self.e.new(f"{a.name} {op} {b.name}", kind or self.kind)

    def __add__(self, x: Any) -> Sym: return self._bin("+", x)
    def __radd__(self, x: Any) -> Sym: return self._bin("+", x, swap=True)
    def __sub__(self, x: Any) -> Sym: return self._bin("-", x)
    def __rsub__(self, x: Any) -> Sym: return self._bin("-", x, swap=True)
    def __mul__(self, x: Any) -> Sym: return self._bin("*", x)
    def __rmul__(self, x: Any) -> Sym: return self._bin("*", x, swap=True)
    def __and__(self, x: Any) -> Sym: return self._bin("&", x)
    def __rand__(self, x: Any) -> Sym: return self._bin("&", x, swap=True)
    def __or__(self, x: Any) -> Sym: return self._bin("|", x)
    def __ror__(self, x: Any) -> Sym: return self._bin("|", x, swap=True)
    def __xor__(self, x: Any) -> Sym: return self._bin("^", x)
    def __rxor__(self, x: Any) -> Sym: return self._bin("^", x, swap=True)
    def __lshift__(self, x: Any) -> Sym: return self._bin("<<", x)
    def __rlshift__(self, x: Any) -> Sym: return self._bin("<<", x, swap=True)
    def __rshift__(self, x: Any) -> Sym: return self._bin(">>", x)
    def __lt__(self, x: Any) -> Sym: return self._bin("<", x, "b")
    def __le__(self, x: Any) -> Sym: return self._bin("<=", x, "b")
    def __gt__(self, x: Any) -> Sym: return self._bin(">", x, "b")
    def __ge__(self, x: Any) -> Sym: return self._bin(">=", x, "b")
    def __eq__(self, x: Any) -> Sym: return self._bin("==", x, "b")  # type: ignore[override]
    def __ne__(self, x: Any) -> Sym: return self._bin("!=", x, "b")  # type: ignore[override]
    def __neg__(self) -> Sym: return self.e.new(f"-{self.name}", self.kind)
    __hash__ = None  # type: ignore[assignment]

    def __invert__(self) -> Sym:
        if self.kind != "b":
            raise TypeError("~ of an integer: the shared code spells it as a xor")
        return self.e.new(f"{self.name} == 0", "b")

    def astype(self, dtype: Any) -> Sym:
        kind = "u" if dtype == "uint32" else "i"
        if kind == self.kind:
            return self
        if self.kind == "b":
            return self.e.new(f"{self.name}.to({_TL[kind]})", kind)
        return self.e.new(f"{self.name}.to({_TL[kind]}, bitcast=True)", kind)


def _lift(kind: str, x: Any, e: Emitter) -> Sym:
    return x if isinstance(x, Sym) else e.const(int(x), kind)


@dataclass
class _Namespace:
    """The ``numpy`` functions the shared algorithm calls, emitting ``tl`` code."""

    e: Emitter
    uint32: str = "uint32"
    int32: str = "int32"

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        return x  # a Sym (a loaded word) or a Python int (a constant, folded where it meets another)

    def where(self, c: Any, a: Any, b: Any) -> Sym:
        kind = a.kind if isinstance(a, Sym) else b.kind if isinstance(b, Sym) else "u"
        sa, sb = _lift(kind, a, self.e), _lift(kind, b, self.e)
        return self.e.new(f"tl.where({c.name}, {sa.name}, {sb.name})", kind)

    def zeros_like(self, x: Sym) -> Sym:
        return self.e.new(f"tl.zeros_like({x.name})", x.kind)

    def ones_like(self, x: Sym) -> Sym:
        return self.e.new(f"tl.full({x.name}.shape, 1, {_TL[x.kind]})", x.kind)

    def clip(self, x: Sym, lo: int, hi: int) -> Sym:
        return self.e.new(f"tl.minimum(tl.maximum({x.name}, {lo}), {hi})", x.kind)

    def minimum(self, x: Sym, v: int) -> Sym:
        return self.e.new(f"tl.minimum({x.name}, {v})", x.kind)


class _EmitOps(Ops):
    def u32(self, a: Any) -> Any:
        if isinstance(a, Sym):
            return a.astype("uint32")
        return int(a) & M32


def _clz(xp: _Namespace, x: Any) -> Sym:
    """Leading zeros of a uint32 (32 for 0), by halving (:func:`posenc.torch._fixed._clz`'s steps)."""
    n = xp.zeros_like(x)
    v = x
    for width, limit in ((16, 0xFFFF), (8, 0xFFFFFF), (4, 0xFFFFFFF), (2, 0x3FFFFFFF), (1, 0x7FFFFFFF)):
        c = v <= limit
        n = xp.where(c, n + width, n)
        v = xp.where(c, v << width, v)
    return xp.where(v == 0, 32, n)


def _ops(e: Emitter) -> _EmitOps:
    xp = _Namespace(e)
    return _EmitOps(xp, lambda x: _clz(xp, x), lambda b: e.new(f"{b.name}.to(tl.float32, bitcast=True)", "f"),
                    lambda t: e.new(f"{t.name}.to(tl.uint32, bitcast=True)", "u"))


@dataclass
class _Words:
    frac_words: list[Sym]
    unwrap_words: list[Sym]
    int_words: Sym


def body(kind: str, factor: float = 1.0, indent: str = "    ", odd: bool = False) -> str:
    """The generated lines: from ``p`` (int32 or float32, ``kind`` ``"int"``/``"float"``) and the words
    ``fw0…fw3``, ``uw0…uw3``, ``iw`` (uint32) to float32 ``sin_out`` and ``cos_out`` (rounded to odd with
    ``odd``: for a cast to float16 or bfloat16, :func:`posenc.exact.fixed_sincos.round_f32`).

    >>> body("int").splitlines()[-1].strip()[:9]
    'cos_out ='
    """
    e = Emitter()
    o = _ops(e)
    p = Sym(e, "p", "i" if kind == "int" else "f")
    words = _Words([Sym(e, f"fw{j}", "u") for j in range(4)], [Sym(e, f"uw{j}", "u") for j in range(4)],
                   Sym(e, "iw", "u"))
    phase = (phase_of_integers if kind == "int" else phase_of_floats)(o, p, words)  # type: ignore[arg-type]
    s, c = sincos_f32(o, phase, None if factor == 1.0 else scale_words(factor), odd)
    e.lines.append(f"sin_out = {s.name}")
    e.lines.append(f"cos_out = {c.name}")
    return "\n".join(indent + line for line in e.lines)
