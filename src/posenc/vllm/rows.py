"""What a vLLM rotary class's cache holds, as posenc's RoPE settings: one :class:`~posenc.RopeConfig` per class.

Each vLLM 0.33.0 class (``vllm/model_executor/layers/rotary_embedding/``)
keeps the settings its cache is built from as attributes, set before
``RotaryEmbeddingBase.__init__`` builds the cache; :func:`spec_of` reads them
into the transformers definition of the same rope type
(:mod:`posenc.rope.scaling`), and :func:`exact_cache` builds the
``[positions, rotary_dim]`` table ``[cos | sin]`` from posenc's exact rows
(:func:`posenc.rope_table`: each value the true cos/sin times the attention
factor, rounded once to float32). No vLLM import here: the settings are
plain numbers.

Where vLLM's rule differs from transformers', posenc follows transformers
(the checkpoint's definition):

- ``DeepseekScalingRotaryEmbedding``: vLLM's attention factor is
  g(s, mscale)/g(s, mscale_all_dim) with defaults 1 and 0; transformers'
  (``_compute_yarn_parameters``) takes that ratio only when both are set and
  non-zero, else g(s, 1), g(s, m) = 0.1·m·ln s + 1; and an explicit
  ``attention_factor`` wins (``get_rope`` does not pass it to this class:
  :mod:`posenc.vllm.classes` reads it from the model's config).
- ``MRotaryEmbedding`` with YaRN: vLLM's ramp reads the cache length
  (``original_max_position_embeddings · positions_factor``) as YaRN's
  original length; transformers reads ``original_max_position_embeddings``.
- ``DynamicNTKScalingRotaryEmbedding``: vLLM fixes one base for the cache
  from ``max_position_embeddings`` and ``max_trained_positions``, as
  transformers' rule at that length; below ``max_trained_positions`` vLLM's
  formula shrinks the base, transformers keeps it.

>>> spec, length, seq_len = spec_of("RotaryEmbedding", {"rotary_dim": 4, "base": 100.0,
...                                                     "max_position_embeddings": 3})
>>> spec.rotary_dim, spec.base, length
(4, 100.0, 3)
>>> exact_cache(spec, length, seq_len).astype(float).round(4).tolist()[1]  # [cos | sin] of position 1
[0.5403, 0.995, 0.8415, 0.0998]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import PosEncError
from ..rope.cos_sin import rope_table
from ..rope.frequencies import spec_frequencies
from ..rope.scaling import DynamicNTK, Linear, Llama3, Proportional, YaRN
from ..rope.spec import RopeConfig

__all__ = ["PATCHED", "STOCK", "arange_length", "exact_cache", "linear_specs", "spec_of"]

#: vLLM classes whose cache posenc builds (vLLM 0.33.0 names)
PATCHED = ("RotaryEmbedding", "LinearScalingRotaryEmbedding", "DynamicNTKScalingRotaryEmbedding",
           "YaRNScalingRotaryEmbedding", "DeepseekScalingRotaryEmbedding", "Llama3RotaryEmbedding",
           "MRotaryEmbedding", "MRotaryEmbeddingInterleaved", "Gemma4RotaryEmbedding")

#: vLLM classes left stock, and why
STOCK: dict[str, str] = {
    "Phi3LongRoPEScaledRotaryEmbedding": "a plain nn.Module in vLLM 0.33.0, not a CustomOp: "
                                         "CustomOp.register_oot cannot replace it",
    "NTKScalingRotaryEmbedding": "vLLM's fixed/mixed NTK (rope_type 'ntk') is no transformers rope type",
    "DynamicNTKAlphaRotaryEmbedding": "the 'alpha' form of dynamic NTK is no transformers rope type",
    "DualChunkRotaryEmbedding": "dual-chunk attention's several caches are no transformers rope type",
    "DeepseekV4ScalingRotaryEmbedding": "DeepSeek-V4 already keeps a float32 cache; its rows are not reproduced",
    "Llama4VisionRotaryEmbedding": "a 2-D vision rotation (complex freqs), not a cos/sin cache of positions",
    "BailingMRotaryEmbedding": "Bailing's multi-axis layout is not reproduced",
    "FourierRotaryEmbedding": "FoPE's learned frequencies are weights, not a formula",
}


def arange_length(end: float) -> int:
    """How many positions ``torch.arange(end)`` gives: ceil(end) (the stock caches' lengths)."""
    return max(0, math.ceil(float(end)))


def _or_none(value: Any) -> Any:
    return None if value is None else float(value)


def _yarn(a: Mapping[str, Any], original_max: int, kwargs: Mapping[str, Any]) -> YaRN:
    return YaRN(float(a["scaling_factor"]), int(original_max), beta_fast=float(a.get("beta_fast", 32)),
                beta_slow=float(a.get("beta_slow", 1)), mscale=_or_none(kwargs.get("mscale")),
                mscale_all_dim=_or_none(kwargs.get("mscale_all_dim")),
                attention_factor=_or_none(kwargs.get("attention_factor")),
                truncate=bool(a.get("truncate", True)))


def spec_of(name: str, a: Mapping[str, Any],
            kwargs: Mapping[str, Any] | None = None) -> tuple[RopeConfig, int, int | None]:
    """(spec, cache length, seq_len) for vLLM class ``name`` with attributes ``a`` and keyword arguments ``kwargs``.

    ``a`` holds the instance's attributes when its cache is built
    (``rotary_dim``, ``base``, ``max_position_embeddings``, the class's own);
    ``kwargs`` the keyword arguments its constructor was given (YaRN's
    ``mscale``, ``mscale_all_dim``, ``attention_factor``; M-RoPE's
    ``positions_factor``), which vLLM folds into one number before the cache.

    Raises:
        PosEncError: a class posenc does not reproduce, or settings posenc refuses.
    """
    kw = kwargs or {}
    r, base, n = int(a["rotary_dim"]), float(a["base"]), int(a["max_position_embeddings"])
    if name in ("RotaryEmbedding", "MRotaryEmbedding", "MRotaryEmbeddingInterleaved"):
        if a.get("scaling_factor") is None:
            return RopeConfig(r, base=base), n, None
        # vLLM's M-RoPE cache is positions_factor × the original length; YaRN's original length is the config's
        original = n // int(kw.get("positions_factor", 4))
        return RopeConfig(r, base=base, scaling=_yarn(a, original, kw)), arange_length(n * a["scaling_factor"]), None
    if name == "Llama3RotaryEmbedding":
        scaling = Llama3(float(a["scaling_factor"]), float(a["low_freq_factor"]), float(a["high_freq_factor"]),
                         int(a["orig_max_position"]))
        return RopeConfig(r, base=base, scaling=scaling), n, None
    if name == "DynamicNTKScalingRotaryEmbedding":
        dynamic = DynamicNTK(float(a["scaling_factor"]), int(a["max_trained_positions"]))
        return RopeConfig(r, base=base, scaling=dynamic), n, n  # the base of a sequence of the cache's length
    if name == "YaRNScalingRotaryEmbedding":
        return RopeConfig(r, base=base, scaling=_yarn(a, n, kw)), arange_length(n * a["scaling_factor"]), None
    if name == "DeepseekScalingRotaryEmbedding":
        yarn = _yarn(a, n, {"mscale": kw.get("mscale", 1), "mscale_all_dim": kw.get("mscale_all_dim", 0),
                            "attention_factor": kw.get("attention_factor")})
        return RopeConfig(r, base=base, scaling=yarn), arange_length(n * a["scaling_factor"]), None
    if name == "Gemma4RotaryEmbedding":
        head = int(a["head_size"])
        k = int(a["rope_angles"])
        return RopeConfig(head, 2 * k, base, Proportional(head)), n, None
    raise PosEncError(f"posenc does not reproduce vLLM's {name}: {STOCK.get(name, 'no such class in posenc.vllm')}")


def linear_specs(a: Mapping[str, Any]) -> list[tuple[float, RopeConfig, int]]:
    """LinearScalingRotaryEmbedding: (factor, spec, rows) per scaling factor, in vLLM's order (one cache each).

    vLLM holds ``max_position_embeddings · factor`` rows per factor, one after
    the other (LoRA adapters with several factors share one table).
    """
    factors = a["scaling_factors"]
    factors = [factors] if isinstance(factors, (int, float)) else list(factors)
    r, base, n = int(a["rotary_dim"]), float(a["base"]), int(a["max_position_embeddings"])
    return [(float(f), RopeConfig(r, base=base, scaling=Linear(float(f))), arange_length(n * f)) for f in factors]


def exact_cache(spec: RopeConfig, length: int, seq_len: int | None = None, width: int | None = None) -> np.ndarray:
    """``[length, width]`` float32: ``[cos | sin]`` of positions 0 … length-1, posenc's rows (width: 2·pairs).

    ``width`` wider than the rotary dimension pads each half with angle 0
    (cos 1, sin 0), as Gemma 4's proportional RoPE holds its unrotated pairs.
    """
    freqs = spec_frequencies(spec, seq_len)
    rows = rope_table(freqs, 0, length, np.float32)  # [length, 2, r/2]
    half = rows.shape[-1]
    pad = 0 if width is None else width // 2 - half
    if pad > 0:
        out = np.zeros((length, 2, half + pad), dtype=np.float32)
        out[:, 0, half:] = 1.0
        out[:, :, :half] = rows
        rows = out
    return rows.reshape(length, -1)
