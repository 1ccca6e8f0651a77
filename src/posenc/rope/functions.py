"""The RoPE functions, written once over a :class:`~posenc.rope.backend.Backend`: every framework's form reads these.

:func:`rope_cos_sin` and :func:`apply_rope` take the backend first, then the
public arguments. Each validates at the boundary, once, before any work: the
settings into one :class:`~posenc.RopeConfig` (:func:`~posenc.rope.spec.settings_spec`,
which refuses an unknown keyword by name), xPos and its role, ``seq_len``,
the memory the call needs, then the positions; only then does the backend
build rows and rotate. :func:`posenc.apply_rope`, :func:`posenc.torch.apply_rope`
and :func:`posenc.jax.apply_rope` are these functions bound to their backend
(:mod:`posenc.rope.backend`), so what one accepts the others accept, with the
same bits where the arithmetic is the same.

>>> from posenc.rope.numpy_backend import NUMPY
>>> cos, sin = rope_cos_sin(NUMPY, [0, 1], 4, base=100.0, dtype="float64")
>>> cos.round(4).tolist()
[[1.0, 1.0], [0.5403, 0.995]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PosEncError, check_d_model, check_seq_len
from ..support.memory import shape_of
from .sections import Sections
from .spec import FREQUENCY_SETTINGS, RopeConfig, settings_spec, spec_in
from .tables import check_axes
from .xpos import XPos, check_xpos

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["apply_rope", "check_broadcast", "check_head_dim_of_x", "check_xpos_of", "rope_cos_sin"]


def rope_cos_sin(backend: Backend, positions: Any, head_dim: Any, *, seq_len: Any = None, dtype: Any = "float32",
                 **settings: Any) -> tuple[Any, Any]:
    """(cos, sin) ``[..., r/2]`` of ``positions`` (``[..., n_axes]`` with sections) on ``backend``.

    ``head_dim`` is an int (``settings`` the :class:`~posenc.rope.spec.RopeFrequencySettings`)
    or a :class:`~posenc.RopeConfig` in its place (then no settings);
    ``seq_len`` as the backend's length rule; ``dtype`` as the backend takes it.
    """
    spec = spec_in(head_dim, settings, FREQUENCY_SETTINGS)
    dt = backend.table_dtype(dtype)
    length = None if seq_len is None else check_seq_len(seq_len)
    shape = shape_of(positions)
    if shape is not None:  # before a position is read
        backend.check_tables(shape, spec, dt)
    pos = backend.positions(positions)
    check_axes(pos, spec.multi_axis)
    return backend.cos_sin(pos, backend.frequencies(spec, length, pos), dt)


def apply_rope(backend: Backend, x: Any, positions: Any, *, spec: RopeConfig | None = None, seq_len: Any = None,
               xpos: Any = None, role: Any = None, sequence_dim: Any = -2, **settings: Any) -> Any:
    """x ``[..., s, h_d]`` rotated by its positions on ``backend`` (and decayed, with xPos).

    ``spec`` or ``settings`` (a :class:`~posenc.rope.spec.RopeSettings`)
    give the rotation, x's last axis its head_dim; every check runs before
    the backend builds a row.
    """
    sd = backend.sequence_dim(sequence_dim)
    arr = backend.float_input(x, "x", sd)
    cfg = settings_spec(spec, check_head_dim_of_x(int(arr.shape[-1])), settings)
    xp = check_xpos_of(cfg, xpos, role)
    length = None if seq_len is None else check_seq_len(seq_len)
    shape = shape_of(positions)
    if shape is not None:  # before a position is read: the rows, x's pairs in the rotation dtype, xPos's factors
        backend.check_output(arr, shape, cfg, xp)
    pos = backend.positions(positions)
    backend.check_positions_shape(pos, arr, cfg, sd)
    freqs = backend.frequencies(cfg, length, pos)
    if xp is None:
        cos, sin = backend.cos_sin(pos, freqs, backend.rotation_dtype(arr))
    else:
        cos, sin = backend.xpos_cos_sin(pos, freqs, xp, str(role), length, arr)
    return backend.rotate(arr, cos, sin, cfg.layout, freqs.rotary_dim, sd)


def check_xpos_of(spec: RopeConfig, xpos: Any, role: Any) -> XPos | None:
    """xpos and its role checked (:func:`~posenc.rope.xpos.check_xpos`) for a rotation by ``spec``: none with sections.

    The refusals of every form that takes ``xpos`` (the functions, and the
    JAX module, which checks its xpos at construction with role ``"q"``).
    """
    xp = check_xpos(xpos, role)
    if xp is not None and spec.multi_axis is not None:
        raise PosEncError("xpos with sections (multi-axis RoPE) is not defined: pass one or the other")
    return xp


def check_head_dim_of_x(h: int) -> int:
    """x's last axis as RoPE's head_dim: a positive even count, named as x's (every backend's form)."""
    check_d_model(h, "x.shape[-1] (head_dim)")
    if h % 2:
        raise PosEncError(f"x.shape[-1] (head_dim) must be even (RoPE rotates pairs of channels), got {h}")
    return h


def check_broadcast(pos: Any, sec: Sections | None, x_shape: tuple[int, ...]) -> None:
    """Positions (less their trailing axis with sections) must broadcast to ``x.shape[:-1]`` (any array: the JAX
    form checks its traced positions here too)."""
    check_axes(pos, sec)
    lead = tuple(pos.shape) if sec is None else tuple(pos.shape[:-1])
    x_shape = tuple(x_shape)
    try:
        shape = np.broadcast_shapes(lead, x_shape[:-1])
    except ValueError:
        shape = None
    if shape != x_shape[:-1]:
        axes = "" if sec is None else f" (after the trailing axis of {sec.n_axes})"
        raise PosEncError(
            f"positions of shape {tuple(pos.shape)} must broadcast to x.shape[:-1] = {x_shape[:-1]}{axes} "
            f"(x is [..., s, h_d]; use [s], [b, 1, s] for [b, n_h, s, h_d], [b, s, 1] for [b, s, n_h, h_d])"
        )
