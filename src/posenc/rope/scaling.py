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

Reading a model's config is :func:`posenc.hf.config.from_hf_config`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from decimal import Decimal

from ..errors import PosEncError
from ..exact import decimal_context
from ..support.arguments import set_fields
from ..support.compile import outside_compile
from .scaled import (
    Scaled,
    check_rescalable,
    checked_scaled,
    exact_decimal,
    factor,
    length_field,
    plain_ladder,
)
from .scaling_bands import Llama3, LongRoPE, YaRN

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

    @outside_compile("Linear")
    def __post_init__(self) -> None:
        set_fields(self, factor=factor(self.factor, "Linear.factor"))

    def cache_key(self, seq_len: int | None) -> Hashable:
        """Frequencies do not depend on the sequence length."""
        return None

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
        with decimal_context():
            f = exact_decimal(self.factor)
            return checked_scaled(self, dim, [w / f for w in plain_ladder(dim, base)], base, 1.0)


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

    @outside_compile("NTK")
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

    @outside_compile("DynamicNTK")
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


#: Every scaling variant, for isinstance checks.
SCALINGS = (Linear, NTK, DynamicNTK, YaRN, Llama3, LongRoPE)
