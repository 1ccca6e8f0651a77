"""YaRN (HF ``rope_type="yarn"``): interpolated slow channels, kept fast ones, a ramp between; class and reader."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...errors import PosEncError, check_real, show_value
from ...exact import decimal_context
from ...support.arguments import set_fields
from .reading import check_keys, hf_or, original_length, read_factor
from .scaled import Scaled, attention_field, checked_scaled, exact_decimal, factor, length_field, plain_ladder, positive

__all__ = ["YaRN", "read_yarn"]


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


_YARN_KEYS = {"original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow", "mscale",
              "mscale_all_dim", "truncate"}


def read_yarn(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> YaRN:
    """The reader of ``rope_type="yarn"`` (``_validate_yarn_parameters``' keys; HF's ``or`` defaults)."""
    check_keys("yarn", rope, {"factor"}, _YARN_KEYS)
    orig = original_length(cfg, rope, "yarn")
    return YaRN(
        read_factor(rope, cfg, orig),
        orig,
        beta_fast=hf_or(rope.get("beta_fast"), 32.0),  # HF: `or 32`, so 0 and None both mean 32
        beta_slow=hf_or(rope.get("beta_slow"), 1.0),
        mscale=rope.get("mscale"),
        mscale_all_dim=rope.get("mscale_all_dim"),
        attention_factor=rope.get("attention_factor"),
        truncate=rope.get("truncate", True),
    )
