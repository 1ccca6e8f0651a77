"""The relative biases, written once over a :class:`~posenc.bias.backend.BiasBackend`.

:func:`alibi_bias`, :func:`t5_bucket` and :func:`t5_bias` take the backend
first, then the public arguments. Each validates at the boundary, once,
before any work: the settings into one spec (:class:`~posenc.bias.spec.AlibiSpec`,
:class:`~posenc.bias.spec.T5Buckets`), the lengths and the placement, the
dtype, the memory the output needs (sized before a position is read), then
the positions (or offsets); only then does the backend compute.
:func:`posenc.alibi_bias`, :func:`posenc.torch.alibi_bias`,
:func:`posenc.jax.alibi_bias` and the T5 functions' three forms are these
functions bound to their backend, so what one accepts the others accept.

>>> from posenc.bias.numpy_backend import NUMPY_BIAS
>>> t5_bucket(NUMPY_BIAS, [-1, 0, 1], spec=None).tolist()
[1, 0, 17]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PosEncError, check_int
from .spec import AlibiSpec, T5Buckets, T5Settings, t5_buckets, table_buckets

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .backend import BiasBackend

__all__ = ["alibi_bias", "t5_bias", "t5_bucket"]


def alibi_bias(backend: BiasBackend, q_len: Any, k_len: Any, n_heads: Any, *, offset: Any, positions: Any,
               convention: Any, causal: Any, dtype: Any) -> Any:
    """``[(b,) n_heads, q_len, k_len]``: the ALiBi bias of ``convention``'s variant, on ``backend``."""
    spec = AlibiSpec(q_len, k_len, n_heads, offset, convention, causal)
    dt = backend.alibi_dtype(dtype)
    spec.check_positions(positions)
    backend.check_alibi(spec, positions, dt)  # before a position is read
    return backend.alibi_rows(spec, None if positions is None else backend.alibi_positions(positions, spec), dt)


def t5_bucket(backend: BiasBackend, relative_position: Any, *, spec: T5Buckets | None,
              **settings: Unpack[T5Settings]) -> Any:
    """T5's bucket of each offset ``j − i``, on ``backend``."""
    cfg = t5_buckets(spec, _entry(backend, "t5_bucket"), **settings)
    backend.check_buckets(relative_position)  # before an offset is read
    return backend.buckets(cfg, backend.bucket_offsets(relative_position, "relative_position", "key − query"))


def t5_bias(backend: BiasBackend, weights: Any, q_len: Any, k_len: Any, *, offset: Any, q_positions: Any,
            k_positions: Any, bidirectional: Any, max_distance: Any) -> Any:
    """``[n_heads, q_len, k_len]``: T5's learned bias ``weights[bucket(j − i)]``, on ``backend``."""
    w = backend.t5_weights(weights)
    cfg = table_buckets(int(w.shape[0]), bidirectional, max_distance)
    q = check_int(q_len, "q_len", minimum=1)
    k = check_int(k_len, "k_len", minimum=1)
    off = check_int(offset, "offset")
    backend.check_t5(w, q, k)  # before a position is read
    qp = backend.t5_positions(q_positions, off, q, "q_positions", w)
    kp = backend.t5_positions(k_positions, 0, k, "k_positions", w)
    if tuple(qp.shape) != (q,) or tuple(kp.shape) != (k,):
        raise PosEncError(f"q_positions and k_positions must be [{q}] and [{k}], got {tuple(qp.shape)} and "
                          f"{tuple(kp.shape)}")
    return backend.t5_lookup(w, cfg, qp, kp, off)


def _entry(backend: BiasBackend, name: str) -> str:
    """How a message names the entry point: NumPy's by its name, another framework's by its path."""
    return name if backend.name == "numpy" else f"posenc.{backend.name}.{name}"
