"""The ALiBi variants (the paper's, BLOOM's, MPT's), their slopes, and the registry of variants by name.

Each variant is a frozen dataclass; :func:`register_alibi` adds one by name
(:data:`ALIBI_VARIANTS`, posenc's one :class:`~posenc.registry.Registry`), so
every ALiBi entry point finds a user's variant as it finds a built-in. What
each variant means, and where its slopes come from: :mod:`posenc.bias.alibi`.

A user's variant is checked, not trusted: :func:`register_alibi` takes a
frozen dataclass instance only and asks it for its slopes at 1, 2 and 3
heads; every use reads them through :func:`variant_slopes` (``n_heads``
finite reals > 0, as float64) and its reach through :func:`variant_reach`,
so a wrong length, a NaN or a str is a PosEncError naming the variant, never
a bias of the wrong shape or of NaNs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ..errors import MAX_D_MODEL, PosEncError, check_int, check_real, show_value
from ..exact import decimal_context
from ..registry import Registry, guarded
from ..support.arguments import set_fields

__all__ = [
    "ALIBI_CONVENTIONS",
    "ALIBI_VARIANTS",
    "AlibiConvention",
    "Bloom",
    "Mpt",
    "Press",
    "alibi_convention",
    "is_variant",
    "register_alibi",
    "variant_reach",
    "variant_slopes",
]


with decimal_context(60):
    _LN2 = Decimal(2).ln()


@lru_cache(maxsize=8192)
def _pow2(exponent: Fraction) -> float:
    """2**(-exponent), correctly rounded to float64 (50 digits, then one rounding)."""
    if exponent.denominator == 1:
        return math.ldexp(1.0, -exponent.numerator)  # a power of two: exact
    with decimal_context(50):
        x = Decimal(exponent.numerator) / Decimal(exponent.denominator)
        return float((-x * _LN2).exp())


def _geometric(n: int) -> list[Fraction]:
    """Exponents of the paper's power-of-two rule: 8k/n, k = 1 … n."""
    return [Fraction(8 * k, n) for k in range(1, n + 1)]


@lru_cache(maxsize=256)
def _press_slopes(n_heads: int) -> tuple[float, ...]:
    p = 1 << (n_heads.bit_length() - 1)  # 2**floor(log2 n)
    exps = _geometric(p)
    if p != n_heads:
        exps += _geometric(2 * p)[0::2][: n_heads - p]  # k = 1, 3, 5, … of the 2p rule
    return tuple(_pow2(e) for e in exps)


@lru_cache(maxsize=256)
def _mpt_slopes(n_heads: int, bias_max: float) -> tuple[float, ...]:
    big = 1 << (n_heads - 1).bit_length()  # 2**ceil(log2 n)
    step = Fraction(bias_max) / big  # a float is a dyadic rational: exact
    exps = [step * k for k in range(1, big + 1)]
    if big != n_heads:
        exps = (exps[1::2] + exps[0::2])[:n_heads]
    return tuple(_pow2(e) for e in exps)


def _check_heads(n_heads: Any) -> int:
    # each head has at least one channel: no model has more heads than the widest encoding has channels
    return check_int(n_heads, "n_heads", minimum=1, maximum=MAX_D_MODEL)


@dataclass(frozen=True)
class Press:
    """The paper's ALiBi: ``−m·(i − j)`` for the keys j ≤ i of query i.

    Slopes from the paper's ``get_slopes`` (ofirpress/attention_with_linear_biases,
    ``fairseq/models/transformer.py``). Without ``causal`` the bias is the
    symmetric ``−m·|i − j|``, as x-transformers' ``AlibiPositionalBias``
    and bidirectional encoders using ALiBi (MosaicBERT) apply it.

    >>> Press().slopes(4).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]
    """

    name: ClassVar[str] = "press"

    def slopes(self, n_heads: int) -> np.ndarray:
        """float64 ``[n_heads]``, head 0 first."""
        return np.array(_press_slopes(_check_heads(n_heads)))

    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        """t with bias = m·t, broadcastable to ``[..., q, k]``.

        Query positions ``[..., q, 1]``, key positions ``[..., 1, k]``, the last
        key's ``[..., 1, 1]``: NumPy arrays or torch tensors (operators only).
        """
        diff = k_pos - q_pos
        return diff if causal else -abs(diff)

    def reach(self, lo: float, hi: float) -> float:
        """The largest |t| when every position lies in [lo, hi]."""
        return hi - lo


@dataclass(frozen=True)
class Bloom(Press):
    """BLOOM's ALiBi: ``m·j``, j the key's position, whatever the query.

    HF ``models/bloom/modeling_bloom.py``: ``build_alibi_tensor`` multiplies
    the slopes by ``(attention_mask.cumsum(-1) − 1) * attention_mask``, the
    position of each key counting real tokens only (so a left-padded row
    starts at 0 at its first token); shape ``[b·n_h, 1, k_len]``, broadcast
    over the queries. It equals the paper's form under softmax, row by row.
    Slopes: the paper's (``_get_alibi_slopes``).

    >>> Bloom().slopes(2).tolist()
    [0.0625, 0.00390625]
    """

    name: ClassVar[str] = "bloom"

    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return k_pos

    def reach(self, lo: float, hi: float) -> float:
        return max(abs(lo), abs(hi))


@dataclass(frozen=True)
class Mpt:
    """MPT's ALiBi: ``m·(j − (k_len − 1))``, the key's position relative to the last key.

    HF ``models/mpt/modeling_mpt.py``: ``build_mpt_alibi_tensor(num_heads,
    sequence_length, alibi_bias_max=8)`` (copied from mosaicml/llm-foundry):
    slopes ``1 / 2**(k·alibi_bias_max/P)``, k = 1 … P = 2**ceil(log2 n),
    reordered ``concat(s[1::2], s[::2])[:n]`` when n < P. With explicit
    positions, posenc measures from the last key's position.

    >>> Mpt().slopes(2).tolist(), Mpt(alibi_bias_max=4).slopes(2).tolist()
    ([0.0625, 0.00390625], [0.25, 0.0625])
    """

    name: ClassVar[str] = "mpt"
    alibi_bias_max: float = 8.0  # the largest exponent: the last slope of a power-of-two head count is 2**-this

    def __post_init__(self) -> None:
        b = check_real(self.alibi_bias_max, "alibi_bias_max")
        if not 0 < b <= 1000:
            # past ~1074 the slopes underflow to zero in float64
            raise PosEncError(f"alibi_bias_max must be > 0 and <= 1000, got {self.alibi_bias_max!r}")
        set_fields(self, alibi_bias_max=b)

    def slopes(self, n_heads: int) -> np.ndarray:
        """float64 ``[n_heads]``, head 0 first."""
        return np.array(_mpt_slopes(_check_heads(n_heads), self.alibi_bias_max))

    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return k_pos - k_last

    def reach(self, lo: float, hi: float) -> float:
        return hi - lo


#: An ALiBi variant: a built-in, or a frozen dataclass with ``slopes``, ``coefficient`` and ``reach``.
AlibiConvention = Press | Bloom | Mpt | Any

_METHODS = ("slopes", "coefficient", "reach")


def _has_methods(obj: Any) -> bool:
    return not isinstance(obj, type) and all(callable(getattr(obj, m, None)) for m in _METHODS)


def _frozen_dataclass(obj: Any) -> bool:
    params = getattr(type(obj), "__dataclass_params__", None)
    return not isinstance(obj, type) and bool(getattr(params, "frozen", False))


def is_variant(obj: Any) -> bool:
    """An ALiBi variant: a frozen dataclass instance with ``slopes(n_heads)``, ``coefficient(...)`` and ``reach``.

    Frozen, since one instance serves every caller (and every cached bias
    made from it): a variant that could change under them is refused.
    """
    if isinstance(obj, (Press, Mpt)):
        return True
    return _has_methods(obj) and _frozen_dataclass(obj)


def variant_slopes(conv: Any, n_heads: Any) -> np.ndarray:
    """``conv.slopes(n_heads)`` checked: float64 ``[n_heads]``, every slope finite and > 0.

    The slope multiplies the distance: a NaN would fill the bias with NaN,
    a wrong length give a bias for another head count, and ALiBi's
    penalty (and posenc's bound on the bias, ``max(m)·reach``, and
    :func:`posenc.alibi_distance`, ``penalty/m``) needs m > 0.

    Raises:
        PosEncError: naming the variant and what its slopes were.
    """
    n = _check_heads(n_heads)
    raw = guarded(f"{show_value(conv)}.slopes({n})", conv.slopes, n)
    return _checked_slopes(conv, n, raw)


def _checked_slopes(conv: Any, n: int, raw: Any) -> np.ndarray:
    def who() -> str:  # built for a refusal only: showing the values costs more than checking them
        return f"the ALiBi variant {show_value(conv)}: slopes({n}) returned {show_value(raw)}"

    if isinstance(raw, (str, bytes)) or not isinstance(raw, (np.ndarray, list, tuple)):
        raise PosEncError(f"{who()}; expected float64 [{n}] (one slope per head)")
    try:
        arr = np.asarray(raw)
    except Exception:  # a ragged list, a hostile __array__
        arr = np.asarray(None)
    if arr.dtype.kind not in "iuf" or arr.shape != (n,):
        shape = f"shape {arr.shape} of {arr.dtype}" if arr.dtype.kind != "O" else "no numeric array"
        raise PosEncError(f"{who()} ({shape}); expected float64 [{n}] (one real slope per head)")
    out = arr.astype(np.float64)  # exact: every integer and float format below float64 fits in it
    if not (np.isfinite(out).all() and (out > 0).all()):
        bad = out[~(np.isfinite(out) & (out > 0))][0]
        raise PosEncError(f"{who()}; every slope must be finite and > 0 (it scales the distance penalty), "
                          f"got {show_value(float(bad))}")
    return out


def variant_reach(conv: Any, lo: float, hi: float) -> float:
    """``conv.reach(lo, hi)`` checked: a finite real >= 0, the largest |t| over positions in [lo, hi]."""
    who = f"the ALiBi variant {show_value(conv)}: reach({lo!r}, {hi!r})"
    r = guarded(who, conv.reach, lo, hi)
    if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, float, np.integer, np.floating)) or not (
            math.isfinite(float(r)) and float(r) >= 0):
        raise PosEncError(f"{who} returned {show_value(r)}; expected a finite real >= 0 (the largest |t|)")
    return float(r)


#: Every ALiBi variant by name: the built-ins and those :func:`register_alibi` adds.
ALIBI_VARIANTS: Registry[AlibiConvention] = Registry(
    "a Press/Bloom/Mpt instance (or a frozen dataclass with slopes, coefficient and reach)", is_variant)
for _v in (Press(), Bloom(), Mpt()):
    ALIBI_VARIANTS.register(_v.name, _v)

#: The built-in conventions by name; ``Mpt(alibi_bias_max=…)`` for other MPT settings
#: (:data:`ALIBI_VARIANTS` holds those registered since).
ALIBI_CONVENTIONS: Mapping[str, AlibiConvention] = MappingProxyType({n: ALIBI_VARIANTS.get(n) for n in ALIBI_VARIANTS})


def register_alibi(name: str, variant: Any) -> None:
    """Make ``alibi_bias(..., convention=name)`` (and every ALiBi entry point) use ``variant``.

    Args:
        name: the new name, 1 to 64 ASCII letters, digits, ``_ . + -``, a letter or
            digit first (:func:`posenc.registry.check_name`); a name is registered
            once (the built-ins' included).
        variant: a frozen dataclass instance with ``slopes(n_heads)``
            (float64 ``[n_heads]``, each finite and > 0),
            ``coefficient(q_pos, k_pos, k_last, causal)`` (t with bias = m·t,
            from array operators only, so the torch and JAX forms run it too)
            and ``reach(lo, hi)`` (the largest |t|), such as a :class:`Press`
            subclass; or a zero-argument factory of one (called at each use,
            its result checked then).

    Raises:
        PosEncError: a name that is not a short printable word or is taken;
            a variant that is not a frozen dataclass, or whose slopes at 1, 2
            or 3 heads (asked for here, where they are cheap) are not that
            many finite reals > 0; a factory that cannot be called with no
            argument.

    >>> register_alibi("doc-mpt-16", Mpt(alibi_bias_max=16))
    >>> alibi_convention("doc-mpt-16").slopes(2).tolist()
    [0.00390625, 1.52587890625e-05]
    """
    if _has_methods(variant):
        if not _frozen_dataclass(variant):
            raise PosEncError(f"register_alibi({show_value(name)}): the variant must be a frozen dataclass "
                              f"instance (@dataclass(frozen=True); one instance serves every caller), "
                              f"got {show_value(variant)}")
        _probe(variant, name)
    ALIBI_VARIANTS.register(name, variant)


def _probe(variant: Any, name: Any) -> None:
    """Ask a variant for its slopes at 1, 2 and 3 heads: a fixed length, a NaN or a str fails now, not at use.

    A PosEncError from ``slopes`` itself is the variant refusing that head
    count (one that needs a multiple of 4 heads, say): allowed.
    """
    for n in (1, 2, 3):
        try:
            raw = variant.slopes(n)
        except PosEncError:
            continue
        except Exception as exc:
            text = " ".join(str(exc).split())[:200]  # one line, as the command prints it
            raise PosEncError(f"register_alibi({show_value(name)}): {show_value(variant)}.slopes({n}) raised "
                              f"{type(exc).__name__}: {text}") from exc
        try:
            _checked_slopes(variant, n, raw)
        except PosEncError as exc:
            raise PosEncError(f"register_alibi({show_value(name)}): {exc}") from None


def alibi_convention(convention: Any) -> AlibiConvention:
    """The variant named (``"press"``, ``"bloom"``, ``"mpt"``, or one registered) or given as an instance."""
    if _has_methods(convention) and not is_variant(convention):
        raise PosEncError(f"convention must be a frozen dataclass instance (@dataclass(frozen=True)) when it is "
                          f"a variant of its own, got {show_value(convention)}")
    return ALIBI_VARIANTS.get(convention, "convention")
