"""Presets for neural-field frequency encodings: which bands, whether π is in them, and where each channel goes.

"The NeRF positional encoding" is three different tables. Each preset is a
frozen dataclass with the file it was read from; all resolve to a
:class:`FieldPlan` (bands ω_k to ~160 bits, a channel order, where the raw
input goes), and :func:`posenc.nerf_encoding` turns it into values within 1
float32 ulp of the formula, where the references round ``2π·x`` (or ``π·x``)
to float32 and add π/2 for the cosine.

- ``"nerf"``: bmild/nerf ``run_nerf_helpers.py`` (``get_embedder`` and
  ``Embedder``, read at c39def3): bands 2^linspace(0, L−1, L) (= 2^k),
  **no π**; output ``[x | sin(2^0 x) | cos(2^0 x) | sin(2^1 x) | …]``, each
  block one value per coordinate; copied by NeuS, IDR, VolSDF and most
  PyTorch NeRFs (``nerf-pytorch``).
- ``"nerfstudio"``: nerfstudio-project/nerfstudio
  ``nerfstudio/field_components/encodings.py`` (``NeRFEncoding``, read at
  7d09be5): 2π·x times bands 2^linspace(min_freq_exp, max_freq_exp, L);
  ``[sin block | cos block]``, each ordered coordinate-major
  (x_0's L bands, then x_1's…), the raw input **last** (``include_input``,
  default False).
- ``"tcnn"``: NVlabs/tiny-cuda-nn ``include/tiny-cuda-nn/encodings/frequency.h``
  (``frequency_encoding``, read at 922bb97): sin/cos of 2^k·π·x interleaved,
  coordinate-major: ``[sin(π x_0), cos(π x_0), sin(2π x_0), …, sin(π x_1), …]``;
  no raw input (tcnn passes other dimensions through separately).

Add a preset with :func:`register`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any, ClassVar

import numpy as np

from ..errors import PosEncError, check_int, check_real, show_value
from ..exact import DECIMAL_PREC, Ladder, decimal_pi
from ..registry import Registry, checked_results

__all__ = ["CONVENTIONS", "FieldConvention", "FieldPlan", "NeRF", "Nerfstudio", "TinyCudaNN", "get", "register"]

#: The largest band exponent: 2**52·|x| must stay below 2**53 for some |x| >= 1, and the ladder exact.
MAX_EXPONENT = 52


@dataclass(frozen=True, eq=False)
class FieldPlan:
    """What a field preset resolves to for ``n_freqs`` bands.

    Attributes:
        ladder: the bands ω_k (π and 2π folded in exactly), ``[n]``.
        order: ``"nerf"`` (per band: sin of every coordinate, then cos),
            ``"blocks"`` (all sines coordinate-major, then all cosines) or
            ``"interleaved"`` (per coordinate, per band: sin, cos).
        input_at: ``"first"`` or ``"last"``: where ``include_input`` puts x.
        include_input: the preset's default for it.
        turns: per band, ω_k/2π where that is a power of two (2π·2^e, π·2^e
            with e whole), else 0.0; None: no band is. For those bands the
            phase x·2^e is exact, so a multiple of a quarter turn gives an
            exact +0 and ±1 (:class:`posenc.fields.numpy_backend.Bands`).
    """

    ladder: Ladder
    order: str
    input_at: str
    include_input: bool
    turns: tuple[float, ...] | None = None


@checked_results(plan=FieldPlan)  # a user's plan() returning junk: a PosEncError naming the preset, at the call
class FieldConvention:
    """Base of the field presets: frozen dataclasses that implement :meth:`plan`."""

    name: ClassVar[str] = ""

    def plan(self, n_freqs: Any) -> FieldPlan:
        """Validate ``n_freqs`` and return the :class:`FieldPlan`."""
        raise NotImplementedError


def _count(n_freqs: Any) -> int:
    return check_int(n_freqs, "n_freqs", minimum=0, maximum=MAX_EXPONENT + 1)


def _bands(exponents: list[Decimal], factor: Decimal) -> Ladder:
    with localcontext() as ctx:
        ctx.prec = DECIMAL_PREC
        two = Decimal(2)
        return Ladder.from_decimals([factor * (e * two.ln()).exp() if e != e.to_integral_value() else
                                     factor * two ** int(e) for e in exponents])


def _turns(exponents: list[Decimal], shift: int) -> tuple[float, ...] | None:
    """ω_k/2π for bands 2π·2^(e + shift): 2^(e + shift) where e is whole, else 0.0 (not a power of two)."""
    out = tuple(2.0 ** (int(e) + shift) if e == e.to_integral_value() else 0.0 for e in exponents)
    return out if any(out) else None


def _linspace(lo: Decimal, hi: Decimal, n: int) -> list[Decimal]:
    """torch.linspace's points, exactly: lo + k·(hi − lo)/(n − 1)."""
    if n == 1:
        return [lo]
    with localcontext() as ctx:
        ctx.prec = DECIMAL_PREC
        return [lo + (hi - lo) * k / (n - 1) for k in range(n)]


@dataclass(frozen=True)
class NeRF(FieldConvention):
    """bmild/nerf: bands 2^k (``log_sampling``) or linspace(1, 2^(L−1), L), no π; ``[x | sin, cos per band]``."""

    name: ClassVar[str] = "nerf"

    log_sampling: bool = True  # the paper's 2^k; False: evenly spaced bands from 1 to 2^(L-1)

    def __post_init__(self) -> None:
        if not isinstance(self.log_sampling, (bool, np.bool_)):
            raise PosEncError(f"log_sampling must be True or False, got {show_value(self.log_sampling)}")

    def plan(self, n_freqs: Any) -> FieldPlan:
        n = _count(n_freqs)
        if self.log_sampling:
            exps = [Decimal(k) for k in range(n)]
            lad = _bands(exps, Decimal(1))
        else:
            lad = Ladder.from_decimals(_linspace(Decimal(1), Decimal(2) ** max(n - 1, 0), n))
        return FieldPlan(lad, "nerf", "first", True)


def _exponent(value: Any, name: str) -> Decimal:
    v = check_real(value, name)
    if not -900 <= v <= MAX_EXPONENT:
        raise PosEncError(f"{name} must lie in [-900, {MAX_EXPONENT}] (the band 2**{name} stays exact), "
                          f"got {show_value(value)}")
    return Decimal(v)


@dataclass(frozen=True)
class Nerfstudio(FieldConvention):
    """nerfstudio's ``NeRFEncoding``: 2π·x·2^linspace(min_freq_exp, max_freq_exp, L), ``[sin | cos | x]``.

    nerfstudio's own defaults differ per field (``NerfactoField``'s direction
    encoding, the vanilla ``NeRFField``: min 0, max 8 or 4); these are
    ``NeRFField``'s position encoding (10 bands, 0 … 8).
    """

    name: ClassVar[str] = "nerfstudio"

    min_freq_exp: float = 0.0  # the slowest band, 2**min_freq_exp (times 2π)
    max_freq_exp: float = 8.0  # the fastest band, 2**max_freq_exp (times 2π)

    def __post_init__(self) -> None:
        lo, hi = _exponent(self.min_freq_exp, "min_freq_exp"), _exponent(self.max_freq_exp, "max_freq_exp")
        object.__setattr__(self, "min_freq_exp", float(lo))
        object.__setattr__(self, "max_freq_exp", float(hi))

    def plan(self, n_freqs: Any) -> FieldPlan:
        n = _count(n_freqs)
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            two_pi = 2 * decimal_pi()
        exps = _linspace(Decimal(self.min_freq_exp), Decimal(self.max_freq_exp), n)
        return FieldPlan(_bands(exps, two_pi), "blocks", "last", False, _turns(exps, 0))


@dataclass(frozen=True)
class TinyCudaNN(FieldConvention):
    """tiny-cuda-nn's ``Frequency`` encoding: sin/cos of 2^k·π·x, interleaved per coordinate, no raw input."""

    name: ClassVar[str] = "tcnn"

    def plan(self, n_freqs: Any) -> FieldPlan:
        n = _count(n_freqs)
        exps = [Decimal(k) for k in range(n)]
        return FieldPlan(_bands(exps, decimal_pi()), "interleaved", "last", False, _turns(exps, -1))


#: name -> zero-argument factory of each preset; :func:`register` adds to it.
CONVENTIONS: Registry[FieldConvention] = Registry("a posenc.fields preset", FieldConvention,
    {c.name: c for c in (NeRF, Nerfstudio, TinyCudaNN)})


def register(name: Any, preset: Any) -> None:
    """Make ``nerf_encoding(..., convention=name)`` mean ``preset`` (a preset, or a zero-argument factory of one).

    >>> register("nerf-linear", NeRF(log_sampling=False))
    >>> get("nerf-linear")
    NeRF(log_sampling=False)
    """
    CONVENTIONS.register(name, preset)


def get(convention: Any) -> FieldConvention:
    """A preset by name (at its defaults), or the given preset unchanged.

    >>> get("nerfstudio")
    Nerfstudio(min_freq_exp=0.0, max_freq_exp=8.0)
    """
    return CONVENTIONS.get(convention, "convention")
