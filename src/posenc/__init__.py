"""posenc: exact sinusoidal and rotary positional encodings, and their analysis.

The public API needs NumPy only. PyTorch modules live in :mod:`posenc.torch`
(extra ``posenc[torch]``), figures in :mod:`posenc.plot` (extra
``posenc[plot]``); neither is imported here.
"""

import sys as _sys

from .bias import ALIBI_CONVENTIONS, alibi_bias, alibi_slopes, t5_bucket, t5_bucket_edges
from .errors import PosEncError
from .layout import LAYOUTS
from .rope import (
    NTK,
    ROPE_LAYOUTS,
    DynamicNTK,
    Linear,
    Llama3,
    LongRoPE,
    RopeConfig,
    RopeContextReport,
    RopeFrequencies,
    Sections,
    XPos,
    YaRN,
    apply_rope,
    from_hf_config,
    permute_qk_weights,
    qk_permutation,
    rope_context_report,
    rope_cos_sin,
    rope_frequencies,
    rope_grid_report,
    rope_table,
    xpos_decay,
    xpos_scale,
)
from .sinusoidal import (
    Aliasing,
    AxisLadder,
    ContextReport,
    GridReport,
    Separation,
    aliasing,
    context_report,
    conventions,
    conventions_nd,
    encode,
    encode_nd,
    frequencies,
    grid,
    grid_report,
    grid_similarity,
    max_wavelength,
    min_base,
    min_separation,
    shift,
    shift_matrix,
    similarity,
    table,
    wavelengths,
)

# `import posenc.conventions` keeps working: the presets moved into the sinusoidal family
_sys.modules[__name__ + ".conventions"] = conventions

__version__ = "0.1.0"

__all__ = [
    "ALIBI_CONVENTIONS",
    "LAYOUTS",
    "NTK",
    "ROPE_LAYOUTS",
    "Aliasing",
    "AxisLadder",
    "ContextReport",
    "DynamicNTK",
    "GridReport",
    "Linear",
    "Llama3",
    "LongRoPE",
    "PosEncError",
    "RopeConfig",
    "RopeContextReport",
    "RopeFrequencies",
    "Sections",
    "Separation",
    "XPos",
    "YaRN",
    "__version__",
    "aliasing",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "context_report",
    "conventions",
    "conventions_nd",
    "encode",
    "encode_nd",
    "frequencies",
    "from_hf_config",
    "grid",
    "grid_report",
    "grid_similarity",
    "max_wavelength",
    "min_base",
    "min_separation",
    "permute_qk_weights",
    "qk_permutation",
    "rope_context_report",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_grid_report",
    "rope_table",
    "shift",
    "shift_matrix",
    "similarity",
    "t5_bucket",
    "t5_bucket_edges",
    "table",
    "wavelengths",
    "xpos_decay",
    "xpos_scale",
]
