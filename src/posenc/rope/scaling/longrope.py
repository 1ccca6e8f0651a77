"""LongRoPE (Phi-3; HF ``rope_type="longrope"``): per-channel short and long factors; the class and its reader."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from ...errors import MAX_D_MODEL, PosEncError, show_value
from ...exact import decimal_context
from ...support.arguments import set_fields
from .reading import check_keys, original_length, read_factor
from .scaled import Scaled, attention_field, checked_scaled, exact_decimal, factor, length_field, plain_ladder

__all__ = ["LongRoPE", "read_longrope"]


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


def read_longrope(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> LongRoPE:
    """The reader of ``rope_type="longrope"`` (legacy ``"su"``)."""
    # short_mscale/long_mscale: Phi-3.5-MoE (PhimoeRotaryEmbedding multiplies them into cos and sin)
    check_keys("longrope", rope, {"short_factor", "long_factor"},
               {"original_max_position_embeddings", "attention_factor", "factor", "short_mscale", "long_mscale"})
    orig = original_length(cfg, rope, "longrope")
    return LongRoPE(rope["short_factor"], rope["long_factor"], orig, attention_factor=rope.get("attention_factor"),
                    factor=read_factor(rope, cfg, orig), short_mscale=rope.get("short_mscale"),
                    long_mscale=rope.get("long_mscale"))
