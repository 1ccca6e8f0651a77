"""posenc: exact sinusoidal and rotary positional encodings, and their analysis.

The public API needs NumPy only. PyTorch modules live in :mod:`posenc.torch`
(extra ``posenc[torch]``), figures in :mod:`posenc.plot` (extra
``posenc[plot]``); neither is imported here.
"""

from .errors import LAYOUTS, PosEncError
from .frequencies import (
    ContextReport,
    context_report,
    frequencies,
    max_wavelength,
    min_base,
    wavelengths,
)
from .shift import shift, shift_matrix
from .similarity import Aliasing, Separation, aliasing, min_separation, similarity
from .sinusoidal import encode, table

__version__ = "0.1.0"

__all__ = [
    "PosEncError",
    "LAYOUTS",
    "frequencies",
    "wavelengths",
    "max_wavelength",
    "min_base",
    "context_report",
    "ContextReport",
    "encode",
    "table",
    "shift_matrix",
    "shift",
    "similarity",
    "aliasing",
    "Aliasing",
    "min_separation",
    "Separation",
    "__version__",
]
