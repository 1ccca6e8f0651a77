"""Linear position interpolation (HF ``rope_type="linear"``): the class and its config reader."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...exact import decimal_context
from ...support.arguments import set_fields
from .reading import check_keys
from .scaled import Scaled, checked_scaled, exact_decimal, factor, plain_ladder

__all__ = ["Linear", "read_linear"]


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
        set_fields(self, factor=factor(self.factor, "Linear.factor"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        with decimal_context():
            f = exact_decimal(self.factor)
            return checked_scaled(self, dim, [w / f for w in plain_ladder(dim, base)], base, 1.0)


def read_linear(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> Linear:
    """The reader of ``rope_type="linear"``: its one key, ``factor``."""
    check_keys("linear", rope, {"factor"}, set())
    return Linear(rope["factor"])
