"""posenc: exact sinusoidal and rotary positional encodings, and their analysis.

The public API needs NumPy only. PyTorch modules live in :mod:`posenc.torch`
(extra ``posenc[torch]``), figures in :mod:`posenc.plot` (extra
``posenc[plot]``); neither is imported here.
"""

from . import conventions
from .bias import ALIBI_CONVENTIONS, alibi_bias, alibi_slopes, t5_bucket, t5_bucket_edges
from .errors import LAYOUTS, PosEncError
from .frequencies import (
    ContextReport,
    context_report,
    frequencies,
    max_wavelength,
    min_base,
    wavelengths,
)
from .hf_config import RopeConfig, from_hf_config
from .rope import (
    ROPE_LAYOUTS,
    RopeFrequencies,
    apply_rope,
    permute_qk_weights,
    qk_permutation,
    rope_cos_sin,
    rope_frequencies,
    rope_table,
)
from .rope_context import RopeContextReport, rope_context_report
from .scaling import NTK, DynamicNTK, Linear, Llama3, LongRoPE, YaRN
from .shift import shift, shift_matrix
from .similarity import Aliasing, Separation, aliasing, min_separation, similarity
from .sinusoidal import encode, table

__version__ = "0.1.0"

__all__ = [
    "ALIBI_CONVENTIONS",
    "LAYOUTS",
    "NTK",
    "ROPE_LAYOUTS",
    "Aliasing",
    "ContextReport",
    "DynamicNTK",
    "Linear",
    "Llama3",
    "LongRoPE",
    "PosEncError",
    "RopeConfig",
    "RopeContextReport",
    "RopeFrequencies",
    "Separation",
    "YaRN",
    "__version__",
    "aliasing",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "context_report",
    "conventions",
    "encode",
    "frequencies",
    "from_hf_config",
    "max_wavelength",
    "min_base",
    "min_separation",
    "permute_qk_weights",
    "qk_permutation",
    "rope_context_report",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_table",
    "shift",
    "shift_matrix",
    "similarity",
    "t5_bucket",
    "t5_bucket_edges",
    "table",
    "wavelengths",
]
