"""The sinusoidal encoding and its analysis.

:mod:`~posenc.sinusoidal.encoding` makes the table (through the default
:mod:`~posenc.sinusoidal.conventions` preset, or another framework's),
:mod:`~posenc.sinusoidal.frequencies` the ladder and what it covers,
:mod:`~posenc.sinusoidal.shift` the rotation T_k, and
:mod:`~posenc.sinusoidal.similarity` dot products, aliasing and separation;
:mod:`~posenc.sinusoidal.grid` the n-D encoding of grid points, through the
:mod:`~posenc.sinusoidal.conventions_nd` presets, and
:mod:`~posenc.sinusoidal.grid_analysis` what each axis covers and how alike patches look.
"""

from . import conventions, conventions_nd
from .encoding import encode, table
from .frequencies import ContextReport, context_report, frequencies, max_wavelength, min_base, wavelengths
from .grid import encode_nd, grid
from .grid_analysis import AxisLadder, GridReport, grid_report, grid_similarity
from .shift import shift, shift_matrix
from .similarity import Aliasing, Separation, aliasing, min_separation, similarity

__all__ = [
    "Aliasing",
    "AxisLadder",
    "ContextReport",
    "GridReport",
    "Separation",
    "aliasing",
    "context_report",
    "conventions",
    "conventions_nd",
    "encode",
    "encode_nd",
    "frequencies",
    "grid",
    "grid_report",
    "grid_similarity",
    "max_wavelength",
    "min_base",
    "min_separation",
    "shift",
    "shift_matrix",
    "similarity",
    "table",
    "wavelengths",
]
