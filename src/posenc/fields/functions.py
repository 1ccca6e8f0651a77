"""The neural-field encodings, written once over a :class:`~posenc.fields.backend.FieldBackend`.

:func:`nerf_encoding` and :func:`fourier_features` take the backend first,
then the public arguments. Each validates at the boundary, once, before any
work: the preset's plan (or nothing to plan, for Fourier features),
``include_input``, the dtype, the memory the output needs (sized before a
coordinate is read), then the coordinates (and B); only then does the
backend build rows. :func:`posenc.nerf_encoding`, :func:`posenc.torch.nerf_encoding`,
:func:`posenc.jax.nerf_encoding` and the three ``fourier_features`` are
these functions bound to their backend, so what one accepts the others accept.

>>> from posenc.fields.numpy_backend import NUMPY_FIELDS
>>> nerf_encoding(NUMPY_FIELDS, [0.5], 1, convention="nerf", include_input=None, dtype="float64").round(4).tolist()
[0.5, 0.4794, 0.8776]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PosEncError, show_value
from .conventions import get

if TYPE_CHECKING:
    from .backend import FieldBackend

__all__ = ["fourier_features", "nerf_encoding"]


def nerf_encoding(backend: FieldBackend, x: Any, n_freqs: Any, *, convention: Any, include_input: Any,
                  dtype: Any) -> Any:
    """``[..., 2·L·d (+ d)]``: the frequency encoding of coordinates x by ``convention``'s preset, on ``backend``."""
    plan = backend.field_plan(get(convention), n_freqs)
    keep = plan.include_input if include_input is None else include_input
    if not isinstance(keep, (bool, np.bool_)):
        raise PosEncError(f"include_input must be True, False or None, got {show_value(include_input)}")
    dt = backend.field_dtype(dtype)
    backend.check_nerf(x, plan, bool(keep), dt)  # before x is read: a huge view is refused at once
    return backend.nerf_rows(backend.nerf_points(x), plan, bool(keep), dt)


def fourier_features(backend: FieldBackend, x: Any, b: Any, *, dtype: Any) -> Any:
    """``[..., 2m]``: Tancik et al.'s ``[cos(2π B v) | sin(2π B v)]`` of coordinates x, on ``backend``."""
    dt = backend.field_dtype(dtype)
    backend.check_fourier(x, b, dt)  # before x and B are read
    points = backend.fourier_points(x)
    return backend.fourier_rows(points, backend.fourier_matrix(b, points), dt)
