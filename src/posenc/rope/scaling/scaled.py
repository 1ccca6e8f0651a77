"""What every RoPE scaling shares: the Scaled result, the ranges its fields may take, and their checks.

The variants (:mod:`posenc.rope.scaling`, a file each)
compute frequencies with :mod:`decimal` at :data:`posenc.exact.DECIMAL_PREC`
digits and hand them back through :func:`checked_scaled`, which keeps every
frequency inside the range posenc's exact path covers.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from ...errors import MAX_ANGLE, MAX_POSITION, MIN_FREQUENCY, PosEncError, check_int, check_real, show_value
from ...exact import ladder_digits

__all__ = [
    "FACTOR_RANGE",
    "MAX_ATTENTION",
    "Scaled",
    "attention_field",
    "check_rescalable",
    "checked_scaled",
    "exact_decimal",
    "factor",
    "length_field",
    "plain_ladder",
    "positive",
]

#: Every factor field (context multiples, divisors, LongRoPE's per-channel
#: factors) lies in [2**-52, 2**52]: published configs use 1 … a few hundred,
#: and outside it one factor alone moves a frequency past the exact range.
FACTOR_RANGE = (2.0**-52, 2.0**52)

#: An attention factor multiplies cos and sin: at most 2**15 keeps them finite
#: even in float16 (max 65504); published ones are about 1 … 1.5.
MAX_ATTENTION = 2.0**15

class Scaled(NamedTuple):
    """What a scaling gives for one (dim, base, seq_len).

    Attributes:
        inv_freq: ``dim/2`` inverse frequencies (radians per position) as
            70-digit Decimals.
        base: the effective base (changed only by :class:`NTK` and
            :class:`DynamicNTK`).
        attention_factor: the factor HF multiplies into cos and sin
            (``attention_scaling``); 1 for most variants.
    """

    inv_freq: list[Decimal]
    base: Decimal
    attention_factor: float


def exact_decimal(x: float) -> Decimal:
    """A float as a Decimal."""
    return Decimal(x)  # exact: a float is a dyadic rational


def plain_ladder(dim: int, base: Decimal) -> list[Decimal]:
    """ω_i = base**(-2i/dim), i = 0 … dim/2 - 1 (:func:`posenc.exact.ladder_digits`)."""
    return ladder_digits(dim // 2, base, Fraction(dim, 2))


def positive(value: Any, name: str) -> float:
    """A finite real > 0."""
    f = check_real(value, name)
    if not f > 0:
        raise PosEncError(f"{name} must be > 0, got {show_value(value)}")
    return f


def factor(value: Any, name: str) -> float:
    """A factor field in :data:`FACTOR_RANGE`."""
    f = positive(value, name)
    lo, hi = FACTOR_RANGE
    if not lo <= f <= hi:
        raise PosEncError(
            f"{name} must be in [2**-52, 2**52] (beyond it the scaled frequencies leave the exact range), "
            f"got {show_value(value)}"
        )
    return f


def attention_field(value: Any, name: str) -> float | None:
    """None, or an attention factor in (0, 2**15]."""
    if value is None:
        return None
    f = positive(value, name)
    if f > MAX_ATTENTION:
        raise PosEncError(f"{name} must be <= 2**15 (cos·factor must stay finite in float16), got {show_value(value)}")
    return f


def length_field(value: Any, name: str) -> int:
    """A length in positions, 1 … 2**53."""
    return check_int(value, name, minimum=1, maximum=int(MAX_POSITION))


def checked_scaled(owner: Any, dim: int, inv_freq: list[Decimal], base: Decimal, attention: Decimal | float) -> Scaled:
    """The result of ``owner.scale``, once every frequency and the attention factor are in range.

    Frequencies must lie in [2**-960, 2**53) (:data:`posenc.errors.MIN_FREQUENCY`,
    :data:`posenc.errors.MAX_ANGLE`): below, the ladder loses bits; above,
    even position 1 leaves the exact range. The attention factor must lie in
    (0, 2**15].
    """
    lo, hi = Decimal(MIN_FREQUENCY), Decimal(MAX_ANGLE)
    for i, w in enumerate(inv_freq):
        if not lo <= w < hi:
            raise PosEncError(
                f"{owner!r} with rotary_dim {dim} and base {float(base):g} gives ω_{i} = {float(w):.6g}, outside "
                "[2**-960, 2**53), the range posenc's exact path covers"
            )
    af = Decimal(attention)
    if not 0 < af <= Decimal(MAX_ATTENTION):
        raise PosEncError(
            f"{owner!r} gives attention factor {float(af):.6g}; it must be in (0, 2**15] "
            "(it multiplies cos and sin)"
        )
    return Scaled(inv_freq, base, float(af))


def check_rescalable(owner: Any, dim: int) -> None:
    """NTK-style rescales raise the base to dim/(dim - 2): undefined for a single pair."""
    if dim < 4:
        raise PosEncError(
            f"{type(owner).__name__} needs rotary_dim >= 4 (scaling={owner!r}): it rescales the base by "
            f"factor**(dim/(dim-2)), which divides by zero at rotary_dim {dim} (one pair, ω = 1 whatever the base)"
        )
