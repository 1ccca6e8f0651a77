"""posenc's subclasses of vLLM's rotary classes: the stock layer, its cache posenc's exact rows in float32.

Each class subclasses the vLLM class of the same name and changes only the
cache: :meth:`_Exact._compute_cos_sin_cache` builds it from posenc's rows
(:mod:`posenc.vllm.rows`), and the cache stays float32 whatever the model's
dtype: stock vLLM casts it to the model's dtype when built
(``RotaryEmbeddingBase.__init__``) and to the query's on every call
(``_match_cos_sin_cache_dtype``); here both keep float32 and only move it to
the query's device. The kernels read a float32 cache beside bfloat16 q/k
(``ops.rotary_embedding``'s CUDA kernel, the Triton M-RoPE kernel); the
native path rounds cos/sin to the query's dtype per call
(``ApplyRotaryEmb.forward_static``), from the exact value. Two paths need a
table in the query's dtype and get one, rounded once from the float32 rows
and kept: M-RoPE's 1-D positions on CUDA (flash-attn's rotary asserts equal
dtypes), and DeepSeek's ``forward_native`` casts its output back to the
query's dtype (its product would otherwise promote to float32).

A setting posenc refuses (a :class:`posenc.PosEncError` while building)
leaves that layer stock, logged once per class.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from vllm.model_executor.layers.rotary_embedding import (
    BailingMRotaryEmbedding,
    DeepseekScalingRotaryEmbedding,
    DynamicNTKAlphaRotaryEmbedding,
    DynamicNTKScalingRotaryEmbedding,
    Gemma4RotaryEmbedding,
    LinearScalingRotaryEmbedding,
    Llama3RotaryEmbedding,
    MRotaryEmbedding,
    MRotaryEmbeddingInterleaved,
    RotaryEmbedding,
    YaRNScalingRotaryEmbedding,
)

from ..errors import PosEncError
from .rows import exact_cache, linear_specs, spec_of

__all__ = ["CLASSES", "LOGGER", "model_attention_factor"]

#: vLLM's loggers' namespace: vLLM's handler prints it
LOGGER = logging.getLogger("vllm.plugins.posenc")
_WARNED: set[str] = set()


def _on_default_device(rows: Any) -> torch.Tensor:
    t = torch.from_numpy(rows)
    device = torch.empty(()).device  # the default device (vLLM builds layers inside `with torch.device(...)`)
    return t if device.type == "cpu" else t.to(device)


class _Exact:
    """The cache of posenc's rows, kept float32; the rest is the vLLM class's own."""

    _posenc_name: str  # the vLLM class's name (set below, from CLASSES)
    _posenc_kwargs: dict[str, Any]
    cos_sin_cache: torch.Tensor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._posenc_kwargs = dict(kwargs)  # YaRN's mscale and attention_factor, folded into one number by vLLM
        self._posenc_exact = False
        self._posenc_cast: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        super().__init__(*args, **kwargs)
        rows = self.__dict__.pop("_posenc_rows", None)
        if rows is not None:  # the stock __init__ cast the cache to the model's dtype: hold the float32 rows
            self.register_buffer("cos_sin_cache", rows, persistent=False)  # type: ignore[attr-defined]
            self._posenc_exact = True

    def _posenc_table(self) -> Any:
        spec, length, seq_len = spec_of(self._posenc_name, vars(self), self._posenc_kwargs)
        return exact_cache(spec, length, seq_len)

    def _compute_cos_sin_cache(self) -> torch.Tensor:
        try:
            rows = _on_default_device(self._posenc_table())
        except PosEncError as exc:
            name = self._posenc_name
            if name not in _WARNED:
                _WARNED.add(name)
                LOGGER.warning("posenc.vllm: %s left stock: %s", name, exc)
            return super()._compute_cos_sin_cache()  # type: ignore[misc]
        self._posenc_rows = rows
        return rows

    def _match_cos_sin_cache_dtype(self, query: torch.Tensor) -> torch.Tensor:
        if not self._posenc_exact:
            return super()._match_cos_sin_cache_dtype(query)  # type: ignore[misc]
        cache = self.cos_sin_cache
        if cache.device == query.device:
            return cache
        cache = cache.to(query.device)  # float32 kept
        if not torch.compiler.is_compiling():
            self.cos_sin_cache = cache
        return cache

    def _posenc_in_dtype(self, query: torch.Tensor) -> torch.Tensor:
        """The rows rounded once to the query's dtype, kept (for the paths that need equal dtypes)."""
        cache = self._match_cos_sin_cache_dtype(query)
        key = (query.dtype, query.device)
        if key not in self._posenc_cast:
            self._posenc_cast[key] = cache.to(query.dtype)
        return self._posenc_cast[key]


class ExactRotaryEmbedding(_Exact, RotaryEmbedding):
    """vLLM's ``RotaryEmbedding`` (rope_type ``default``) with posenc's rows."""


class ExactDynamicNTKScalingRotaryEmbedding(_Exact, DynamicNTKScalingRotaryEmbedding):
    """vLLM's ``DynamicNTKScalingRotaryEmbedding``: one base for the cache, transformers' rule at its length."""


class ExactDynamicNTKAlphaRotaryEmbedding(_Exact, DynamicNTKAlphaRotaryEmbedding):
    """vLLM's ``DynamicNTKAlphaRotaryEmbedding`` (HunYuan): base · alpha^(d/(d-2)), formed exactly."""


class ExactYaRNScalingRotaryEmbedding(_Exact, YaRNScalingRotaryEmbedding):
    """vLLM's ``YaRNScalingRotaryEmbedding``: the attention factor multiplied in float64, rounded once."""


class ExactLlama3RotaryEmbedding(_Exact, Llama3RotaryEmbedding):
    """vLLM's ``Llama3RotaryEmbedding``."""


class ExactGemma4RotaryEmbedding(_Exact, Gemma4RotaryEmbedding):
    """vLLM's ``Gemma4RotaryEmbedding`` (proportional): the unrotated pairs hold cos 1, sin 0."""

    def _posenc_table(self) -> Any:
        spec, length, seq_len = spec_of(self._posenc_name, vars(self), self._posenc_kwargs)
        return exact_cache(spec, length, seq_len, width=int(self.head_size))


class ExactLinearScalingRotaryEmbedding(_Exact, LinearScalingRotaryEmbedding):
    """vLLM's ``LinearScalingRotaryEmbedding``: one block of rows per scaling factor, at vLLM's offsets."""

    def _posenc_table(self) -> Any:
        import numpy as np

        blocks, offsets, at = [], {}, 0
        for factor, spec, length in linear_specs(vars(self)):
            blocks.append(exact_cache(spec, length))
            offsets[factor] = at
            at += length
        self._scaling_factor_to_offset = offsets
        return np.concatenate(blocks, axis=0)


def model_attention_factor(factor: float, original: int) -> float | None:
    """The checkpoint's explicit YaRN ``attention_factor`` for this factor and length, from vLLM's model config.

    ``get_rope`` hands DeepSeek's class ``mscale``/``mscale_all_dim`` only
    (vLLM #48621: Ministral 3's ``attention_factor`` 1.0 became 1.277); the
    model being built is the current config's. None when there is no model
    config or its rope dict is another one.
    """
    from vllm.config import get_current_vllm_config

    model = getattr(get_current_vllm_config(), "model_config", None)
    params = getattr(getattr(model, "hf_text_config", None), "rope_parameters", None)
    if not isinstance(params, dict) or params.get("attention_factor") is None:
        return None
    same = params.get("factor") == factor and params.get("original_max_position_embeddings") == original
    return float(params["attention_factor"]) if same else None


class ExactDeepseekScalingRotaryEmbedding(_Exact, DeepseekScalingRotaryEmbedding):
    """vLLM's ``DeepseekScalingRotaryEmbedding`` (``deepseek_yarn``): transformers' attention-factor rule."""

    def _posenc_table(self) -> Any:
        kw = dict(self._posenc_kwargs)
        given = model_attention_factor(self.scaling_factor, self.max_position_embeddings)
        if given is not None:
            kw["attention_factor"] = given
        spec, length, seq_len = spec_of(self._posenc_name, vars(self), kw)
        return exact_cache(spec, length, seq_len)

    def forward_native(self, positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor | None = None,
                       offsets: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        q, k = super().forward_native(positions, query, key, offsets)
        return q.to(query.dtype), None if k is None else k.to(query.dtype)


class _ExactMRope(_Exact):
    def forward_cuda(self, positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor | None = None,
                     offsets: torch.Tensor | None = None) -> Any:
        if positions.ndim == 2 or not self._posenc_exact or query.dtype == torch.float32:
            return super().forward_cuda(positions, query, key, offsets)  # type: ignore[misc]
        # 1-D positions go through flash-attn's rotary, which wants cos/sin in the query's dtype
        held = self.cos_sin_cache
        self.__dict__["_posenc_exact"] = False
        try:
            self._buffers["cos_sin_cache"] = self._posenc_in_dtype(query)  # type: ignore[attr-defined]
            return super().forward_cuda(positions, query, key, offsets)  # type: ignore[misc]
        finally:
            self._buffers["cos_sin_cache"] = held  # type: ignore[attr-defined]
            self.__dict__["_posenc_exact"] = True


class ExactMRotaryEmbedding(_ExactMRope, MRotaryEmbedding):
    """vLLM's ``MRotaryEmbedding`` (Qwen2-VL's sections, Qwen3-VL's interleaved ones; YaRN too)."""


class ExactMRotaryEmbeddingInterleaved(_ExactMRope, MRotaryEmbeddingInterleaved):
    """vLLM's ``MRotaryEmbeddingInterleaved`` (openPangu's interleaved sections)."""


class ExactBailingMRotaryEmbedding(_ExactMRope, BailingMRotaryEmbedding):
    """vLLM's ``BailingMRotaryEmbedding`` (``bailing_mrope``): the plain M-RoPE cache, its axes mixed per call."""


#: vLLM class name -> posenc's class
CLASSES: dict[str, type] = {
    "RotaryEmbedding": ExactRotaryEmbedding,
    "LinearScalingRotaryEmbedding": ExactLinearScalingRotaryEmbedding,
    "DynamicNTKScalingRotaryEmbedding": ExactDynamicNTKScalingRotaryEmbedding,
    "DynamicNTKAlphaRotaryEmbedding": ExactDynamicNTKAlphaRotaryEmbedding,
    "YaRNScalingRotaryEmbedding": ExactYaRNScalingRotaryEmbedding,
    "DeepseekScalingRotaryEmbedding": ExactDeepseekScalingRotaryEmbedding,
    "Llama3RotaryEmbedding": ExactLlama3RotaryEmbedding,
    "MRotaryEmbedding": ExactMRotaryEmbedding,
    "MRotaryEmbeddingInterleaved": ExactMRotaryEmbeddingInterleaved,
    "BailingMRotaryEmbedding": ExactBailingMRotaryEmbedding,
    "Gemma4RotaryEmbedding": ExactGemma4RotaryEmbedding,
}
for _name, _cls in CLASSES.items():
    _cls._posenc_name = _name  # type: ignore[attr-defined]
