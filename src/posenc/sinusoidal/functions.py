"""The sinusoid's functions, written once over an :class:`~posenc.sinusoidal.backend.EncodingBackend`.

:func:`encode_with` and :func:`table_with` take the backend and a resolved
convention (:func:`~posenc.sinusoidal.conventions.resolve`), then the
public arguments. Each validates at the boundary, once, before any work:
the dtype, the memory the call needs (sized before the plan is built, when
the width is a count: a wide ladder takes a while to build), the plan, then
the positions; only then does the backend render rows. :func:`posenc.encode`,
:func:`posenc.torch.encode`, :func:`posenc.jax.encode`, their ``table``
forms and every preset's ``encode``/``table`` are these functions bound to
their backend, so what one accepts the others accept.

>>> from posenc.rope.numpy_backend import NUMPY
>>> from posenc.sinusoidal.conventions import Vaswani
>>> encode_with(NUMPY, Vaswani(), [0, 1], 4, "float64").round(4).tolist()
[[0.0, 1.0, 0.0, 1.0], [0.8415, 0.5403, 0.01, 1.0]]
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MAX_D_MODEL, check_positions, check_span
from ..support.memory import shape_of

if TYPE_CHECKING:
    from .backend import EncodingBackend
    from .plan import Planned

__all__ = ["encode_with", "table_with"]


def _count(value: Any) -> int | None:
    """``value`` as a channel count where it is one the plan may take (the plan refuses others by name)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        return None
    return int(value) if 0 < int(value) <= MAX_D_MODEL else None


def encode_with(backend: EncodingBackend, conv: Planned, positions: Any, d_model: Any, dtype: Any) -> Any:
    """``[..., d_model]``: ``conv``'s encoding of each position, on ``backend``."""
    dt = backend.encoding_dtype(dtype)
    shape = shape_of(positions)
    d = _count(d_model)
    if shape is not None and d is not None:  # before the plan: an odd width computes one more channel
        backend.check_encoding(shape, d + d % 2, d, 0, dt)
    plan = conv.plan(d_model)
    if shape is not None:  # before a position is read (a 10**10 view is refused in microseconds)
        backend.check_encoding(shape, plan.computed, plan.d_model, plan.origin, dt)
    return backend.encoding_rows(backend.encoding_positions(positions), plan, dt)


def table_with(backend: EncodingBackend, conv: Planned, length: Any, d_model: Any, start: Any,
               dtype: Any) -> Any:
    """``[length, d_model]``: ``conv``'s rows for positions ``start … start+length-1``, on ``backend``."""
    s0, n = check_span(start, length)
    dt = backend.encoding_dtype(dtype)
    plan = conv.plan(d_model)
    backend.check_encoding((n,), plan.computed, plan.d_model, 0, dt)
    first = s0 + plan.origin
    check_positions(np.array([first, first + max(n - 1, 0)], dtype=object), f"positions + origin ({plan.origin})")
    return backend.table_rows(first, n, plan, dt)
