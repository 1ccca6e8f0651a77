"""The frequency ladder ω_i = base**(-2i/d_model) and what it implies for a context.

The seed (Ex 2, 3, 7): channel pair i spins at ω_i radians per position, so
it repeats every λ_i = 2π/ω_i positions; the slowest pair, i = d/2 - 1, sets
the longest wavelength λ_max = 2π·base**((d-2)/d). A context longer than
λ_max makes even the slowest channel wrap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from ..errors import PosEncError, check_base, check_context, check_d_model
from ..exact import decimal_context, decimal_pi, seed_ladder
from .conventions import Vaswani

__all__ = [
    "ContextReport",
    "context_report",
    "frequencies",
    "max_wavelength",
    "min_base",
    "wavelengths",
]


def frequencies(d_model: int, base: float = Vaswani.base) -> np.ndarray:
    """Angular frequency of each channel pair: ω_i = base**(-2i/d_model).

    Args:
        d_model: channels, a positive even integer.
        base: the base b > 1 of the ladder.

    Returns:
        float64 ``[d_model/2]``, each value correctly rounded.

    >>> frequencies(4).tolist()
    [1.0, 0.01]
    """
    d = check_d_model(d_model)
    b = check_base(base)
    return seed_ladder(d, b).w0.copy()


def _wavelength_decimal(d: int, b: float, i: int) -> Decimal:
    with decimal_context():
        return 2 * decimal_pi() * (Decimal(b).ln() * 2 * i / d).exp()


def wavelengths(d_model: int, base: float = Vaswani.base) -> np.ndarray:
    """Positions per full turn of each channel pair: λ_i = 2π/ω_i = 2π·base**(2i/d).

    Returns:
        float64 ``[d_model/2]``, correctly rounded.

    >>> wavelengths(4).round(2).tolist()
    [6.28, 628.32]
    """
    d = check_d_model(d_model)
    b = check_base(base)
    return np.array([float(_wavelength_decimal(d, b, i)) for i in range(d // 2)])


def max_wavelength(d_model: int, base: float = Vaswani.base) -> float:
    """The slowest channel's wavelength, 2π·base**((d-2)/d) (seed, Ex 7).

    >>> round(max_wavelength(512, 10000.0))
    60611
    """
    d = check_d_model(d_model)
    b = check_base(base)
    return float(_wavelength_decimal(d, b, d // 2 - 1))


def min_base(context: float, d_model: int) -> float:
    """The smallest base whose slowest channel does not wrap over ``context`` positions.

    Solves 2π·b**((d-2)/d) >= context for b and returns the smallest float64
    for which the true (not rounded) λ_max reaches the context. Returns 1.0 when every base > 1 suffices
    (context <= 2π).

    Raises:
        PosEncError: for d_model = 2, whose single pair has wavelength 2π
            whatever the base, when context > 2π.

    >>> round(min_base(8192, 512), 1)
    1341.0
    """
    c = check_context(context)
    d = check_d_model(d_model)
    if c <= 2 * math.pi:
        return 1.0
    if d == 2:
        raise PosEncError(
            f"d_model=2 has one channel pair, ω=1 for every base, wavelength 2π; "
            f"no base covers context {context:g} > 2π"
        )
    with decimal_context():
        b = float(((Decimal(c) / (2 * decimal_pi())).ln() * d / (d - 2)).exp())
        # compare the true wavelength, not its float64 rounding: a base whose
        # λ_max is 1e-13 short of the context still wraps
        while _wavelength_decimal(d, b, d // 2 - 1) < Decimal(c):
            b = math.nextafter(b, math.inf)
    return b


@dataclass(frozen=True, eq=False)
class ContextReport:
    """Whether a base's slowest channel covers a context (seed, Ex 7).

    Attributes:
        context: the context length, in positions.
        d_model: channels.
        base: the ladder's base.
        max_wavelength: λ_max = 2π·base**((d-2)/d).
        loops: float64 ``[d_model/2]``, turns each pair makes over the context.
        wraps: True when even the slowest pair turns more than once.
        wrapped_channels: how many pairs turn more than once.
        min_base: the smallest base that would not wrap (see :func:`min_base`);
            NaN-free: ``math.inf`` when no base can (d_model = 2).
    """

    context: float
    d_model: int
    base: float
    max_wavelength: float
    loops: np.ndarray = field(repr=False)
    wraps: bool
    wrapped_channels: int
    min_base: float

    @property
    def suffices(self) -> bool:
        """True when the slowest channel does not wrap."""
        return not self.wraps


def context_report(context: float, d_model: int, base: float = Vaswani.base) -> ContextReport:
    """Check a (d_model, base) against a context length (seed, Ex 7).

    >>> context_report(8192, 512, 10000.0).wraps
    False
    >>> r = context_report(8192, 512, 100.0)
    >>> r.wraps, round(r.max_wavelength, 1), round(float(r.loops[-1]), 2)
    (True, 617.1, 13.27)
    """
    c = check_context(context)
    d = check_d_model(d_model)
    b = check_base(base)
    lam = wavelengths(d, b)
    loops = c / lam
    loops.setflags(write=False)
    try:
        mb = min_base(c, d)
    except PosEncError:
        mb = math.inf
    wrapped = int(np.count_nonzero(loops > 1.0))
    return ContextReport(
        context=c,
        d_model=d,
        base=b,
        max_wavelength=float(lam[-1]),
        loops=loops,
        wraps=bool(loops[-1] > 1.0),
        wrapped_channels=wrapped,
        min_base=mb,
    )
