"""ALiBi: attention with linear biases (Press, Smith & Lewis 2021, arXiv:2108.12409).

No vector is added to the tokens; each head h adds ``m_h·(j − i)`` (that is
``−m_h·(i − j)``) to the score of query i and key j, a penalty growing
linearly with the distance. Three conventions of the same idea, each a frozen
dataclass, selected by name (``"press"``, ``"bloom"``, ``"mpt"``) or passed
as an instance (``Mpt(alibi_bias_max=16)``):

==========  ==================================  ====================================
convention  bias of query i, key j (slope m)    source
==========  ==================================  ====================================
``press``   ``−m·(i − j)``  (``−m·|i − j|``      the paper (ofirpress/attention_with_
            without ``causal``)                  linear_biases); x-transformers
``bloom``   ``m·j``, j the key's position       HF ``modeling_bloom.build_alibi_tensor``
            (``cumsum(mask) − 1``)
``mpt``     ``m·(j − (k_len − 1))``             HF ``modeling_mpt.build_mpt_alibi_tensor``
==========  ==================================  ====================================

**Which agree.** Under a causal mask the three differ, row by row, by a
constant (``m·i`` for bloom, ``m·(i − (k_len − 1))`` for mpt), and softmax
ignores a constant added to a row: the attention weights are equal, the
tensors are not. Without the mask bloom and mpt still agree after softmax
(they differ by ``m·(k_len − 1)``, constant over the whole tensor), but the
symmetric press form ``−m·|i − j|`` is a different model.

**Slopes.** For n a power of two, ``m_k = 2**(−8k/n)``, k = 1 … n. Otherwise,
with p = 2**floor(log2 n), the paper's ``get_slopes`` (and BLOOM's
``_get_alibi_slopes``) takes the p slopes of the power-of-two rule and then
the odd-numbered ones of the 2p rule, ``2**(−8k/2p)`` for k = 1, 3, 5, …: a
second geometric series whose values interleave the first. MPT computes
``2**(−k·alibi_bias_max/P)``, k = 1 … P with P = 2**ceil(log2 n), and for
n < P keeps ``concat(s[1::2], s[::2])[:n]``: the even-numbered slopes (which
are the p-series) first, then the odd ones. With the default
``alibi_bias_max=8`` that is the paper's list, exactly; other values change
the slopes, not the order.

Slopes here are the true values correctly rounded to float64 (computed with
:mod:`decimal`). BLOOM raises a float32 base to the k-th power with
``torch.pow`` in float32, which drifts from the true slope as k grows: up to
32 float32 steps for n <= 256 (none for 1, 2, 4 or 8 heads, whose slopes are
powers of two). In bfloat16, BLOOM's usual dtype, its bias and posenc's agree
on 95–100% of entries, the rest one bfloat16 step apart. MPT's float32
slopes are within one step of the true ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, check_dtype, check_positions, check_real, check_span, show_value
from . import functions
from .alibi_variants import (
    ALIBI_CONVENTIONS,
    ALIBI_VARIANTS,
    AlibiConvention,
    Bloom,
    Mpt,
    Press,
    alibi_convention,
    is_variant,
    register_alibi,
    variant_slopes,
)
from .numpy_backend import NUMPY_BIAS, product
from .spec import AlibiSpec

__all__ = [
    "ALIBI_CONVENTIONS",
    "ALIBI_VARIANTS",
    "AlibiConvention",
    "AlibiSpec",
    "Bloom",
    "Mpt",
    "Press",
    "alibi_bias",
    "alibi_convention",
    "alibi_distance",
    "alibi_rows_at",
    "alibi_slopes",
    "alibi_table",
    "is_variant",
    "register_alibi",
]


def alibi_slopes(n_heads: int, *, convention: Any = "press") -> np.ndarray:
    """The per-head slopes m_h of ALiBi, float64 ``[n_heads]``, correctly rounded.

    Args:
        n_heads: attention heads, >= 1.
        convention: ``"press"`` or ``"bloom"`` (the paper's slopes, which
            BLOOM uses), ``"mpt"`` (``alibi_bias_max=8``), or an instance
            such as ``Mpt(alibi_bias_max=16)``.

    Raises:
        PosEncError: n_heads < 1 or an unknown convention.

    >>> alibi_slopes(8).tolist()
    [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
    >>> alibi_slopes(12)[8:].round(6).tolist()    # 2**-0.5, 2**-1.5, …: the second series
    [0.707107, 0.353553, 0.176777, 0.088388]
    """
    return variant_slopes(alibi_convention(convention), n_heads)


_FLOAT64_MAX = float(np.finfo(np.float64).max)


def alibi_distance(n_heads: int, penalty: float = 1.0, *, convention: Any = "press") -> np.ndarray:
    """The distance at which each head's penalty m_h·d reaches ``penalty``: float64 ``[n_heads]``.

    A key that far back has its attention weight multiplied by exp(−penalty)
    relative to the query's own position (e**-1 ≈ 0.37 for the default).

    >>> alibi_distance(8, 1.0).tolist()
    [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    """
    slopes = alibi_slopes(n_heads, convention=convention)
    p = check_real(penalty, "penalty")
    if not p > 0:
        raise PosEncError(f"penalty must be > 0, got {penalty!r}")
    m = float(slopes.min())
    if math.isinf(float(p) / m):  # Python floats: inf, never NumPy's overflow warning
        raise PosEncError(
            f"penalty must keep penalty/m_h finite (the distance is float64), got {show_value(penalty)}: "
            f"with the smallest slope m = {m!r} it overflows; expected penalty <= about {_FLOAT64_MAX * m!r}"
        )
    return p / slopes


def alibi_table(
    n_heads: int, start: int, length: int, *, convention: Any = "press", dtype: Any = np.float32
) -> np.ndarray:
    """Rows ``m_h·t`` for t = start … start+length-1: ``[length, n_heads]`` in ``dtype``.

    The values of :func:`alibi_bias`, bit for bit, indexed by the distance
    term t (``j − i`` for press, ``j`` for bloom, ``j − (k_len − 1)`` for
    mpt): the rows behind :class:`posenc.torch.AlibiBias`.

    >>> alibi_table(2, -2, 3).tolist()
    [[-0.125, -0.0078125], [-0.0625, -0.00390625], [0.0, 0.0]]
    """
    first, n = check_span(start, length)
    return alibi_rows_at(n_heads, np.arange(first, first + n), convention=convention, dtype=dtype)


def alibi_rows_at(n_heads: int, t: Any, *, convention: Any = "press", dtype: Any = np.float32) -> np.ndarray:
    """Rows ``m_h·t`` at any distance terms t ``[m]``: ``[m, n_heads]`` in ``dtype``."""
    slopes = alibi_slopes(n_heads, convention=convention)
    dt = check_dtype(dtype)
    terms = check_positions(t, "t").reshape(-1, 1)
    return product(slopes[None, :], terms).astype(dt)


def alibi_bias(
    q_len: int,
    k_len: int,
    n_heads: int,
    *,
    offset: int = 0,
    positions: Any = None,
    convention: Any = "press",
    causal: bool = True,
    dtype: Any = np.float32,
) -> np.ndarray:
    """The ALiBi bias to add to attention scores ``[…, n_heads, q_len, k_len]``.

    Query r sits at key index ``offset + r`` (``offset`` = tokens already in
    the KV cache when decoding); key j at index j. Positions are the indices,
    or ``positions[..., j]`` when given (left-padded batches: BLOOM's
    ``(cumsum(mask) − 1)·mask``), the query taking its key's position.

    Args:
        q_len, k_len: queries and keys, >= 1.
        n_heads: heads, >= 1.
        offset: the first query's key index (any integer without ``causal``
            or ``positions``).
        positions: None, or real ``[k_len]`` / ``[b, k_len]`` key positions.
        convention: ``"press"``, ``"bloom"``, ``"mpt"`` or an instance.
        causal: mask keys after the query with ``-inf``.
        dtype: float16, float32 or float64.

    Returns:
        ``[n_heads, q_len, k_len]``, or ``[b, n_heads, q_len, k_len]`` for
        ``[b, k_len]`` positions: each value the float64 product of the
        correctly rounded slope and the distance, rounded once to ``dtype``
        (exact when the slope is a power of two); ``-inf`` where masked.

    Raises:
        PosEncError: before any work, for bad arguments, for a query that is
            not a key under ``causal`` (``offset + q_len > k_len``), and for a
            bias too large for ``dtype``.

    >>> alibi_bias(3, 3, 1).tolist()                      # slope 2**-8, causal
    [[[0.0, -inf, -inf], [-0.00390625, 0.0, -inf], [-0.0078125, -0.00390625, 0.0]]]
    >>> alibi_bias(1, 3, 1, offset=2, convention="bloom").tolist()   # decoding: m·j
    [[[0.0, 0.00390625, 0.0078125]]]
    """
    return functions.alibi_bias(NUMPY_BIAS, q_len, k_len, n_heads, offset=offset, positions=positions,
                                convention=convention, causal=causal, dtype=dtype)
