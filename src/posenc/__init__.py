"""posenc: exact sinusoidal and rotary positional encodings, and their analysis.

The public API needs NumPy only. PyTorch modules live in :mod:`posenc.torch`
(extra ``posenc[torch]``), figures in :mod:`posenc.plot` (extra
``posenc[plot]``); neither is imported here.
"""

from . import conventions
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
    "LAYOUTS",
    "Aliasing",
    "ContextReport",
    "PosEncError",
    "Separation",
    "__version__",
    "aliasing",
    "context_report",
    "conventions",
    "encode",
    "frequencies",
    "max_wavelength",
    "min_base",
    "min_separation",
    "shift",
    "shift_matrix",
    "similarity",
    "table",
    "wavelengths",
]
