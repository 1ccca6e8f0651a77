"""Backends: one framework's array primitives each, under the one RoPE code of :mod:`posenc.rope.functions`.

:class:`Backend` (:mod:`~posenc.backends.protocol`) names the primitives;
:data:`NUMPY` (:mod:`~posenc.backends.numpy`) is the core's. The torch and
JAX backends (:mod:`posenc.backends.torch`, :mod:`posenc.backends.jax`)
import their framework, so only ``posenc.torch`` and ``posenc.jax`` import
them; ``import posenc`` loads neither.

A new backend implements :data:`~posenc.backends.protocol.PRIMITIVES` and
binds the generic functions with thin forwarding definitions, as
:func:`posenc.apply_rope` does.
"""

from __future__ import annotations

from .numpy import NUMPY, NumpyBackend
from .protocol import PRIMITIVES, Backend

__all__ = ["NUMPY", "PRIMITIVES", "Backend", "NumpyBackend"]
