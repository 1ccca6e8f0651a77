"""ALiBi in transformers models (BLOOM, MPT, Falcon with ``alibi=True``) with posenc's correctly rounded slopes.

transformers computes the slopes in float32 with ``torch.pow``
(``models/bloom/modeling_bloom.py`` ``_get_alibi_slopes``; in 4.x inline in
``build_alibi_tensor``,
``models/falcon/modeling_falcon.py`` ``build_alibi_tensor``, which also rounds
them to bfloat16 before multiplying by the positions, and
``models/mpt/modeling_mpt.py`` ``build_mpt_alibi_tensor``: ``1 / 2**(i·max/n)``).
For a power-of-two head count the slopes are powers of two and every rule
agrees exactly; otherwise (BLOOM-176B's 112 heads) the second series
``2**(-(2i+1)·8/(2n))`` is irrational and float32 ``pow`` may miss the
correctly rounded value by an ulp. The patched models use
:func:`posenc.alibi_slopes` (float64, correctly rounded) rounded once to
float32, and Falcon's product in float32 instead of bfloat16.

BLOOM and Falcon call module-level functions; the patch replaces them with
dispatchers that give posenc's slopes only inside a patched model's forward
(a context variable set by forward hooks), so unpatched models are untouched.
"""

from __future__ import annotations

import contextvars
import importlib
import threading
from typing import Any

import torch

from ..bias.alibi import Mpt, alibi_slopes

__all__ = ["patch_alibi", "unpatch_alibi"]

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("posenc_alibi", default=False)
_LOCK = threading.Lock()
_ORIGINAL: dict[tuple[str, str], Any] = {}
_HOOKS = "_posenc_alibi_hooks"


def _slopes(n_heads: int, device: Any, convention: Any = "press") -> torch.Tensor:
    return torch.tensor(alibi_slopes(n_heads, convention=convention), dtype=torch.float32, device=device)


def _bloom_slopes(num_heads: int, device: Any) -> torch.Tensor:
    if _ACTIVE.get():
        return _slopes(num_heads, device)
    return _ORIGINAL[("bloom", "_get_alibi_slopes")](num_heads, device)


def _bloom_alibi(attention_mask: torch.Tensor, num_heads: int, dtype: torch.dtype) -> torch.Tensor:
    """transformers 4.x's BLOOM ``build_alibi_tensor`` (slopes inline, no ``_get_alibi_slopes``), posenc's slopes."""
    if not _ACTIVE.get():
        return _ORIGINAL[("bloom", "build_alibi_tensor")](attention_mask, num_heads, dtype)
    batch_size, seq_length = attention_mask.shape
    positions = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = _slopes(num_heads, attention_mask.device)[..., None] * positions
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


def _falcon_alibi(attention_mask: torch.Tensor, num_heads: int, dtype: torch.dtype) -> torch.Tensor:
    if not _ACTIVE.get():
        return _ORIGINAL[("falcon", "build_alibi_tensor")](attention_mask, num_heads, dtype)
    batch_size, seq_length = attention_mask.shape
    positions = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :].to(torch.float32)
    alibi = _slopes(num_heads, attention_mask.device)[..., None] * positions
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


def _install(family: str, name: str, replacement: Any) -> None:
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    with _LOCK:
        if (family, name) not in _ORIGINAL:
            _ORIGINAL[(family, name)] = getattr(module, name)
            setattr(module, name, replacement)


def _activate(model: Any) -> None:
    def enter(module: Any, args: Any, kwargs: Any) -> None:
        module._posenc_alibi_token = _ACTIVE.set(True)

    def leave(module: Any, args: Any, kwargs: Any, output: Any) -> None:
        token = vars(module).pop("_posenc_alibi_token", None)
        if token is not None:
            _ACTIVE.reset(token)

    hooks = (model.register_forward_pre_hook(enter, with_kwargs=True),
             model.register_forward_hook(leave, with_kwargs=True, always_call=True))
    object.__setattr__(model, _HOOKS, hooks)


class _MptAlibi:
    """``MptModel.build_mpt_alibi_tensor`` with posenc's MPT slopes (``alibi_bias_max``)."""

    def __call__(self, num_heads: int, sequence_length: int, alibi_bias_max: float = 8,
                 device: Any = None) -> torch.Tensor:
        convention = Mpt(alibi_bias_max=float(alibi_bias_max))
        positions = torch.arange(1 - sequence_length, 1, dtype=torch.float32, device=device).view(1, 1, -1)
        return positions * _slopes(num_heads, device, convention).view(num_heads, 1, 1)


def patch_alibi(model: Any) -> bool:
    """Patch an ALiBi model (True), or do nothing (False) for any other."""
    config = model.config
    model_type = getattr(config, "model_type", None)
    if model_type == "mpt":
        for module in model.modules():
            if hasattr(module, "build_mpt_alibi_tensor") and not isinstance(
                    vars(module).get("build_mpt_alibi_tensor"), _MptAlibi):
                module.build_mpt_alibi_tensor = _MptAlibi()
        return True
    if model_type == "bloom" or (model_type == "falcon" and getattr(config, "alibi", False)):
        if model_type == "bloom":
            module = importlib.import_module("transformers.models.bloom.modeling_bloom")
            if hasattr(module, "_get_alibi_slopes") or ("bloom", "_get_alibi_slopes") in _ORIGINAL:
                _install("bloom", "_get_alibi_slopes", _bloom_slopes)
            else:  # transformers 4.x: the slopes are computed inside build_alibi_tensor
                _install("bloom", "build_alibi_tensor", _bloom_alibi)
        else:
            _install("falcon", "build_alibi_tensor", _falcon_alibi)
        if getattr(model, _HOOKS, None) is None:
            _activate(model)
        return True
    return False


def unpatch_alibi(model: Any) -> None:
    """Undo :func:`patch_alibi` on this model (the dispatchers stay: unpatched models get the originals)."""
    for hook in getattr(model, _HOOKS, None) or ():
        hook.remove()
    if getattr(model, _HOOKS, None) is not None:
        object.__setattr__(model, _HOOKS, None)
    for module in model.modules():
        if isinstance(vars(module).get("build_mpt_alibi_tensor"), _MptAlibi):
            del module.build_mpt_alibi_tensor
