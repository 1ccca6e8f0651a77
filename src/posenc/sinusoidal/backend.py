"""The :class:`EncodingBackend` protocol: the array primitives the sinusoid's functions need, and nothing else.

:func:`posenc.encode` and :func:`posenc.table`, their torch and JAX forms,
and every preset's own ``encode``/``table`` are written once, in
:mod:`posenc.sinusoidal.functions`, over these primitives. The settings
never reach a backend: the generic function resolves them into one
convention and asks it for its :class:`~posenc.sinusoidal.plan.Plan`
(frequencies, channel placement, origin, zero row), then hands the backend
checked arrays and that plan. It is RoPE's arrangement
(:mod:`posenc.rope.backend`), and einops' (one ``AbstractBackend`` per
framework, each operation written once over it, ``einops/_backends.py``).

A backend is any object with these attributes (a structural
:class:`typing.Protocol`); the NumPy, torch and JAX backends are each one
object serving this protocol and RoPE's:

>>> from posenc.sinusoidal.backend import EncodingBackend
>>> from posenc.rope.numpy_backend import NUMPY
>>> isinstance(NUMPY, EncodingBackend)
True
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .plan import Plan

__all__ = ["ENCODING_PRIMITIVES", "EncodingBackend"]


@runtime_checkable
class EncodingBackend(Protocol):
    """The array primitives of one framework, for :mod:`posenc.sinusoidal.functions`.

    Shapes: ``[...]`` positions; rows ``[..., d_model]``. Each check raises
    :class:`posenc.PosEncError` before any work.
    """

    #: the framework's name (``"numpy"``, ``"torch"``, ``"jax"``): what a message or a test names
    name: str

    def encoding_dtype(self, dtype: Any) -> Any:
        """The output dtype, checked (this framework's dtypes)."""
        ...

    def check_encoding(self, shape: tuple[int, ...], computed: int, d_model: int, origin: int, dtype: Any) -> None:
        """The memory check of ``computed`` channels cut to ``d_model`` at positions of ``shape``, before a
        position is read (``origin``: whether θ = p + origin needs the exact sum's working arrays)."""
        ...

    def encoding_positions(self, value: Any) -> Any:
        """The positions checked (values and dtype, by this framework's rule), as this backend's array."""
        ...

    def encoding_rows(self, positions: Any, plan: Plan, dtype: Any) -> Any:
        """``[..., plan.d_model]``: the plan rendered at checked positions (θ = p + origin), in ``dtype``."""
        ...

    def table_rows(self, first: int, length: int, plan: Plan, dtype: Any) -> Any:
        """``[length, plan.d_model]``: the plan rendered at θ = ``first … first+length-1`` (checked), in ``dtype``."""
        ...


#: the primitives every encoding backend implements (what tests/sinusoidal/test_sinusoidal_backend.py checks)
ENCODING_PRIMITIVES = ("name", "encoding_dtype", "check_encoding", "encoding_positions", "encoding_rows",
                       "table_rows")
