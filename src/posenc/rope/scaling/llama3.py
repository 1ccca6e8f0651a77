"""Llama 3's smoothed frequency bands (HF ``rope_type="llama3"``): the class and its config reader."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...errors import PosEncError
from ...exact import decimal_context, decimal_pi
from ...support.arguments import set_fields
from .reading import check_keys, original_length
from .scaled import Scaled, checked_scaled, exact_decimal, factor, length_field, plain_ladder

__all__ = ["Llama3", "read_llama3"]


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


def read_llama3(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> Llama3:
    """The reader of ``rope_type="llama3"``."""
    check_keys("llama3", rope, {"factor", "low_freq_factor", "high_freq_factor"},
               {"original_max_position_embeddings"})
    return Llama3(rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"],
                  original_length(cfg, rope, "llama3"))
