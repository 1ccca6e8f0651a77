"""Gemma 4's ``"proportional"`` RoPE: the first pairs of the whole head's ladder, rotated as pairs (i, i + h_d/2).

transformers 5.23 ``modeling_rope_utils._compute_proportional_rope_parameters``
(Gemma 4's full-attention layers, ``Gemma4TextConfig``'s default
``{"rope_type": "proportional", "partial_rotary_factor": 0.25}``):

- k = ``int(partial_rotary_factor * head_dim // 2)`` pairs turn, with
  ω_i = base**(-2i/h_d) / factor, i < k: the ladder of the *whole* head
  (not of the rotary part, as partial RoPE elsewhere), cut after k rungs;
- the other h_d/2 - k entries of ``inv_freq`` are 0, and the modeling code's
  ``rotate_half`` over the whole head pairs channel i with i + h_d/2.

So pair i is (i, i + h_d/2) for i < k, and channels k … h_d/2 - 1 and
h_d/2 + k … h_d - 1 pass through (angle 0: cos 1, sin 0). posenc reads it as
``rotary_dim = 2k``, the scaling :class:`Proportional` (the cut ladder) and
the layout ``"head_half"`` (:data:`posenc.support.vocabulary.RopeLayout`); :func:`rotate_head_half` rotates in it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import PosEncError, check_channels, check_int, show_value
from ...exact import decimal_context, ladder_digits
from ...support.arguments import set_fields
from .reading import check_keys
from .scaled import Scaled, checked_scaled, exact_decimal, factor

__all__ = ["Proportional", "proportional_rotary_dim", "read_proportional", "rotate_head_half"]



@dataclass(frozen=True)
class Proportional:
    """ω_i = base**(-2i/head_dim) / factor for the first rotary_dim/2 pairs (Gemma 4's full layers).

    >>> [float(w) for w in Proportional(8).scale(2, Decimal(10000), None).inv_freq]
    [1.0]
    >>> [float(w) for w in Proportional(8, 2.0).scale(4, Decimal(10000), None).inv_freq]
    [0.5, 0.05]
    """

    head_dim: int  # the whole head: the ladder's denominator
    factor: float = 1.0  # the rope dict's ``factor`` (HF divides inv_freq by it; Gemma 4 leaves it at 1)

    def __post_init__(self) -> None:
        set_fields(self, head_dim=check_channels(self.head_dim, "Proportional.head_dim"),
                   factor=factor(self.factor, "Proportional.factor"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        if dim > self.head_dim:
            raise PosEncError(f"{self!r}: rotary_dim {dim} must be <= head_dim {self.head_dim}")
        with decimal_context():
            f = exact_decimal(self.factor)
            ladder = ladder_digits(dim // 2, base, Fraction(self.head_dim, 2))
            return checked_scaled(self, dim, [w / f for w in ladder], base, 1.0)


def proportional_rotary_dim(head_dim: int, prf: float) -> int:
    """2k, k = ``int(partial_rotary_factor * head_dim // 2)`` as transformers computes it (float floor division)."""
    k = int(prf * head_dim // 2)
    if k < 1:
        raise PosEncError(f"proportional RoPE turns int(partial_rotary_factor * head_dim // 2) = "
                          f"int({prf} * {head_dim} // 2) = {k} pairs; it must be at least 1")
    return 2 * k


def read_proportional(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> Proportional:
    """The registry's factory for ``rope_type="proportional"`` (keys of ``_validate_proportional_rope_parameters``)."""
    check_keys("proportional", rope, set(), {"factor"})
    if cfg.get("head_dim") is not None:
        head_dim = check_channels(cfg["head_dim"], "head_dim")
    else:
        hidden = check_int(cfg.get("hidden_size"), "hidden_size", minimum=1)
        heads = check_int(cfg.get("num_attention_heads"), "num_attention_heads", minimum=1)
        head_dim = check_channels(hidden // heads, "head_dim = hidden_size // num_attention_heads")
    value = rope.get("factor", 1.0)
    if value is None:
        raise PosEncError(f"the 'proportional' rope dict's factor must be a number, got {show_value(value)}")
    return Proportional(head_dim, value)


def rotate_head_half(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_dim: int) -> np.ndarray:
    """Rotate pairs (i, i + h_d/2), i < rotary_dim/2, of x by (cos, sin) ``[..., rotary_dim/2]``; the rest copied."""
    h = x.shape[-1]
    n = rotary_dim // 2
    if h % 2 or n > h // 2:
        raise PosEncError(f"layout 'head_half' needs an even head_dim >= rotary_dim, got {h} and {rotary_dim}")
    ct = cos.dtype
    a = x[..., :n].astype(ct, copy=False)
    b = x[..., h // 2:h // 2 + n].astype(ct, copy=False)
    out = np.empty(np.broadcast_shapes(x.shape, (*cos.shape[:-1], h)), dtype=x.dtype)
    out[...] = x
    out[..., :n] = a * cos - b * sin
    out[..., h // 2:h // 2 + n] = b * cos + a * sin
    return out
