"""Relative position biases: position enters the attention scores, not the tokens.

- :mod:`.alibi`: ALiBi's per-head linear penalty (the paper, BLOOM, MPT).
- :mod:`.t5`: T5's relative-position buckets (the learned table lives in
  :class:`posenc.torch.T5RelativeBias`).

Their settings are specs (:mod:`.spec`); each function is written once over
a backend (:mod:`.functions`, :mod:`.backend`), NumPy's in :mod:`.numpy_backend`.

xPos, a rotation with a decay, lives with RoPE (:mod:`posenc.rope`).
"""

from .alibi import (
    ALIBI_CONVENTIONS,
    ALIBI_VARIANTS,
    AlibiConvention,
    AlibiSpec,
    Bloom,
    Mpt,
    Press,
    alibi_bias,
    alibi_convention,
    alibi_distance,
    alibi_slopes,
    alibi_table,
    register_alibi,
)
from .t5 import T5Buckets, T5Settings, t5_bias, t5_bucket, t5_bucket_edges, t5_buckets

__all__ = [
    "ALIBI_CONVENTIONS",
    "ALIBI_VARIANTS",
    "AlibiConvention",
    "AlibiSpec",
    "Bloom",
    "Mpt",
    "Press",
    "T5Buckets",
    "T5Settings",
    "alibi_bias",
    "alibi_convention",
    "alibi_distance",
    "alibi_slopes",
    "alibi_table",
    "register_alibi",
    "t5_bias",
    "t5_bucket",
    "t5_bucket_edges",
    "t5_buckets",
]
