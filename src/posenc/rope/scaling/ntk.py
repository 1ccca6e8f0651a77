"""NTK-aware rescaling, static and dynamic (HF ``rope_type="dynamic"``): the classes and the config reader."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...errors import PosEncError
from ...exact import decimal_context
from ...support.arguments import set_fields
from .reading import check_keys, max_positions
from .scaled import Scaled, check_rescalable, checked_scaled, exact_decimal, factor, length_field, plain_ladder

__all__ = ["NTK", "DynamicNTK", "read_dynamic"]


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
        set_fields(self, factor=factor(self.factor, "NTK.factor"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        check_rescalable(self, dim)
        with decimal_context():
            b = base * (exact_decimal(self.factor).ln() * dim / (dim - 2)).exp()
            if not b > 1:
                raise PosEncError(
                    f"{self!r} at rotary_dim {dim} turns base {float(base):g} into {float(b):.6g}; "
                    "the rescaled base must stay > 1"
                )
            return checked_scaled(self, dim, plain_ladder(dim, b), +b, 1.0)


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
        set_fields(self, factor=factor(self.factor, "DynamicNTK.factor"))
        set_fields(self, original_max=length_field(self.original_max, "DynamicNTK.original_max"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """The effective length max(seq_len, original_max): one base per key."""
        return self.effective_length(seq_len)

    def effective_length(self, seq_len: int | None) -> int:
        """max(seq_len, original_max); ``original_max`` for ``seq_len=None``."""
        return self.original_max if seq_len is None else max(seq_len, self.original_max)

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        check_rescalable(self, dim)
        length = self.effective_length(seq_len)
        if length <= self.original_max:
            return checked_scaled(self, dim, plain_ladder(dim, base), base, 1.0)
        with decimal_context():
            f = exact_decimal(self.factor)
            growth = f * length / self.original_max - (f - 1)
            b = base * (growth.ln() * dim / (dim - 2)).exp()
            return checked_scaled(self, dim, plain_ladder(dim, b), +b, 1.0)


def read_dynamic(rope: Mapping[str, Any], cfg: Mapping[str, Any]) -> DynamicNTK:
    """The reader of ``rope_type="dynamic"``: ``factor``, and the config's max_position_embeddings."""
    check_keys("dynamic", rope, {"factor"}, {"original_max_position_embeddings"})
    # HF uses max_position_embeddings here (original_max_position_embeddings is read by no code path)
    max_pos = max_positions(cfg)
    if max_pos is None:
        raise PosEncError("rope_type 'dynamic' needs 'max_position_embeddings' (its original length)")
    return DynamicNTK(rope["factor"], max_pos)
