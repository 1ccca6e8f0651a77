"""The :class:`FieldBackend` protocol: the array primitives the neural-field encodings need, and nothing else.

:func:`posenc.nerf_encoding` and :func:`posenc.fourier_features`, and their
torch and JAX forms, are written once, in :mod:`posenc.fields.functions`,
over these primitives. The settings never reach a backend: the generic
functions resolve the preset into its :class:`~posenc.fields.FieldPlan`
(through the backend, which may hold it to its exact range), check
``include_input`` and the dtype, size the output, then hand the backend
checked coordinates and the plan (or B). It is the sinusoid's arrangement
(:mod:`posenc.sinusoidal.backend`), after einops' ``AbstractBackend``.

>>> from posenc.fields.numpy_backend import NUMPY_FIELDS
>>> isinstance(NUMPY_FIELDS, FieldBackend), NUMPY_FIELDS.name
(True, 'numpy')
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .conventions import FieldConvention, FieldPlan

__all__ = ["FIELD_PRIMITIVES", "FieldBackend"]


@runtime_checkable
class FieldBackend(Protocol):
    """The array primitives of one framework, for :mod:`posenc.fields.functions`.

    Shapes: coordinates x ``[..., d]`` (a scalar is one point of one
    coordinate), bands L, B ``[m, d]``; NeRF rows ``[..., 2·L·d (+ d)]``,
    Fourier rows ``[..., 2m]``. Each check raises :class:`posenc.PosEncError`
    before any work.
    """

    #: the framework's name (``"numpy"``, ``"torch"``, ``"jax"``): what a message or a test names
    name: str

    def field_dtype(self, dtype: Any) -> Any:
        """The output dtype, checked (this framework's dtypes)."""
        ...

    def field_plan(self, preset: FieldConvention, n_freqs: Any) -> FieldPlan:
        """The bands the rows are built from: ``preset.plan(n_freqs)``, held to this framework's exact range."""
        ...

    def check_nerf(self, x: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> None:
        """The memory check of the NeRF rows of x as given (its shape, its device), before x is read."""
        ...

    def nerf_points(self, x: Any) -> Any:
        """x read and checked by this framework's rule for the bands' angles, as ``[..., d]``."""
        ...

    def nerf_rows(self, points: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> Any:
        """``[..., 2·L·d (+ d)]``: exact sin/cos of every band at checked points, in the plan's order, in dtype."""
        ...

    def check_fourier(self, x: Any, b: Any, dtype: Any) -> None:
        """The memory check of the Fourier features of x and B as given, before either is read."""
        ...

    def fourier_points(self, x: Any) -> Any:
        """x read and checked by this framework's rule for a phase in turns (no angle limit), as ``[..., d]``."""
        ...

    def fourier_matrix(self, b: Any, points: Any) -> Any:
        """B read and checked: ``[m, d]`` with d the points' last axis, in this framework's form."""
        ...

    def fourier_rows(self, points: Any, matrix: Any, dtype: Any) -> Any:
        """``[..., 2m]``: cos, then sin, of 2π·B·v at checked points, in ``dtype``."""
        ...


#: the primitives every field backend implements (what tests/fields/test_fields_backend.py checks)
FIELD_PRIMITIVES = ("name", "field_dtype", "field_plan", "check_nerf", "nerf_points", "nerf_rows", "check_fourier",
                    "fourier_points", "fourier_matrix", "fourier_rows")
