"""Long-context RoPE scalings, each as Hugging Face transformers defines it.

Every variant is a frozen dataclass. :func:`posenc.rope.rope_frequencies`
takes one and asks it, through :meth:`scale`, for the inverse frequencies of
a rotary dimension ``dim`` and base ``b`` (plain RoPE: ω_i = b**(-2i/dim),
i = 0 … dim/2 - 1). The frequencies are computed with :mod:`decimal` at 70
digits, so the exact tables of :mod:`posenc.exact` stay exact; the formulas
are those of ``src/transformers/modeling_rope_utils.py`` in
huggingface/transformers (the ``_compute_*_parameters`` functions, read at
main in 2025/2026; older releases differ where noted).

Two variants depend on the sequence length ``seq_len`` (HF passes
``max(position_ids) + 1``): :class:`DynamicNTK` (its base) and
:class:`LongRoPE` (short or long factors). Their :meth:`cache_key` says what
of ``seq_len`` matters, and every table posenc builds is keyed on it: one
table never mixes two rotations. A KV cache whose keys were rotated under
one effective base must be re-rotated (or the length fixed) when the base
changes; posenc does not do that behind your back.

Reading a model's config is :func:`posenc.rope.hf_config.from_hf_config`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any, NamedTuple

import numpy as np

from ..errors import MAX_ANGLE, MAX_D_MODEL, MAX_POSITION, MIN_FREQUENCY, PosEncError, _show, check_int, check_real
from ..exact import DECIMAL_PREC, decimal_pi

__all__ = [
    "NTK",
    "SCALINGS",
    "DynamicNTK",
    "Linear",
    "Llama3",
    "LongRoPE",
    "Scaled",
    "YaRN",
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


def _d(x: float) -> Decimal:
    return Decimal(x)  # exact: a float is a dyadic rational


def _plain(dim: int, base: Decimal) -> list[Decimal]:
    """ω_i = base**(-2i/dim), i = 0 … dim/2 - 1."""
    ln = base.ln()
    return [(-(ln * (2 * i)) / dim).exp() for i in range(dim // 2)]


def _positive(value: Any, name: str) -> float:
    f = check_real(value, name)
    if not f > 0:
        raise PosEncError(f"{name} must be > 0, got {_show(value)}")
    return f


def _factor(value: Any, name: str) -> float:
    f = _positive(value, name)
    lo, hi = FACTOR_RANGE
    if not lo <= f <= hi:
        raise PosEncError(
            f"{name} must be in [2**-52, 2**52] (beyond it the scaled frequencies leave the exact range), "
            f"got {_show(value)}"
        )
    return f


def _attention_field(value: Any, name: str) -> float | None:
    if value is None:
        return None
    f = _positive(value, name)
    if f > MAX_ATTENTION:
        raise PosEncError(f"{name} must be <= 2**15 (cos·factor must stay finite in float16), got {_show(value)}")
    return f


def _length(value: Any, name: str) -> int:
    return check_int(value, name, minimum=1, maximum=int(MAX_POSITION))


def _scaled(owner: Any, dim: int, inv_freq: list[Decimal], base: Decimal, attention: Decimal | float) -> Scaled:
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


def _rescalable(owner: Any, dim: int) -> None:
    """NTK-style rescales raise the base to dim/(dim - 2): undefined for a single pair."""
    if dim < 4:
        raise PosEncError(
            f"{type(owner).__name__} needs rotary_dim >= 4: it rescales the base by factor**(dim/(dim-2)), "
            f"which divides by zero at rotary_dim {dim} (one pair, ω = 1 whatever the base)"
        )


@dataclass(frozen=True)
class Linear:
    """Position interpolation: every frequency divided by ``factor``.

    HF ``rope_type="linear"``, ``_compute_linear_scaling_rope_parameters``:
    ``inv_freq /= factor`` (equivalent to dividing the positions; credited to
    kaiokendev). Attention factor 1.

    >>> [float(w) for w in Linear(4.0).scale(4, Decimal(100), None).inv_freq]
    [0.25, 0.025]
    """

    factor: float  # > 0; 4 means positions 0 … 4L land where 0 … L did

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "Linear.factor"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            f = _d(self.factor)
            return _scaled(self, dim, [w / f for w in _plain(dim, base)], base, 1.0)


@dataclass(frozen=True)
class NTK:
    """Static "NTK-aware" rescale: base → base · factor**(dim/(dim-2)).

    The fixed-length form of HF's dynamic rule (HF has no ``"ntk"``
    rope_type; a ``_compute_ntk_parameters`` in transformers 4.4x computed
    ``base * factor ** (dim / (dim - 2))``) and
    what lucidrains/rotary-embedding-torch calls ``theta_rescale_factor``.
    The slowest channel is slowed by exactly ``factor``; the fastest is
    unchanged. Attention factor 1.

    >>> float(NTK(4.0).scale(4, Decimal(100), None).base)
    1600.0
    """

    factor: float  # > 0; the slowest channel's wavelength grows by this factor

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "NTK.factor"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        _rescalable(self, dim)
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            b = base * (_d(self.factor).ln() * dim / (dim - 2)).exp()
            if not b > 1:
                raise PosEncError(
                    f"{self!r} at rotary_dim {dim} turns base {float(base):g} into {float(b):.6g}; "
                    "the rescaled base must stay > 1"
                )
            return _scaled(self, dim, _plain(dim, b), +b, 1.0)


@dataclass(frozen=True)
class DynamicNTK:
    """NTK rescale recomputed from the current length (HF ``"dynamic"``).

    ``_compute_dynamic_ntk_parameters``: with L = max(seq_len, original_max),
    base → base · (factor·L/original_max - (factor - 1))**(dim/(dim-2)).
    At and below ``original_max`` that is the plain base, exactly (posenc
    returns the given base itself). HF's ``original_max`` is the config's
    ``max_position_embeddings``; it ignores an ``original_max_position_embeddings``
    key here (a TODO in their code). Attention factor 1.

    ``seq_len=None`` means "no longer than original_max", as HF's default.

    >>> DynamicNTK(2.0, 4096).scale(4, Decimal(100), 4096).base
    Decimal('100')
    """

    factor: float  # > 0
    original_max: int  # the length the model was trained at (HF: max_position_embeddings)

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "DynamicNTK.factor"))
        object.__setattr__(self, "original_max", _length(self.original_max, "DynamicNTK.original_max"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """The effective length max(seq_len, original_max): one base per key."""
        return self.original_max if seq_len is None else max(seq_len, self.original_max)

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        _rescalable(self, dim)
        length = self.cache_key(seq_len)
        if not isinstance(length, int):  # pragma: no cover - cache_key returns an int
            raise PosEncError(f"seq_len must be an integer, got {seq_len!r}")
        if length <= self.original_max:
            return _scaled(self, dim, _plain_prec(dim, base), base, 1.0)
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            f = _d(self.factor)
            growth = f * length / self.original_max - (f - 1)
            b = base * (growth.ln() * dim / (dim - 2)).exp()
            return _scaled(self, dim, _plain(dim, b), +b, 1.0)


def _plain_prec(dim: int, base: Decimal) -> list[Decimal]:
    with localcontext() as ctx:
        ctx.prec = DECIMAL_PREC
        return _plain(dim, base)


def _mscale(scale: Decimal, m: Decimal) -> Decimal:
    """YaRN's 0.1·m·ln(s) + 1, and 1 for s <= 1 (HF's nested ``get_mscale``)."""
    if scale <= 1:
        return Decimal(1)
    return Decimal("0.1") * m * scale.ln() + 1


@dataclass(frozen=True)
class YaRN:
    """YaRN: interpolate the slow channels, keep the fast ones, ramp between.

    HF ``rope_type="yarn"``, ``_compute_yarn_parameters`` (Peng et al. 2023,
    arXiv:2309.00071). With r_i = base**(2i/dim) and

        d(n) = dim · ln(original_max / (2π n)) / (2 ln base)

    the ramp runs from ``low = d(beta_fast)`` to ``high = d(beta_slow)``
    (floored and ceiled when ``truncate``, then clamped to [0, dim - 1]);
    ramp_i = clamp((i - low)/(high - low), 0, 1) and

        inv_freq_i = (1/(factor·r_i))·ramp_i + (1/r_i)·(1 - ramp_i).

    Attention factor: ``attention_factor`` if given; else, when both
    ``mscale`` and ``mscale_all_dim`` are set (non-zero), g(factor, mscale) /
    g(factor, mscale_all_dim) with g(s, m) = 0.1·m·ln s + 1 (1 for s <= 1);
    else g(factor, 1) = 0.1·ln(factor) + 1.

    Key names: HF reads ``truncate`` (added in 2025; True before) and
    ``original_max_position_embeddings`` (falls back to
    ``max_position_embeddings``). A transformers 4.5x release briefly
    replaced ``factor`` by max_position_embeddings/original_max when both
    were set; main uses the explicit ``factor``, as here.

    The field ``attention_factor`` is the override (None: derive it); the
    value in use is ``scale(...).attention_factor``.

    >>> round(YaRN(4.0, 32768).scale(128, Decimal(10**6), None).attention_factor, 6)
    1.138629
    """

    factor: float  # > 0; the context multiple
    original_max: int  # pretraining length (original_max_position_embeddings)
    beta_fast: float = 32.0  # rotations over original_max above which channels are kept
    beta_slow: float = 1.0  # rotations below which channels are fully interpolated
    mscale: float | None = None  # DeepSeek-style numerator of the attention factor
    mscale_all_dim: float | None = None  # ... and its denominator
    attention_factor: float | None = None  # explicit override of the above
    truncate: bool = True  # floor/ceil the ramp ends to whole channels (HF default)

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "YaRN.factor"))
        object.__setattr__(self, "original_max", _length(self.original_max, "YaRN.original_max"))
        for name in ("beta_fast", "beta_slow"):
            object.__setattr__(self, name, _positive(getattr(self, name), f"YaRN.{name}"))
        for name in ("mscale", "mscale_all_dim"):
            value = getattr(self, name)
            if value is not None:
                m = check_real(value, f"YaRN.{name}")
                if m < 0:  # 0.1·m·ln(s) + 1 would shrink, and past -10/ln(s) flip, cos and sin
                    raise PosEncError(f"YaRN.{name} must be >= 0, got {_show(value)}")
                object.__setattr__(self, name, m)
        object.__setattr__(
            self, "attention_factor", _attention_field(self.attention_factor, "YaRN.attention_factor")
        )
        if not isinstance(self.truncate, bool):
            raise PosEncError(f"YaRN.truncate must be True or False, got {self.truncate!r}")

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def _attention(self) -> Decimal:
        if self.attention_factor is not None:
            return _d(self.attention_factor)
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            f = _d(self.factor)
            if self.mscale and self.mscale_all_dim:
                return _mscale(f, _d(self.mscale)) / _mscale(f, _d(self.mscale_all_dim))
            return _mscale(f, Decimal(1))

    def ramp_range(self, dim: int, base: Decimal) -> tuple[Decimal, Decimal]:
        """The (low, high) channel indices of the ramp, as HF's ``find_correction_range``."""
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            two_pi = 2 * decimal_pi()

            def d(rotations: float) -> Decimal:
                return dim * (Decimal(self.original_max) / (_d(rotations) * two_pi)).ln() / (2 * base.ln())

            low, high = d(self.beta_fast), d(self.beta_slow)
            if self.truncate:
                low, high = Decimal(math.floor(low)), Decimal(math.ceil(high))
            return max(low, Decimal(0)), min(high, Decimal(dim - 1))

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        low, high = self.ramp_range(dim, base)
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            if low == high:
                high += Decimal("0.001")  # HF: "prevent singularity"
            f = _d(self.factor)
            out = []
            for i, w in enumerate(_plain(dim, base)):
                ramp = min(max((i - low) / (high - low), Decimal(0)), Decimal(1))
                out.append(w / f * ramp + w * (1 - ramp))
            return _scaled(self, dim, out, base, self._attention())


@dataclass(frozen=True)
class Llama3:
    """Llama 3.1's rule: keep fast channels, divide slow ones, blend between.

    HF ``rope_type="llama3"``, ``_compute_llama3_parameters`` (and Meta's
    ``apply_scaling`` in llama-models). With λ_i = 2π/ω_i, L = original_max:
    λ_i < L/high_freq_factor: ω_i kept; λ_i > L/low_freq_factor: ω_i/factor;
    otherwise s = (L/λ_i - low_freq_factor)/(high_freq_factor - low_freq_factor)
    and ω_i·((1 - s)/factor + s). Attention factor 1.

    Llama 3.1 8B: ``Llama3(8.0, 1.0, 4.0, 8192)`` with base 500000, head_dim 128.
    """

    factor: float  # > 0; the divisor of the slow channels (8 for Llama 3.1)
    low_freq_factor: float  # > 0; wavelengths above L/low are fully divided (1)
    high_freq_factor: float  # > low_freq_factor; wavelengths below L/high are kept (4)
    original_max: int  # L, the pretraining length (8192 for Llama 3.1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _factor(self.factor, "Llama3.factor"))
        for name in ("low_freq_factor", "high_freq_factor"):
            object.__setattr__(self, name, _factor(getattr(self, name), f"Llama3.{name}"))
        object.__setattr__(self, "original_max", _length(self.original_max, "Llama3.original_max"))
        if not self.high_freq_factor > self.low_freq_factor:
            raise PosEncError(
                f"Llama3.high_freq_factor must be > low_freq_factor (the blend divides by their "
                f"difference), got high_freq_factor={self.high_freq_factor}, "
                f"low_freq_factor={self.low_freq_factor}"
            )

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            two_pi = 2 * decimal_pi()
            f, lo, hi = _d(self.factor), _d(self.low_freq_factor), _d(self.high_freq_factor)
            length = Decimal(self.original_max)
            out = []
            for w in _plain(dim, base):
                lam = two_pi / w
                if lam < length / hi:
                    out.append(+w)
                elif lam > length / lo:
                    out.append(w / f)
                else:
                    s = (length / lam - lo) / (hi - lo)
                    out.append(w * ((1 - s) / f + s))
            return _scaled(self, dim, out, base, 1.0)


def _factor_list(values: Any, name: str) -> tuple[float, ...]:
    if isinstance(values, np.ndarray) and values.ndim == 1:
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise PosEncError(f"{name} must be a list of numbers > 0, got {_show(values)}")
    if not values:
        raise PosEncError(f"{name} must hold rotary_dim/2 factors (at least one), got {_show(values)}")
    if len(values) > MAX_D_MODEL // 2:
        raise PosEncError(f"{name} must have at most {MAX_D_MODEL // 2} entries (rotary_dim/2), got {len(values)}")
    return tuple(_factor(v, f"{name}[{i}]") for i, v in enumerate(values))


@dataclass(frozen=True)
class LongRoPE:
    """LongRoPE (Phi-3): one rescale factor per channel, short or long.

    HF ``rope_type="longrope"`` (legacy ``"su"``), ``_compute_longrope_parameters``:
    ω_i = 1/(ext_i · base**(2i/dim)) with ext = ``long_factor`` when
    seq_len > original_max, else ``short_factor``. Attention factor:
    ``attention_factor`` if given; else with s = ``factor`` (HF: the config's
    max_position_embeddings / original_max when ``factor`` is unset),
    sqrt(1 + ln s / ln original_max), and 1 for s <= 1.

    ``seq_len=None`` selects the short factors (HF's default).
    """

    short_factor: tuple[float, ...]  # dim/2 factors used up to original_max
    long_factor: tuple[float, ...]  # dim/2 factors used beyond it
    original_max: int  # pretraining length (original_max_position_embeddings)
    attention_factor: float | None = None  # explicit override; else derived from factor
    factor: float | None = None  # context multiple for the derived attention factor; None → 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "short_factor", _factor_list(self.short_factor, "LongRoPE.short_factor"))
        object.__setattr__(self, "long_factor", _factor_list(self.long_factor, "LongRoPE.long_factor"))
        object.__setattr__(self, "original_max", _length(self.original_max, "LongRoPE.original_max"))
        if len(self.short_factor) != len(self.long_factor):
            raise PosEncError(
                f"LongRoPE.short_factor and long_factor must have the same length (rotary_dim/2), "
                f"got {len(self.short_factor)} and {len(self.long_factor)}"
            )
        if self.factor is not None:
            object.__setattr__(self, "factor", _factor(self.factor, "LongRoPE.factor"))
        object.__setattr__(
            self, "attention_factor", _attention_field(self.attention_factor, "LongRoPE.attention_factor")
        )

    def _attention(self) -> Decimal:
        if self.attention_factor is not None:
            return _d(self.attention_factor)
        s = self.factor
        if s is None or s <= 1:
            return Decimal(1)
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            return (1 + _d(s).ln() / Decimal(self.original_max).ln()).sqrt()

    def cache_key(self, seq_len: int | None) -> Hashable:
        """True when the long factors apply (seq_len > original_max)."""
        return seq_len is not None and seq_len > self.original_max

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        ext = self.long_factor if self.cache_key(seq_len) else self.short_factor
        if len(ext) != dim // 2:
            raise PosEncError(
                f"LongRoPE factors must number rotary_dim/2 = {dim // 2}, got {len(ext)} in {_show(self)}"
            )
        with localcontext() as ctx:
            ctx.prec = DECIMAL_PREC
            out = [w / _d(e) for w, e in zip(_plain(dim, base), ext, strict=True)]
            return _scaled(self, dim, out, base, self._attention())


#: Every scaling variant, for isinstance checks.
SCALINGS = (Linear, NTK, DynamicNTK, YaRN, Llama3, LongRoPE)
