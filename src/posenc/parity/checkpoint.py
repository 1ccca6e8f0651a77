"""Trainer/inference parity of a checkpoint's RoPE: each implementation's cos/sin error, and where they disagree.

:func:`parity` reads a Hugging Face ``config.json`` (:func:`posenc.from_hf_config`)
and measures, at chosen positions, how far each available implementation's
cos/sin rows are from the exact value (posenc's float64 rows, each within
1 ulp of float64 of the true cos/sin times the attention factor):

- ``posenc float32``: :func:`posenc.rope_cos_sin`;
- ``transformers float32`` / ``transformers bfloat16`` (when transformers
  and torch import): ``LlamaRotaryEmbedding`` of the same rope settings,
  the forward nearly every family copies (float32 ``p · ω``, ``cos`` times
  the attention scaling, cast to the activations' dtype);
- ``vLLM stock float32`` / ``vLLM stock bfloat16`` (when vllm imports):
  ``get_rope`` as vLLM's models call it, its cache read at the positions,
  with posenc's plugin (:mod:`posenc.vllm`) set aside.

The settings an implementation holds differently from transformers'
definition (the attention factor; transformers' float32 inverse frequencies;
positions past vLLM's cache) are named in :attr:`ParityReport.disagreements`.
Text positions only: a multi-axis config's token at (p, p, p).

>>> cfg = {"head_dim": 64, "max_position_embeddings": 4096, "rope_theta": 10000.0}
>>> rep = parity(cfg, positions=[0, 4095], implementations=("posenc float32",))
>>> rep.errors["posenc float32"][1] < 1e-7
True
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PosEncError, check_positions, show_value
from ..hf.config import from_hf_config
from ..rope.cos_sin import rope_cos_sin
from ..rope.frequencies import spec_frequencies
from ..rope.spec import RopeConfig

__all__ = ["IMPLEMENTATIONS", "ParityReport", "default_positions", "parity"]

IMPLEMENTATIONS = ("posenc float32", "transformers float32", "transformers bfloat16", "vLLM stock float32",
                   "vLLM stock bfloat16")
_DEEPSEEK = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "mistral3", "ministral3")


@dataclass(frozen=True)
class ParityReport:
    """What :func:`parity` measured.

    Attributes:
        spec: the config's :class:`~posenc.RopeConfig`.
        positions: the positions measured, ``[n]``.
        errors: implementation -> ``[n]`` max over pairs of |cos - exact|, |sin - exact|
            (NaN where the implementation holds no row for that position).
        attention_factors: implementation -> the factor its rows carry (cos at position 0).
        unavailable: implementation -> why it was not measured (not installed, refused the config).
        disagreements: one line per setting an implementation holds differently from transformers' definition.
    """

    spec: RopeConfig
    positions: list[int]
    errors: dict[str, list[float]]
    attention_factors: dict[str, float]
    unavailable: dict[str, str] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)


def default_positions(context: int) -> list[int]:
    """0, 1, 10, 100, … below ``context``, and ``context - 1``.

    >>> default_positions(131072)
    [0, 1, 10, 100, 1000, 10000, 100000, 131071]
    """
    out = [0] + [10**k for k in range(int(math.log10(max(context - 1, 1))) + 1) if 10**k < context - 1]
    return sorted(set([*out, context - 1]))


def _exact(spec: RopeConfig, pos: np.ndarray, dtype: Any) -> np.ndarray:
    """``[n, r]`` ``[cos | sin]`` of text positions (every axis at p with sections)."""
    at = pos if spec.sections is None else np.stack([pos] * len(spec.sections), axis=-1)
    cos, sin = rope_cos_sin(at, spec, dtype=dtype, seq_len=int(pos.max()) + 1)
    return np.concatenate([cos, sin], axis=-1).astype(np.float64)


def _hf_rows(cfg: Mapping[str, Any], spec: RopeConfig, pos: np.ndarray, bf16: bool) -> np.ndarray:
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    keep = ("head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings", "rope_parameters",
            "rope_scaling", "rope_theta", "partial_rotary_factor", "original_max_position_embeddings")
    config = LlamaConfig(**{k: cfg[k] for k in keep if k in cfg})
    r = int(spec.rotary_dim or spec.head_dim)
    # LlamaRotaryEmbedding reads no partial_rotary_factor (inv_freq over the whole head); the partial models'
    # own classes (Phi, GPT-NeoX, StableLM) compute over dim = int(head_dim * partial_rotary_factor): the same
    # rows as this stand-in given head_dim = rotary_dim and no factor
    config.head_dim = r
    if r != spec.head_dim:
        if hasattr(config, "partial_rotary_factor"):
            config.partial_rotary_factor = 1.0
        params = getattr(config, "rope_parameters", None)
        if isinstance(params, dict):
            params.pop("partial_rotary_factor", None)
    rotary = LlamaRotaryEmbedding(config)
    x = torch.zeros(1, dtype=torch.bfloat16 if bf16 else torch.float32)
    cos, sin = rotary(x, torch.as_tensor(pos, dtype=torch.long)[None])
    return torch.cat([cos[0, :, :r // 2], sin[0, :, :r // 2]], dim=-1).double().numpy()


def _vllm_params(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The ``rope_parameters`` vLLM's models hand ``get_rope`` for this config (vLLM's legacy-key patching)."""
    params = dict(cfg.get("rope_parameters") or cfg.get("rope_scaling") or {})
    if "rope_type" not in params and "type" in params:
        params["rope_type"] = params.pop("type")
    params["rope_type"] = {"su": "longrope", "mrope": "default"}.get(params.get("rope_type", "default"),
                                                                     params.get("rope_type", "default"))
    for key in ("rope_theta", "partial_rotary_factor", "original_max_position_embeddings"):
        if key not in params and cfg.get(key) is not None:
            params[key] = cfg[key]
    if cfg.get("model_type") in _DEEPSEEK and params["rope_type"] != "default":  # deepseek_v2.py's renaming
        params["rope_type"] = "deepseek_llama_scaling" if params.get("attention_factor") == 1.0 else "deepseek_yarn"
    return params


@contextlib.contextmanager
def _stock_vllm() -> Iterator[None]:
    """vLLM with posenc's plugin set aside (if this process loaded it), on the CPU."""
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm.model_executor.layers import rotary_embedding

    import posenc.vllm

    held = {n: op_registry_oot.pop(n) for n in posenc.vllm.registered() if n in op_registry_oot}
    rotary_embedding._ROPE_DICT.clear()
    try:
        with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
            yield
    finally:
        op_registry_oot.update(held)
        rotary_embedding._ROPE_DICT.clear()


def _vllm_rows(cfg: Mapping[str, Any], spec: RopeConfig, pos: np.ndarray, bf16: bool) -> np.ndarray:
    import torch

    params = _vllm_params(cfg)
    if params["rope_type"] == "longrope":
        raise PosEncError("vLLM's LongRoPE reads max_model_len from a model config (and uses the long factors "
                          "at every position once it exceeds original_max_position_embeddings)")
    max_pos = int(cfg.get("max_position_embeddings") or pos.max() + 1)
    with _stock_vllm():
        from vllm.model_executor.layers.rotary_embedding import get_rope

        rope = get_rope(spec.head_dim, max_pos, True, params, torch.bfloat16 if bf16 else torch.float32)
        cache = rope.cos_sin_cache.double().numpy()
    n = int(spec.rotary_dim or spec.head_dim) // 2
    half = cache.shape[1] // 2
    out = np.full((len(pos), 2 * n), np.nan)
    inside = pos < cache.shape[0]
    rows = cache[pos[inside]]
    out[inside] = np.concatenate([rows[:, :n], rows[:, half:half + n]], axis=-1)
    return out


def _measure(name: str, cfg: Mapping[str, Any], spec: RopeConfig, pos: np.ndarray) -> np.ndarray:
    if name == "posenc float32":
        return _exact(spec, pos, np.float32)
    bf16 = name.endswith("bfloat16")
    if name.startswith("transformers"):
        return _hf_rows(cfg, spec, pos, bf16)
    return _vllm_rows(cfg, spec, pos, bf16)


def _disagreements(spec: RopeConfig, factors: Mapping[str, float], first: Mapping[str, np.ndarray],
                   rows: Mapping[str, np.ndarray], pos: np.ndarray) -> list[str]:
    """The settings each implementation holds differently from transformers' definition, one line each."""
    freqs = spec_frequencies(spec, int(pos.max()) + 1)
    out = []
    for name, factor in factors.items():
        tol = 2.0**-8 if name.endswith("bfloat16") else 2.0**-20  # beyond the dtype's own rounding
        if abs(factor - freqs.attention_factor) > tol * freqs.attention_factor:
            out.append(f"attention factor: {name} {factor:.7g}, transformers' definition "
                       f"{freqs.attention_factor:.7g}")
    n = len(freqs.inv_freq)
    for name, row in first.items():  # cos/sin at position 1: ω_i itself, to float32's rounding
        if name.endswith("float32") and not name.startswith("posenc"):
            theirs = np.arctan2(row[n:], row[:n])
            worst = float(np.max(np.abs(theirs - freqs.inv_freq) / freqs.inv_freq))
            if worst > 2.0**-16:
                i = int(np.argmax(np.abs(theirs - freqs.inv_freq) / freqs.inv_freq))
                out.append(f"inverse frequencies: {name}'s ω_{i} is {theirs[i]:.7g}, transformers' definition "
                           f"{freqs.inv_freq[i]:.7g} (up to {worst:.2g} relative over the pairs)")
    for name, got in rows.items():
        missing = [int(p) for p, r in zip(pos, got, strict=True) if np.isnan(r).all()]
        if missing:
            out.append(f"context: {name} holds no row for position {missing[0]} (its cache ends before it)")
    return out


def _check_positions(positions: Any) -> np.ndarray:
    pos = check_positions(positions)
    if pos.ndim != 1 or pos.size == 0 or bool((pos < 0).any()) or bool((pos != np.floor(pos)).any()):
        raise PosEncError(f"positions must be a non-empty list of integers >= 0, got {show_value(positions)}")
    return pos.astype(np.int64)


def parity(config: Any, positions: Sequence[int] | None = None, *, layer: int | None = None,
           implementations: Sequence[str] = IMPLEMENTATIONS) -> ParityReport:
    """Each implementation's cos/sin error against the exact value at ``positions``, and the settings they differ on.

    Args:
        config: a ``config.json`` dict (or a ``PretrainedConfig``), read by :func:`posenc.from_hf_config`.
        positions: non-negative integer positions; default :func:`default_positions` of the config's
            ``max_position_embeddings`` (131072 when it has none).
        layer: the layer whose RoPE is wanted, for models whose layers differ.
        implementations: a subset of :data:`IMPLEMENTATIONS`.

    Returns:
        A :class:`ParityReport`; an implementation that is not installed (or refuses the config) is in
        ``unavailable`` with the reason.

    Raises:
        PosEncError: a config posenc cannot read, bad positions, an unknown implementation.
    """
    unknown = [n for n in implementations if n not in IMPLEMENTATIONS]
    if unknown:
        raise PosEncError(f"unknown implementation(s) {unknown}; expected some of {list(IMPLEMENTATIONS)}")
    spec = from_hf_config(config, layer=layer)
    if spec is None:
        raise PosEncError(f"layer {layer} of this model has no RoPE (NoPE)")
    cfg = dict(config) if isinstance(config, Mapping) else dict(config.to_dict())
    pos = _check_positions(default_positions(int(spec.max_position or 131072)) if positions is None else positions)
    every = np.concatenate([[0, 1], pos])  # position 0 shows the attention factor, 1 the frequencies
    exact = _exact(spec, every, np.float64)[2:]
    report = ParityReport(spec, pos.tolist(), {}, {})
    rows, first = {}, {}
    for name in implementations:
        try:
            got = _measure(name, cfg, spec, every)
        except ImportError as exc:
            report.unavailable[name] = f"not installed ({(exc.name or str(exc)).split('.')[0]})"
            continue
        except (PosEncError, ValueError, KeyError, TypeError) as exc:
            report.unavailable[name] = f"refused the config: {exc}"
            continue
        rows[name], first[name] = got[2:], got[1]
        report.errors[name] = np.abs(got[2:] - exact).max(axis=-1).tolist()
        report.attention_factors[name] = float(got[0, 0])
    report.disagreements.extend(_disagreements(spec, report.attention_factors, first, rows, pos))
    return report
