"""What a sinusoid convention resolves to for one width: the :class:`Plan` every backend renders.

A convention (:mod:`posenc.sinusoidal.conventions`) holds a framework's
settings; its ``plan(d_model)`` is the backend-neutral answer: the
frequencies, where each sine and cosine goes, the angle of token 0 and the
row that is zero. Every backend (NumPy, torch, JAX) renders this plan and
nothing else, so no backend re-derives a convention
(:mod:`posenc.sinusoidal.backend`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..exact import Ladder
from ..support.vocabulary import ChannelLayout

__all__ = ["Plan", "Planned"]


@dataclass(frozen=True, eq=False)
class Plan:
    """What a convention resolves to for one ``d_model``.

    Rendering: ``len(ladder)`` frequencies ω_k; sin(θ ω_k) and cos(θ ω_k)
    placed by ``layout`` into ``max(2·len(ladder), d_model)`` channels
    (unused channels zero), then cut to the first ``d_model`` channels (an
    odd ``d_model`` thus drops the last cosine), where θ = position + origin.
    The row whose θ equals ``zero_at`` is all zeros.

    Attributes:
        ladder: the frequencies.
        layout: ``"interleaved"`` or ``"split"``.
        d_model: output channels.
        origin: θ of token position 0.
        zero_at: the θ whose row is zero (fairseq's padding row), or None.

    >>> from posenc.sinusoidal.conventions import Fairseq
    >>> plan = Fairseq().plan(5)
    >>> len(plan.ladder), plan.layout, plan.d_model, plan.origin, plan.zero_at
    (2, 'split', 5, 2, 1)
    """

    ladder: Ladder
    layout: ChannelLayout
    d_model: int
    origin: int = 0
    zero_at: int | None = None

    @property
    def computed(self) -> int:
        """Channels computed before the cut: ``max(2·len(ladder), d_model)``."""
        return max(2 * len(self.ladder), self.d_model)


class Planned(Protocol):
    """What the sinusoid's functions read of a convention: its plan for a width (every preset has one)."""

    def plan(self, d_model: Any) -> Plan: ...
