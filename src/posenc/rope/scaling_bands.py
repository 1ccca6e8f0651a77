"""RoPE scalings that treat frequency bands differently: YaRN, Llama 3 and LongRoPE, as HF defines them.

See :mod:`posenc.rope.scaling` for how a variant is used and where the
formulas were read.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from ..errors import MAX_D_MODEL, PosEncError, check_real, show_value
from ..exact import decimal_context, decimal_pi
from ..support.arguments import set_fields
from ..support.compile import outside_compile
from .scaled import (
    Scaled,
    attention_field,
    checked_scaled,
    exact_decimal,
    factor,
    length_field,
    plain_ladder,
    positive,
)

__all__ = ["Llama3", "LongRoPE", "YaRN"]


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

    @outside_compile("YaRN")
    def __post_init__(self) -> None:
        set_fields(self, factor=factor(self.factor, "YaRN.factor"))
        set_fields(self, original_max=length_field(self.original_max, "YaRN.original_max"))
        for name in ("beta_fast", "beta_slow"):
            set_fields(self, **{name: positive(getattr(self, name), f"YaRN.{name}")})
        for name in ("mscale", "mscale_all_dim"):
            value = getattr(self, name)
            if value is not None:
                m = check_real(value, f"YaRN.{name}")
                if m < 0:  # 0.1·m·ln(s) + 1 would shrink, and past -10/ln(s) flip, cos and sin
                    raise PosEncError(f"YaRN.{name} must be >= 0, got {show_value(value)}")
                set_fields(self, **{name: m})
        set_fields(self, attention_factor=attention_field(self.attention_factor, "YaRN.attention_factor"))
        if not isinstance(self.truncate, bool):
            raise PosEncError(f"YaRN.truncate must be True or False, got {self.truncate!r}")

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def _attention(self) -> Decimal:
        if self.attention_factor is not None:
            return exact_decimal(self.attention_factor)
        with decimal_context():
            f = exact_decimal(self.factor)
            if self.mscale and self.mscale_all_dim:
                return _mscale(f, exact_decimal(self.mscale)) / _mscale(f, exact_decimal(self.mscale_all_dim))
            return _mscale(f, Decimal(1))

    def ramp_range(self, dim: int, base: Decimal) -> tuple[Decimal, Decimal]:
        """The (low, high) channel indices of the ramp, by HF's float64 rule (``find_correction_range``).

        Checkpoints were trained with the bounds transformers computes in
        Python floats (``math.log``, then ``floor``/``ceil``), so posenc
        computes them the same way: at contrived bases the exactly rounded
        d(n) lands on the other side of an integer (base
        91830668759514.55: 6 exactly, 5 in float64), and the model's ramp is
        the float64 one. The ramp between the bounds is exact.
        """
        b = float(base)

        def d(rotations: float) -> float:
            return (dim * math.log(self.original_max / (rotations * 2 * math.pi))) / (2 * math.log(b))

        low, high = d(self.beta_fast), d(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        return Decimal(max(low, 0)), Decimal(min(high, dim - 1))

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        low, high = self.ramp_range(dim, base)
        with decimal_context():
            if low == high:
                high += Decimal("0.001")  # HF: "prevent singularity"
            f = exact_decimal(self.factor)
            out = []
            for i, w in enumerate(plain_ladder(dim, base)):
                ramp = min(max((i - low) / (high - low), Decimal(0)), Decimal(1))
                out.append(w / f * ramp + w * (1 - ramp))
            return checked_scaled(self, dim, out, base, self._attention())


@dataclass(frozen=True)
class Llama3:
    """Llama 3.1's rule: keep fast channels, divide slow ones, blend between.

    HF ``rope_type="llama3"``, ``_compute_llama3_parameters`` (and Meta's
    ``apply_scaling`` in llama-models). With λ_i = 2π/ω_i, L = original_max:
    λ_i < L/high_freq_factor: ω_i kept; λ_i > L/low_freq_factor: ω_i/factor;
    otherwise s = (L/λ_i - low_freq_factor)/(high_freq_factor - low_freq_factor)
    and ω_i·((1 - s)/factor + s). Attention factor 1.

    ``low_freq_factor == high_freq_factor`` (Llama 4 Scout: both 1) leaves no
    blend: ω_i is kept below L/low and divided above it. transformers only
    warns about it (``_validate_llama3_parameters``) and computes exactly that;
    a wavelength equal to L/low, where its blend would divide 0 by 0, keeps ω_i.

    Llama 3.1 8B: ``Llama3(8.0, 1.0, 4.0, 8192)`` with base 500000, head_dim 128.
    """

    factor: float  # > 0; the divisor of the slow channels (8 for Llama 3.1)
    low_freq_factor: float  # > 0; wavelengths above L/low are fully divided (1)
    high_freq_factor: float  # >= low_freq_factor; wavelengths below L/high are kept (4)
    original_max: int  # L, the pretraining length (8192 for Llama 3.1)

    @outside_compile("Llama3")
    def __post_init__(self) -> None:
        set_fields(self, factor=factor(self.factor, "Llama3.factor"))
        for name in ("low_freq_factor", "high_freq_factor"):
            set_fields(self, **{name: factor(getattr(self, name), f"Llama3.{name}")})
        set_fields(self, original_max=length_field(self.original_max, "Llama3.original_max"))
        if not self.high_freq_factor >= self.low_freq_factor:
            raise PosEncError(
                f"Llama3.high_freq_factor must be >= low_freq_factor, got high_freq_factor="
                f"{self.high_freq_factor}, low_freq_factor={self.low_freq_factor}"
            )

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        with decimal_context():
            two_pi = 2 * decimal_pi()
            f = exact_decimal(self.factor)
            lo, hi = exact_decimal(self.low_freq_factor), exact_decimal(self.high_freq_factor)
            length = Decimal(self.original_max)
            out = []
            for w in plain_ladder(dim, base):
                lam = two_pi / w
                if lam < length / hi:
                    out.append(+w)
                elif lam > length / lo:
                    out.append(w / f)
                elif hi == lo:  # no blend band: λ = L/lo exactly
                    out.append(+w)
                else:
                    s = (length / lam - lo) / (hi - lo)
                    out.append(w * ((1 - s) / f + s))
            return checked_scaled(self, dim, out, base, 1.0)


def _factor_list(values: Any, name: str) -> tuple[float, ...]:
    if isinstance(values, np.ndarray) and values.ndim == 1:
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise PosEncError(f"{name} must be a list of numbers > 0, got {show_value(values)}")
    if not values:
        raise PosEncError(f"{name} must hold rotary_dim/2 factors (at least one), got {show_value(values)}")
    if len(values) > MAX_D_MODEL // 2:
        raise PosEncError(f"{name} must have at most {MAX_D_MODEL // 2} entries (rotary_dim/2), got {len(values)}")
    return tuple(factor(v, f"{name}[{i}]") for i, v in enumerate(values))


@dataclass(frozen=True)
class LongRoPE:
    """LongRoPE (Phi-3): one rescale factor per channel, short or long.

    HF ``rope_type="longrope"`` (legacy ``"su"``), ``_compute_longrope_parameters``:
    ω_i = 1/(ext_i · base**(2i/dim)) with ext = ``long_factor`` when
    seq_len > original_max, else ``short_factor``. Attention factor:
    ``attention_factor`` if given; else with s = ``factor`` (HF: the config's
    max_position_embeddings / original_max when ``factor`` is unset),
    sqrt(1 + ln s / ln original_max), and 1 for s <= 1.

    ``short_mscale``/``long_mscale`` (Phi-3.5-MoE, ``PhimoeRotaryEmbedding``):
    when set, the attention factor of the short (long) regime is that value
    instead.

    ``seq_len=None`` selects the short factors (HF's default).
    """

    short_factor: tuple[float, ...]  # dim/2 factors used up to original_max
    long_factor: tuple[float, ...]  # dim/2 factors used beyond it
    original_max: int  # pretraining length (original_max_position_embeddings)
    attention_factor: float | None = None  # explicit override; else derived from factor
    factor: float | None = None  # context multiple for the derived attention factor; None → 1
    short_mscale: float | None = None  # Phi-3.5-MoE: the attention factor up to original_max
    long_mscale: float | None = None  # ... and beyond it

    @outside_compile("LongRoPE")
    def __post_init__(self) -> None:
        set_fields(self, short_factor=_factor_list(self.short_factor, "LongRoPE.short_factor"))
        set_fields(self, long_factor=_factor_list(self.long_factor, "LongRoPE.long_factor"))
        set_fields(self, original_max=length_field(self.original_max, "LongRoPE.original_max"))
        if len(self.short_factor) != len(self.long_factor):
            raise PosEncError(
                f"LongRoPE.short_factor and long_factor must have the same length (rotary_dim/2), "
                f"got {len(self.short_factor)} and {len(self.long_factor)}"
            )
        if self.factor is not None:
            set_fields(self, factor=factor(self.factor, "LongRoPE.factor"))
        set_fields(self, attention_factor=attention_field(self.attention_factor, "LongRoPE.attention_factor"))
        for name in ("short_mscale", "long_mscale"):
            set_fields(self, **{name: attention_field(getattr(self, name), f"LongRoPE.{name}")})

    def _attention(self, long: bool = False) -> Decimal:
        mscale = self.long_mscale if long else self.short_mscale
        if mscale is not None:
            return exact_decimal(mscale)
        if self.attention_factor is not None:
            return exact_decimal(self.attention_factor)
        s = self.factor
        if s is None or s <= 1:
            return Decimal(1)
        with decimal_context():
            return (1 + exact_decimal(s).ln() / Decimal(self.original_max).ln()).sqrt()

    def cache_key(self, seq_len: int | None) -> Hashable:
        """True when the long factors apply (seq_len > original_max)."""
        return seq_len is not None and seq_len > self.original_max

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        long = bool(self.cache_key(seq_len))
        ext = self.long_factor if long else self.short_factor
        if len(ext) != dim // 2:
            raise PosEncError(
                f"LongRoPE factors must number rotary_dim/2 = {dim // 2}, got {len(ext)} in {show_value(self)}"
            )
        with decimal_context():
            out = [w / exact_decimal(e) for w, e in zip(plain_ladder(dim, base), ext, strict=True)]
            return checked_scaled(self, dim, out, base, self._attention(long))
