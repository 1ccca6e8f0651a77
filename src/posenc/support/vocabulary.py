"""The words posenc's options take, each set in one place as a ``Literal`` type and its tuple of values.

A layout name means one thing per kind of layout, so each kind has its own
type: where sin and cos of a frequency sit among an encoding's channels
(:data:`ChannelLayout`), how RoPE pairs the channels it rotates
(:data:`PairLayout`), which channels an exact fill writes (:data:`FillLayout`),
where the axes' pairs of a multi-axis RoPE sit (:data:`SectionLayout`) and
whether those axes share one frequency ladder (:data:`LadderSharing`, the
``ladder`` option, not the :class:`posenc.exact.Ladder` class of frequencies).
Every tuple below is read from its type, so the type and the values the
checks accept cannot drift apart. This module imports nothing of posenc.

>>> PAIR_LAYOUTS, PAIR_CHANNELS["half"]
(('half', 'interleaved'), 'split')
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "CHANNEL_LAYOUTS",
    "FILL_LAYOUTS",
    "LADDER_SHARINGS",
    "PAIR_CHANNELS",
    "PAIR_LAYOUTS",
    "ROPE_LAYOUTS",
    "SECTION_LAYOUTS",
    "ChannelLayout",
    "FillLayout",
    "LadderSharing",
    "PairLayout",
    "RopeLayout",
    "SectionLayout",
]

#: An encoding's channels: ``interleaved`` puts sin(ω_i p) at channel 2i and
#: cos at 2i+1 (the seed's); ``split`` puts every sine first, then every
#: cosine (fairseq, tensor2tensor, Marian).
ChannelLayout = Literal["interleaved", "split"]

#: RoPE's rotated pairs: ``half`` pairs channel i with i + d/2 (Llama, NeoX,
#: HF's ``rotate_half``); ``interleaved`` pairs 2i with 2i+1 (GPT-J, Meta's original).
PairLayout = Literal["half", "interleaved"]

#: The pairs RoPE rotates: a :data:`PairLayout` (over the first rotary_dim
#: channels), or ``head_half``: pairs (i, i + h_d/2) for i < rotary_dim/2
#: (Gemma 4's proportional RoPE, :mod:`posenc.rope.scaling.proportional`), which
#: equals ``half`` when rotary_dim = h_d.
RopeLayout = Literal["half", "interleaved", "head_half"]

#: What an exact fill writes (:func:`posenc.exact.fill_range`): a channel
#: layout, or ``cos_sin`` (every cosine first, then every sine).
FillLayout = Literal["interleaved", "split", "cos_sin"]

#: Where each axis's pairs sit: ``contiguous`` (Qwen2-VL) or ``interleaved`` (Qwen3-VL).
SectionLayout = Literal["contiguous", "interleaved"]

#: ``shared``: one ladder over the rotary dimension (M-RoPE); ``per_axis``: each axis its own (axial).
LadderSharing = Literal["shared", "per_axis"]

CHANNEL_LAYOUTS: tuple[ChannelLayout, ...] = get_args(ChannelLayout)
PAIR_LAYOUTS: tuple[PairLayout, ...] = get_args(PairLayout)
ROPE_LAYOUTS: tuple[RopeLayout, ...] = get_args(RopeLayout)
FILL_LAYOUTS: tuple[FillLayout, ...] = get_args(FillLayout)
SECTION_LAYOUTS: tuple[SectionLayout, ...] = get_args(SectionLayout)
LADDER_SHARINGS: tuple[LadderSharing, ...] = get_args(LadderSharing)

#: A RoPE pair layout as the channel layout of its (x1, x2) halves: the one
#: translation between the two vocabularies.
PAIR_CHANNELS: dict[PairLayout, ChannelLayout] = {"half": "split", "interleaved": "interleaved"}
