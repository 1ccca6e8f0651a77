"""Where sin and cos of each frequency go among the channels.

``interleaved`` (the seed's, Vaswani et al., the PyTorch tutorial, keras-hub):
channel 2i holds sin(ω_i p) and 2i+1 holds cos(ω_i p). ``split`` (fairseq,
tensor2tensor, Marian): channels 0…n-1 hold the sines, n…2n-1 the cosines.
The two are a fixed permutation of each other.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..errors import PosEncError, show_value
from .vocabulary import CHANNEL_LAYOUTS, PAIR_LAYOUTS, ROPE_LAYOUTS, ChannelLayout, PairLayout, RopeLayout

__all__ = [
    "check_channel_layout", "check_layout", "check_pair_layout", "check_rope_layout", "pair_permutation",
    "sin_cos_views",
]


def check_layout(layout: Any, allowed: tuple[str, ...]) -> str:
    """A layout name of ``allowed``, as a plain ``str``: only a ``str`` is looked up."""
    if not isinstance(layout, str) or layout not in allowed:
        raise PosEncError(
            f"layout must be one of {', '.join(repr(x) for x in allowed)}, got {show_value(layout)}"
        )
    return layout


def check_channel_layout(layout: Any) -> ChannelLayout:
    """A sinusoid's channel layout (:data:`posenc.support.vocabulary.ChannelLayout`)."""
    return cast(ChannelLayout, check_layout(layout, CHANNEL_LAYOUTS))


def check_pair_layout(layout: Any) -> PairLayout:
    """A RoPE pair layout (:data:`posenc.support.vocabulary.PairLayout`)."""
    return cast(PairLayout, check_layout(layout, PAIR_LAYOUTS))


def check_rope_layout(layout: Any) -> RopeLayout:
    """A layout RoPE rotates in (:data:`posenc.support.vocabulary.RopeLayout`: a pair layout or ``head_half``)."""
    return cast(RopeLayout, check_layout(layout, ROPE_LAYOUTS))


def sin_cos_views(out: np.ndarray, n: int, layout: ChannelLayout | str) -> tuple[np.ndarray, np.ndarray]:
    """The sin and cos channel views of ``out`` (``[..., >= 2n]``), each ``[..., n]``."""
    if layout == "interleaved":
        return out[..., 0 : 2 * n : 2], out[..., 1 : 2 * n : 2]
    return out[..., :n], out[..., n : 2 * n]


def pair_permutation(d: int, from_layout: ChannelLayout, to_layout: ChannelLayout) -> np.ndarray:
    """Index array ``idx`` with ``x_to = x_from[..., idx]``.

    >>> pair_permutation(4, "interleaved", "split").tolist()
    [0, 2, 1, 3]
    """
    n = d // 2
    src = np.empty(d, dtype=np.intp)
    s, c = sin_cos_views(src, n, from_layout)
    s[:] = np.arange(n)
    c[:] = np.arange(n, 2 * n)
    # src maps channel -> "role" (sin_i = i, cos_i = n+i); invert for from, then apply to
    role_to_from = np.argsort(src)
    dst = np.empty(d, dtype=np.intp)
    s, c = sin_cos_views(dst, n, to_layout)
    s[:] = np.arange(n)
    c[:] = np.arange(n, 2 * n)
    return role_to_from[dst]
