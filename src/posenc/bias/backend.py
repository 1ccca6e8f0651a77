"""The :class:`BiasBackend` protocol: the array primitives the relative biases need, and nothing else.

:func:`posenc.alibi_bias`, :func:`posenc.t5_bucket` and :func:`posenc.t5_bias`,
and their torch and JAX forms, are written once, in :mod:`posenc.bias.functions`,
over these primitives. The settings never reach a backend: the generic
functions read them into one checked spec (:class:`~posenc.bias.spec.AlibiSpec`,
:class:`~posenc.bias.spec.T5Buckets`), check the lengths, the placement and
the dtype, size the output, then hand the backend checked positions (or
offsets, or the learned table) and the spec. It is the sinusoid's
arrangement (:mod:`posenc.sinusoidal.backend`), after einops' ``AbstractBackend``.

>>> from posenc.bias.numpy_backend import NUMPY_BIAS
>>> isinstance(NUMPY_BIAS, BiasBackend), NUMPY_BIAS.name
(True, 'numpy')
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .spec import AlibiSpec, T5Buckets

__all__ = ["BIAS_PRIMITIVES", "BiasBackend"]


@runtime_checkable
class BiasBackend(Protocol):
    """The array primitives of one framework, for :mod:`posenc.bias.functions`.

    Shapes: key positions ``[k]`` or ``[b, k]``; ALiBi biases
    ``[(b,) h, q, k]``; offsets ``j − i`` of any shape; T5's table
    ``[num_buckets, n_heads]``, its bias ``[n_heads, q, k]``. Each check raises
    :class:`posenc.PosEncError` before any work.
    """

    #: the framework's name (``"numpy"``, ``"torch"``, ``"jax"``): what a message or a test names
    name: str

    def alibi_dtype(self, dtype: Any) -> Any:
        """The ALiBi bias's dtype, checked (this framework's dtypes)."""
        ...

    def check_alibi(self, spec: AlibiSpec, positions: Any, dtype: Any) -> None:
        """The memory check of the bias (batched as ``positions`` is, given), before a position is read."""
        ...

    def alibi_positions(self, positions: Any, spec: AlibiSpec) -> Any:
        """Key positions read and checked by this framework's rule: ``[k]`` or ``[b, k]``."""
        ...

    def alibi_rows(self, spec: AlibiSpec, positions: Any, dtype: Any) -> Any:
        """``[(b,) h, q, k]``: m_h·t of the spec's variant at checked positions (None: keys 0 … k-1), masked."""
        ...

    def check_buckets(self, relative_position: Any) -> None:
        """The memory check of the buckets of offsets as given, before an offset is read."""
        ...

    def bucket_offsets(self, value: Any, name: str, what: str) -> Any:
        """Integer offsets (or positions) read and checked by this framework's rule; ``what`` they are."""
        ...

    def buckets(self, spec: T5Buckets, offsets: Any) -> Any:
        """T5's bucket of each checked offset ``j − i``, the same integers in every framework."""
        ...

    def t5_weights(self, weights: Any) -> Any:
        """The learned table read and checked: a float matrix ``[num_buckets, n_heads]``."""
        ...

    def check_t5(self, weights: Any, q_len: int, k_len: int) -> None:
        """The memory check of the bias ``[n_heads, q, k]`` and its buckets (and this framework's length range)."""
        ...

    def t5_positions(self, value: Any, first: int, length: int, name: str, weights: Any) -> Any:
        """Positions: ``value`` checked as integers, or ``first … first+length-1`` (None); where weights are."""
        ...

    def t5_lookup(self, weights: Any, spec: T5Buckets, q_positions: Any, k_positions: Any, offset: int) -> Any:
        """``[n_heads, q, k]``: ``weights[bucket(k − q)]``, head first (offsets past this framework's range refused)."""
        ...


#: the primitives every bias backend implements (what tests/bias/test_bias_backend.py checks)
BIAS_PRIMITIVES = ("name", "alibi_dtype", "check_alibi", "alibi_positions", "alibi_rows", "check_buckets",
                   "bucket_offsets", "buckets", "t5_weights", "check_t5", "t5_positions", "t5_lookup")
