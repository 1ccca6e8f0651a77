"""The :class:`Backend` protocol: the array primitives a RoPE function needs, and nothing else.

Every public RoPE function (:func:`posenc.rope_cos_sin`, :func:`posenc.apply_rope`
and their torch and JAX forms) is written once, in :mod:`posenc.rope.functions`,
over these primitives; a backend (NumPy, torch, JAX, and next MLX or CuPy)
implements only them. The settings never reach a backend: the generic
function reads them into one checked :class:`~posenc.RopeConfig` and the
frequencies into one :class:`~posenc.rope.frequencies.RopeFrequencies`
(one plan per rotation, never re-derived by a backend), and hands the backend
arrays, shapes and that plan.

The idea is the field's: einops writes each operation once over an
``AbstractBackend`` (einops/_backends.py), one subclass per framework that
implements a handful of array methods (``reshape``, ``transpose``,
``stack_on_zeroth_dimension``, ``is_appropriate_type``); pyhf computes its
likelihoods over a ``tensorlib`` chosen by ``pyhf.set_backend`` (numpy,
pytorch, jax), whose backends implement the same named tensor functions.
Here the primitives are RoPE's own (exact rows, the rotation, the input and
memory rules), since posenc's bits come from its exact rows, not from a
framework's sin and cos.

A backend is any object with these attributes (a structural
:class:`typing.Protocol`: no base class to inherit):

>>> from posenc.rope.backend import Backend
>>> from posenc.rope.numpy_backend import NUMPY
>>> isinstance(NUMPY, Backend), NUMPY.name
(True, 'numpy')
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..support.vocabulary import RopeLayout
from .frequencies import RopeFrequencies
from .spec import RopeConfig
from .xpos import XPos

__all__ = ["PRIMITIVES", "Backend"]


@runtime_checkable
class Backend(Protocol):
    """The array primitives of one framework, for the RoPE functions of :mod:`posenc.rope.functions`.

    Shapes: ``[...]`` positions (``[..., n_axes]`` with sections), ``r`` the
    rotary dimension, rows ``[..., r/2]``. Each check raises
    :class:`posenc.PosEncError` before any work.
    """

    #: the framework's name (``"numpy"``, ``"torch"``, ``"jax"``): what a message or a test names
    name: str

    def sequence_dim(self, value: Any) -> int:
        """The axis of s in x, checked (-2 everywhere; torch also takes -3, ``[..., s, n_h, h_d]``)."""
        ...

    def float_input(self, x: Any, name: str, sequence_dim: int) -> Any:
        """``x`` as a float array of this framework ``[..., s, h_d]`` (its dtype rules), or a PosEncError."""
        ...

    def table_dtype(self, dtype: Any) -> Any:
        """The dtype :func:`~posenc.rope.functions.rope_cos_sin` returns its rows in, checked."""
        ...

    def check_tables(self, shape: tuple[int, ...], spec: RopeConfig, dtype: Any) -> None:
        """The memory check of rows for positions of ``shape``, before a position is read."""
        ...

    def check_output(self, x: Any, shape: tuple[int, ...], spec: RopeConfig, xpos: XPos | None) -> None:
        """The memory check of x rotated (its rows and working arrays), before a position is read."""
        ...

    def positions(self, value: Any) -> Any:
        """The positions checked (values and dtype, by this framework's rule), as an array."""
        ...

    def check_positions_shape(self, pos: Any, x: Any, spec: RopeConfig, sequence_dim: int) -> None:
        """Raise unless checked positions fit x (this framework's rule: broadcasting, or torch's [s] / [b, s])."""
        ...

    def frequencies(self, spec: RopeConfig, seq_len: int | None, pos: Any) -> RopeFrequencies:
        """The spec's frequencies, by this framework's length rule (a default seq_len from the positions, or none)."""
        ...

    def cos_sin(self, pos: Any, freqs: RopeFrequencies, dtype: Any) -> tuple[Any, Any]:
        """The exact rows (cos, sin) ``[..., r/2]`` of checked positions, times the attention factor, in dtype."""
        ...

    def rotation_dtype(self, x: Any) -> Any:
        """The dtype x is rotated in (its rows'): float64 for float64 x where the framework has it, else float32."""
        ...

    def xpos_cos_sin(self, pos: Any, freqs: RopeFrequencies, xpos: XPos, role: str, seq_len: int | None,
                     x: Any) -> tuple[Any, Any]:
        """The rows times xPos's factors for ``role`` (or a PosEncError where the framework has no xPos)."""
        ...

    def rotate(self, x: Any, cos: Any, sin: Any, layout: RopeLayout, rotary_dim: int, sequence_dim: int) -> Any:
        """x with its pairs (``layout``'s, ``head_half`` included) rotated by the rows, in x's dtype."""
        ...


#: the primitives every backend implements (what tests/rope/test_rope_backend.py checks of each)
PRIMITIVES = ("name", "sequence_dim", "float_input", "table_dtype", "check_tables", "check_output", "positions",
              "check_positions_shape", "frequencies", "cos_sin", "rotation_dtype", "xpos_cos_sin", "rotate")
