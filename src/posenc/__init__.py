"""posenc: exact sinusoidal and rotary positional encodings, and their analysis.

The public API needs NumPy only. PyTorch modules live in :mod:`posenc.torch`
(extra ``posenc[torch]``), figures in :mod:`posenc.plot` (extra
``posenc[plot]``); neither is imported here.
"""

import sys as _sys

# isort: off
# first, before NumPy: in the command's own process a Ctrl-C while posenc loads is then one line
from .cli import signals as _signals  # noqa: F401
# isort: on
from .bias import ALIBI_CONVENTIONS, alibi_bias, alibi_slopes, t5_bias, t5_bucket, t5_bucket_edges
from .errors import PosEncError
from .fields import fourier_features, nerf_encoding
from .hf.config import from_hf_config
from .registration import register
from .rope import (
    MROPE_ADVANCES,
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
    Text,
    VisionGrid,
    XPos,
    YaRN,
    apply_rope,
    dinov3_coords,
    eva02_coords,
    mrope_decode_positions,
    mrope_positions,
    permute_qk_weights,
    qk_permutation,
    rope_context_report,
    rope_cos_sin,
    rope_frequencies,
    rope_grid_report,
    rope_preset,
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
from .support.compile import guard_public as _guard_public
from .support.version import __version__
from .support.vocabulary import CHANNEL_LAYOUTS
from .timesteps import timestep_embedding

# `import posenc.conventions` keeps working: the presets moved into the sinusoidal family
_sys.modules[__name__ + ".conventions"] = conventions


__all__ = [
    "ALIBI_CONVENTIONS",
    "CHANNEL_LAYOUTS",
    "MROPE_ADVANCES",
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
    "Text",
    "VisionGrid",
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
    "dinov3_coords",
    "encode",
    "encode_nd",
    "eva02_coords",
    "fourier_features",
    "frequencies",
    "from_hf_config",
    "grid",
    "grid_report",
    "grid_similarity",
    "max_wavelength",
    "min_base",
    "min_separation",
    "mrope_decode_positions",
    "mrope_positions",
    "nerf_encoding",
    "permute_qk_weights",
    "qk_permutation",
    "register",
    "rope_context_report",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_grid_report",
    "rope_preset",
    "rope_table",
    "shift",
    "shift_matrix",
    "similarity",
    "t5_bias",
    "t5_bucket",
    "t5_bucket_edges",
    "table",
    "timestep_embedding",
    "wavelengths",
    "xpos_decay",
    "xpos_scale",
]

# last: every public callable above, and each namespace's, is kept out of torch.compile's tracing here, once
# (posenc.support.compile: Dynamo's NumPy emulation would change the bits)
_guard_public(
    _sys.modules[__name__],
    namespaces=("conventions", "conventions_nd", "bias", "rope", "timesteps", "fields"),
    methods=("conventions.Convention.encode", "conventions.Convention.table", "VisionGrid.from_processor"),
)
