"""Moving q/k projection weights between the two RoPE layouts."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PosEncError, check_int
from ..support.layout import check_pair_layout, pair_permutation
from ..support.memory import check_size
from ..support.vocabulary import PAIR_CHANNELS, PairLayout
from .frequencies import check_dims

__all__ = ["permute_qk_weights", "qk_permutation"]


def qk_permutation(
    head_dim: int, n_heads: int, from_layout: PairLayout, to_layout: PairLayout, *, rotary_dim: int | None = None
) -> np.ndarray:
    """Row indices ``idx`` with ``w_to = w_from[idx]`` for q/k projections ``[n_heads·h_d, ...]``.

    Within each head the first ``rotary_dim`` rows are reordered so that
    pair i of ``from_layout`` becomes pair i of ``to_layout``; the rest stay.

    >>> qk_permutation(4, 2, "interleaved", "half").tolist()
    [0, 2, 1, 3, 4, 6, 5, 7]
    """
    h, r = check_dims(head_dim, rotary_dim)
    nh = check_int(n_heads, "n_heads", minimum=1)
    src = PAIR_CHANNELS[check_pair_layout(from_layout)]
    dst = PAIR_CHANNELS[check_pair_layout(to_layout)]
    check_size((nh, h), np.intp, "qk_permutation")
    within = np.concatenate([pair_permutation(r, src, dst), np.arange(r, h)])
    return (np.arange(nh)[:, None] * h + within[None, :]).reshape(-1)


def permute_qk_weights(
    w: Any, n_heads: int, from_layout: PairLayout, to_layout: PairLayout, *, rotary_dim: int | None = None
) -> Any:
    """Convert a q or k projection (weight or bias) between RoPE layouts.

    ``"interleaved"`` → ``"half"`` is what HF's
    ``models/llama/convert_llama_weights_to_hf.py`` ``permute`` does to Meta
    checkpoints (``view(n_heads, h_d/2, 2, d_in).transpose(1, 2)``); the
    reverse undoes it. A model whose q and k projections are both permuted,
    run with the other layout, gives the same attention scores. Apply it to
    q and k only (v and o are not rotated); for grouped-query attention pass
    the number of key/value heads for k.

    Args:
        w: weight ``[n_heads·h_d, d_in]`` or bias ``[n_heads·h_d]``: a NumPy
            array or anything indexable by an integer array along axis 0
            (a torch tensor works).
        n_heads: heads in this projection.
        from_layout, to_layout: ``"half"`` or ``"interleaved"``.
        rotary_dim: rotated channels per head (default all).

    Returns:
        The permuted copy, same type, shape and dtype.

    >>> permute_qk_weights(np.arange(4), 1, "interleaved", "half").tolist()
    [0, 2, 1, 3]
    """
    shape = tuple(getattr(w, "shape", ()))
    if len(shape) not in (1, 2):
        raise PosEncError(f"w must be a weight [n_heads*h_d, d_in] or a bias [n_heads*h_d], got shape {shape}")
    nh = check_int(n_heads, "n_heads", minimum=1)
    if shape[0] % nh:
        raise PosEncError(f"w has {shape[0]} rows, not a multiple of n_heads = {nh}")
    if shape[0] == 0 or (shape[0] // nh) % 2:
        raise PosEncError(f"w has {shape[0]} rows for n_heads = {nh}: head_dim = rows / n_heads = "
                          f"{shape[0] // nh} must be a positive even integer")
    idx = qk_permutation(shape[0] // nh, nh, from_layout, to_layout, rotary_dim=rotary_dim)
    return w[idx]
