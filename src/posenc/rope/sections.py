"""Multi-axis RoPE: which rotary pair turns with which position axis, on which ladder.

Vision and multimodal models give each token several positions — (t, h, w)
for Qwen2-VL's M-RoPE, (h, w) for its vision tower — and split a head's
rotary pairs among them. Pair i turns by ω_i·p_a(i), where a(i) is the axis
that pair serves. :class:`Sections` says which axis each pair serves and which
ladder it uses:

- ``layout="contiguous"`` (Qwen2-VL, Qwen2.5-VL): the first ``sizes[0]``
  pairs serve axis 0, the next ``sizes[1]`` axis 1, and so on
  (transformers ``Qwen2VLRotaryEmbedding.recomposition_frequencies``: the
  ``mrope_section`` chunks of the d/2 frequencies, chunk i from axis i % 3).
- ``layout="interleaved"`` (Qwen3-VL): axis a >= 1 takes pairs
  a, a + n, a + 2n, … (``sizes[a]`` of them, n axes), axis 0 every other
  pair (transformers ``Qwen3VLTextRotaryEmbedding.recomposition_frequencies``:
  pairs ``slice(offset, 3·section[offset], 3)`` come from h (offset 1) and w
  (offset 2), the rest from t). This spreads every axis over fast and slow
  frequencies, where the contiguous layout gives w only the slowest.
- ``ladder="shared"`` (M-RoPE): one ladder ω_i = θ^(-2i/r) over the whole
  rotary dimension, each pair keeping its own ω_i.
- ``ladder="per_axis"`` (axial RoPE, the Qwen2-VL vision tower's
  ``Qwen2VLVisionRotaryEmbedding``): the j-th pair of axis a turns at
  θ^(-2j/(2·sizes[a])), a full ladder over the axis's own share.

Positions carry a trailing axis: ``[..., s, n_axes]``. Hugging Face passes
``position_ids`` as ``[n_axes, b, s]`` (``[3, b, s]`` for M-RoPE); posenc
takes ``np.moveaxis(position_ids, 0, -1)`` (``position_ids.permute(1, 2, 0)``
in torch). For text tokens every axis holds the same position, and the
rotation is exactly plain RoPE with the same ladder.

Exactness and speed: pair i at a token equals pair i of a text token at
position p_a(i), so the tables are the plain RoPE rows of the few positions
a batch holds (computed once each by :mod:`posenc.exact`), placed pair by
pair (:mod:`posenc.exact.placement`): a table costs about what writing it
costs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from ..errors import MAX_D_MODEL, PosEncError, check_int, shape_text, show_value
from ..exact import ladder_digits
from ..support.arguments import check_choice, set_fields
from ..support.vocabulary import LADDER_SHARINGS, SECTION_LAYOUTS, LadderSharing, SectionLayout

__all__ = [
    "LADDERS",
    "SECTION_LAYOUTS",
    "Sections",
    "check_sections",
    "per_axis_frequencies",
]

#: The ``ladder`` option (:data:`posenc.support.vocabulary.LadderSharing`): ``"shared"``, one ladder over the rotary
#: dimension (M-RoPE); ``"per_axis"``, each axis its own (axial).
LADDERS = LADDER_SHARINGS


#: A head holds at most this many rotary pairs, so sections can name at most this many axes (one pair each).
MAX_PAIRS = MAX_D_MODEL // 2


def _read_sizes(raw: Any) -> tuple[int, ...]:
    """The pair counts, read one by one and no further than a head holds (a list of 10**6, an endless iterator)."""
    sizes: list[int] = []
    total = 0
    for k, v in enumerate(itertools.islice(raw, MAX_PAIRS + 1)):
        sizes.append(check_int(v, f"sections[{k}]", minimum=1, maximum=MAX_PAIRS))
        total += sizes[-1]
        if total > MAX_PAIRS:
            raise PosEncError(
                f"sections must hold at most {MAX_PAIRS} pairs in all (a head's rotary_dim/2, at most "
                f"{MAX_D_MODEL}/2), got more in the first {k + 1} sizes {shape_text(sizes)}"
            )
    return tuple(sizes)


@dataclass(frozen=True)
class Sections:
    """How a head's rotary pairs are split among position axes.

    Attributes:
        sizes: pairs per axis, e.g. ``(16, 24, 24)`` for Qwen2-VL's (t, h, w)
            (HF ``mrope_section``, counted in pairs, i.e. rotary_dim/2 in all).
        layout: ``"contiguous"`` or ``"interleaved"`` (see the module docstring).
        ladder: ``"shared"`` or ``"per_axis"``.

    >>> Sections((2, 1, 1), "interleaved").pair_axes().tolist()
    [0, 1, 2, 0]
    >>> Sections((2, 1, 1)).pair_axes().tolist()
    [0, 0, 1, 2]
    """

    sizes: tuple[int, ...]
    layout: SectionLayout = "contiguous"  # "contiguous" (Qwen2-VL) or "interleaved" (Qwen3-VL)
    ladder: LadderSharing = "shared"  # "shared" (M-RoPE) or "per_axis" (axial: the Qwen2-VL vision tower)

    def __post_init__(self) -> None:
        raw = self.sizes
        # not check_items: it takes a tuple of everything, and an endless iterator never ends
        if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__") or getattr(raw, "ndim", 1) == 0:
            raise PosEncError(f"sections must be a sequence of pair counts, one per axis (e.g. (16, 24, 24)), "
                              f"got {show_value(raw)}")
        sizes = _read_sizes(raw)
        if not sizes:
            raise PosEncError("sections must name at least one axis, e.g. (16, 24, 24)")
        set_fields(self, sizes=sizes, layout=check_choice(self.layout, "section_layout", SECTION_LAYOUTS))
        set_fields(self, ladder=check_choice(self.ladder, "ladder", LADDERS))
        if self.layout == "interleaved":
            n, total = len(sizes), sum(sizes)
            for a, s in enumerate(sizes[1:], start=1):
                if a + n * (s - 1) >= total:
                    raise PosEncError(
                        f"interleaved sections {shape_text(sizes)}: axis {a} takes pairs {a}, {a + n}, … "
                        f"{a + n * (s - 1)}, "
                        f"past the last pair {total - 1}; axis 0 must hold at least as many pairs as any other"
                    )

    @property
    def shown(self) -> str:
        """The sizes for a message, clipped to a line: ``(16, 24, 24)``."""
        return shape_text(self.sizes)

    @property
    def n_axes(self) -> int:
        """Position axes (the trailing dimension of the positions)."""
        return len(self.sizes)

    @property
    def pairs(self) -> int:
        """Rotary pairs in all: rotary_dim / 2."""
        return sum(self.sizes)

    def pair_axes(self) -> np.ndarray:
        """The axis each pair serves, int ``[pairs]``."""
        n = self.n_axes
        if self.layout == "contiguous":
            return np.repeat(np.arange(n), self.sizes)
        axes = np.zeros(self.pairs, dtype=np.int64)
        for a, s in enumerate(self.sizes[1:], start=1):
            axes[a : a + n * s : n] = a
        return axes


def check_sections(sections: Any, section_layout: Any = None, ladder: Any = None) -> Sections | None:
    """The :class:`Sections` an entry point's (sections, section_layout, ladder) arguments mean.

    ``sections`` is None (plain RoPE), a sequence of pair counts, or a
    :class:`Sections` (then leave the other two out). ``section_layout`` and
    ``ladder`` None are left out (``"contiguous"`` and ``"shared"``); either
    one passed without sections, or beside a Sections, is refused by name.
    """
    given = ", ".join(f"{k}={show_value(v)}" for k, v in (("section_layout", section_layout), ("ladder", ladder))
                      if v is not None)  # only what was passed, for the message
    if sections is None:
        if given:
            raise PosEncError(f"{given}: only multi-axis RoPE has a section layout and a ladder, so they need "
                              "sections (pairs per axis)")
        return None
    if isinstance(sections, Sections):
        if given:
            raise PosEncError(f"{given} beside a Sections: pass section_layout and ladder inside the Sections")
        return sections
    return Sections(sections, "contiguous" if section_layout is None else section_layout,
                    "shared" if ladder is None else ladder)


def per_axis_frequencies(sections: Sections, base: Decimal) -> list[Decimal]:
    """ω of every pair with per-axis ladders: the j-th pair of axis a gets base^(-j/sizes[a]).

    That is base^(-2j/d_a) over the axis's share d_a = 2·sizes[a] channels,
    as ``Qwen2VLVisionRotaryEmbedding`` (``inv_freq = 1/θ^(arange(0, dim, 2)/dim)``,
    dim = head_dim/2 per axis).
    """
    ladders = [iter(ladder_digits(size, base, size)) for size in sections.sizes]
    return [next(ladders[a]) for a in sections.pair_axes().tolist()]
