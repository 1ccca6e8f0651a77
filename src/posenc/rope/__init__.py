"""Rotary position embeddings (RoPE) and their long-context scalings.

:mod:`~posenc.rope.frequencies` holds the ladder ω_i (after any
:mod:`~posenc.rope.scaling`), :mod:`~posenc.rope.cos_sin` the exact cos/sin
tables, :mod:`~posenc.rope.apply` the rotation of q and k,
:mod:`~posenc.rope.permute` the conversion of weights between layouts,
:mod:`~posenc.rope.sections` multi-axis RoPE (M-RoPE, axial),
:mod:`~posenc.rope.multimodal` the M-RoPE positions of multimodal prompts,
:mod:`~posenc.rope.xpos` xPos (RoPE with a decay),
:mod:`~posenc.rope.registry` the open registry of scalings that
:func:`posenc.from_hf_config` (:mod:`posenc.hf.config`) reads configs with, and
:mod:`~posenc.rope.context` what a scaled ladder covers.
"""

from ..support.vocabulary import ROPE_LAYOUTS
from .apply import apply_rope
from .context import RopeContextReport, rope_context_report, rope_grid_report
from .cos_sin import rope_cos_sin, rope_table
from .frequencies import RopeFrequencies, rope_frequencies
from .multimodal import MROPE_ADVANCES, Text, VisionGrid, mrope_decode_positions, mrope_positions
from .permute import permute_qk_weights, qk_permutation
from .presets import dinov3_coords, eva02_coords, rope_preset
from .registry import register_scaling
from .scaling import NTK, SCALINGS, DynamicNTK, Linear, Llama3, LongRoPE, YaRN
from .sections import Sections
from .spec import RopeConfig
from .xpos import XPos, xpos_decay, xpos_scale

__all__ = [
    "MROPE_ADVANCES",
    "NTK",
    "ROPE_LAYOUTS",
    "SCALINGS",
    "DynamicNTK",
    "Linear",
    "Llama3",
    "LongRoPE",
    "RopeConfig",
    "RopeContextReport",
    "RopeFrequencies",
    "Sections",
    "Text",
    "VisionGrid",
    "XPos",
    "YaRN",
    "apply_rope",
    "dinov3_coords",
    "eva02_coords",
    "mrope_decode_positions",
    "mrope_positions",
    "permute_qk_weights",
    "qk_permutation",
    "register_scaling",
    "rope_context_report",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_grid_report",
    "rope_preset",
    "rope_table",
    "xpos_decay",
    "xpos_scale",
]
