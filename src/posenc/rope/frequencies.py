"""The rotary frequency ladder: ω_i over the rotary dimension, after any scaling.

Rotary position embeddings (RoPE): the seed's shift rotation T_k, applied to q and k.

Seed, Ex 5: moving a (sin, cos) pair from position p to p + k is a rotation
by ω_i·k. RoPE (Su et al. 2021, arXiv:2104.09864) rotates each channel pair
of a query or key by ω_i·p, so that ⟨R(p)q, R(p')k⟩ depends on p' - p only.
Frequencies ω_i = base**(-2i/r) over the rotary dimension r (possibly
rescaled, see :mod:`posenc.rope.scaling`); the angle ω_i·p comes from
:mod:`posenc.exact`, within 1 float32 ulp for every |p| < 2**31.

Layouts: which two channels of a head form pair i.

================  ===============  =============================================
layout            pair i           used by
================  ===============  =============================================
``"half"``        (i, i + r/2)     Hugging Face (``rotate_half``), GPT-NeoX,
                                   Qwen, Phi-3, keras-hub, Liger, flash-attn
                                   default
``"interleaved"`` (2i, 2i + 1)     Meta's Llama checkpoints (complex form),
                                   GPT-J, torchtune Llama, rotary-embedding-torch,
                                   x-transformers, flash-attn ``interleaved=True``
================  ===============  =============================================

Weights move between the two with :func:`permute_qk_weights` (what HF's
``convert_llama_weights_to_hf.py`` ``permute`` does to Meta checkpoints).
Rotation, per pair (x1, x2): (x1·cos - x2·sin, x2·cos + x1·sin).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import check_seq_len
from ..exact import Ladder, decimal_context, decimal_pi
from ..support.concurrency import BoundedCache
from .registry import scaled_by
from .scaling import Scaled
from .scaling.scaled import plain_ladder
from .sections import Sections, per_axis_frequencies
from .spec import (
    FREQUENCY_SETTINGS,
    RopeConfig,
    RopeFrequencySettings,
    check_dims,
    check_multi_axis,
    check_scaling,
    spec_in,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "RopeFrequencies",
    "check_dims",
    "check_multi_axis",
    "check_scaling",
    "rope_frequencies",
    "spec_frequencies",
]


@dataclass(frozen=True, eq=False)
class RopeFrequencies:
    """The rotary frequencies of one (head, base, scaling, length regime).

    Attributes:
        head_dim: channels per head, h_d.
        rotary_dim: channels rotated, r (the first r of each head).
        base: the effective base (rescaled by NTK / dynamic NTK).
        inv_freq: float64 ``[r/2]``, ω_i correctly rounded.
        wavelengths: float64 ``[r/2]``, 2π/ω_i correctly rounded.
        attention_factor: what HF multiplies into cos and sin (1 for most).
        ladder: ω to ~160 bits, for :mod:`posenc.exact`.
        sections: multi-axis RoPE (:mod:`posenc.rope.sections`): which
            position axis each pair serves, on which ladder; None for 1-D.
    """

    head_dim: int
    rotary_dim: int
    base: float
    inv_freq: np.ndarray = field(repr=False)
    wavelengths: np.ndarray = field(repr=False)
    attention_factor: float
    ladder: Ladder = field(repr=False)
    sections: Sections | None = None

    @property
    def pair_axes(self) -> np.ndarray | None:
        """The position axis each pair turns with, int ``[r/2]`` (None for 1-D RoPE)."""
        return None if self.sections is None else self.sections.pair_axes()


_CACHE = BoundedCache["RopeFrequencies"](256)


def _build(
    head_dim: int, rotary_dim: int, base: float, scaling: Any, seq_len: int | None, sections: Sections | None
) -> RopeFrequencies:
    b = Decimal(base)
    if sections is not None and sections.ladder == "per_axis":
        scaled = Scaled(per_axis_frequencies(sections, b), b, 1.0)
    elif scaling is None:
        scaled = Scaled(plain_ladder(rotary_dim, b), b, 1.0)
    else:
        scaled = scaled_by(scaling, rotary_dim, b, seq_len)  # a user's scaling too: checked, not trusted
    with decimal_context():
        two_pi = 2 * decimal_pi()
        lam = np.array([float(two_pi / w) for w in scaled.inv_freq])
    ladder = Ladder.from_decimals(scaled.inv_freq)
    lam.setflags(write=False)
    return RopeFrequencies(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        base=float(scaled.base),
        inv_freq=ladder.w0,
        wavelengths=lam,
        attention_factor=scaled.attention_factor,
        ladder=ladder,
        sections=sections,
    )


def rope_frequencies(
    head_dim: int | RopeConfig,
    *,
    seq_len: int | None = None,
    **settings: Unpack[RopeFrequencySettings],
) -> RopeFrequencies:
    """The rotary frequencies ω_i (i < rotary_dim/2) and the attention factor.

    Args:
        head_dim: a :class:`~posenc.RopeConfig` (the spec), which holds every
            setting but ``seq_len``; or channels per head, a positive even
            integer, with the settings below as keywords
            (:class:`~posenc.rope.spec.RopeFrequencySettings`; left out:
            RopeConfig's defaults; an unknown name is refused).
        seq_len: the sequence length, for the variants that depend on it
            (DynamicNTK, LongRoPE); None means "within the original length".
        base: θ in ω_i = θ**(-2i/rotary_dim) (HF ``rope_theta``).
        scaling: None or a :mod:`posenc.rope.scaling` variant.
        rotary_dim: channels rotated (HF: head_dim·partial_rotary_factor);
            even, <= head_dim; default head_dim.
        sections: multi-axis RoPE: pairs per position axis, e.g. ``(16, 24, 24)``
            for Qwen2-VL's (t, h, w), summing to rotary_dim/2; or a
            :class:`~posenc.rope.sections.Sections`. None: 1-D RoPE.
        section_layout: ``"contiguous"`` (Qwen2-VL) or ``"interleaved"``
            (Qwen3-VL): where each axis's pairs sit.
        ladder: ``"shared"`` (M-RoPE: ω_i = θ^(-2i/r), each pair its own) or
            ``"per_axis"`` (axial: each axis a ladder over its own share, as the
            Qwen2-VL vision tower; no scaling).

    Returns:
        A :class:`RopeFrequencies`; equal arguments give the same object.

    Raises:
        PosEncError: for any bad argument.

    >>> f = rope_frequencies(4, base=100.0)
    >>> f.inv_freq.tolist(), f.attention_factor
    ([1.0, 0.1], 1.0)
    >>> axial = rope_frequencies(8, base=100.0, sections=(2, 2), ladder="per_axis")
    >>> axial.inv_freq.tolist(), axial.pair_axes.tolist()
    ([1.0, 0.1, 1.0, 0.1], [0, 0, 1, 1])
    """
    return spec_frequencies(spec_in(head_dim, settings, FREQUENCY_SETTINGS), seq_len)


def spec_frequencies(spec: RopeConfig, seq_len: Any = None) -> RopeFrequencies:
    """The frequencies of a checked spec at ``seq_len`` (checked here): one cached object per rotation."""
    n = None if seq_len is None else check_seq_len(seq_len)
    h, r, b, scaling, sec = spec.head_dim, int(spec.rotary_dim or spec.head_dim), spec.base, spec.scaling, \
        spec.multi_axis
    # Keyed on what of seq_len matters (the effective length or base), so one
    # entry never serves two rotations and equal rotations share one entry.
    key = (h, r, b, scaling, None if scaling is None else scaling.cache_key(n), sec)
    return _CACHE.get(key, lambda: _build(h, r, b, scaling, n, sec))
