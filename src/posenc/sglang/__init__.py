"""Exact RoPE in SGLang: a general plugin whose hooks fill SGLang's rotary caches with posenc's rows.

Install ``posenc[sglang]``; SGLang runs the plugin in every process (the
``sglang.srt.plugins`` entry point ``posenc``, see
``sglang.srt.plugins.load_plugins``), and ``SGLANG_PLUGINS`` (a
comma-separated allow-list of plugin names) switches it off as any plugin.
:func:`register` puts ``AROUND`` hooks through SGLang's own seam
(``sglang.srt.plugins.hook_registry.HookRegistry``, applied by
``load_plugins``) on the two methods that fill a cache,
``_compute_cos_sin_cache`` and ``_ensure_cos_sin_cache_length``, of
SGLang 0.5.23's ``RotaryEmbedding`` (which ``Llama3RotaryEmbedding``
inherits) and ``YaRNScalingRotaryEmbedding``. Nothing else of SGLang is
hooked. Each hook returns posenc's rows (:mod:`posenc.vllm.rows`: SGLang's
rotary classes keep vLLM's names and attributes) for the classes of
:data:`PATCHED` and calls SGLang's own method for every other class or
setting, logged once per class.

SGLang itself decides the cache's dtype: float32 on CUDA, HIP and XPU, or
with ``SGLANG_ROPE_CACHE_FP32=1``; elsewhere (this CPU) the model's dtype,
then rounded once from posenc's float32 rows.

>>> register()
>>> registered()[0]
'sglang.srt.layers.rotary_embedding.base.RotaryEmbedding._compute_cos_sin_cache'
>>> register()  # again (SGLang loads plugins in each process): nothing changes
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["PATCHED", "TARGETS", "register", "registered"]

#: SGLang's loggers' namespace
LOGGER = logging.getLogger("sglang.srt.plugins.posenc")

_BASE = "sglang.srt.layers.rotary_embedding.base.RotaryEmbedding"
_YARN = "sglang.srt.layers.rotary_embedding.yarn.YaRNScalingRotaryEmbedding"
#: the methods hooked (SGLang 0.5.23 paths)
TARGETS = tuple(f"{cls}.{method}" for cls in (_BASE, _YARN)
                for method in ("_compute_cos_sin_cache", "_ensure_cos_sin_cache_length"))
#: SGLang classes whose cache posenc fills (the class itself, not a subclass with a cache rule of its own)
PATCHED = ("RotaryEmbedding", "Llama3RotaryEmbedding", "YaRNScalingRotaryEmbedding")

_DONE: list[str] = []
_WARNED: set[str] = set()


def registered() -> list[str]:
    """The hook targets this process's :func:`register` registered (empty before it ran)."""
    return list(_DONE)


def register() -> None:
    """Register posenc's hooks with SGLang's ``HookRegistry`` (the plugin's entry point); idempotent."""
    if _DONE:
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    for target in TARGETS:
        hook = _build_hook if target.endswith("_compute_cos_sin_cache") else _grow_hook
        HookRegistry.register(target, hook, HookType.AROUND)
        _DONE.append(target)
    LOGGER.info("posenc.sglang: exact RoPE rows for %s; every other rotary class stays stock", ", ".join(PATCHED))


def _stock(name: str, why: str) -> None:
    if name not in _WARNED:
        _WARNED.add(name)
        LOGGER.warning("posenc.sglang: %s left stock: %s", name, why)


def _spec(layer: Any) -> tuple[Any, int] | None:
    """(spec, cache length) posenc builds for this layer, or None (stock, logged) when it does not."""
    from ..errors import PosEncError
    from ..vllm.rows import spec_of

    name = type(layer).__name__
    if name not in PATCHED:
        _stock(name, "its cache rule is not one posenc reproduces here")
        return None
    a = vars(layer)
    if a.get("position_start", 0) != 0:
        _stock(name, f"position_start {a['position_start']} (posenc's rows start at 0)")
        return None
    kw: dict[str, Any] = {}
    if name == "YaRNScalingRotaryEmbedding":
        from sglang.srt.layers.rotary_embedding.yarn import yarn_get_mscale_simple

        # SGLang folds mscale, mscale_all_dim and attn_factor into one float before the cache: only the plain
        # rule (0.1·ln s + 1, no extrapolation_factor) is read back unambiguously
        plain = float(yarn_get_mscale_simple(a["scaling_factor"]))
        if a.get("attn_factor", 1) != 1 or a.get("extrapolation_factor", 1) != 1 or a.get("mscale") != plain:
            _stock(name, "mscale/mscale_all_dim/attn_factor/extrapolation_factor other than YaRN's defaults")
            return None
    try:
        spec, length, _ = spec_of(name, a, kw)
    except PosEncError as exc:
        _stock(name, str(exc))
        return None
    return spec, length


def _rows(spec: Any, length: int) -> Any:
    import torch

    from ..vllm.rows import exact_cache

    t = torch.from_numpy(exact_cache(spec, length))
    device = torch.empty(()).device  # the default device (layers are built inside `with torch.device(...)`)
    return t if device.type == "cpu" else t.to(device)


def _build_hook(original: Any, layer: Any) -> Any:
    """``_compute_cos_sin_cache``: posenc's float32 ``[length, rotary_dim]`` rows ``[cos | sin]``."""
    found = _spec(layer)
    if found is None:
        return original(layer)
    layer.__dict__["_posenc_spec"] = found[0]
    return _rows(*found)


def _grow_hook(original: Any, layer: Any, needed_max_pos: int) -> Any:
    """``_ensure_cos_sin_cache_length``: SGLang's rule for the new length, every row posenc's."""
    spec = layer.__dict__.get("_posenc_spec")
    if spec is None:
        return original(layer, needed_max_pos)
    cache = layer.cos_sin_cache
    if needed_max_pos < cache.shape[0]:
        return None
    from sglang.srt.environ import envs

    align = envs.SGLANG_ROPE_CACHE_ALIGN.get()
    new_len = ((needed_max_pos + align) // align) * align
    layer.cos_sin_cache = _rows(spec, new_len).to(device=cache.device, dtype=cache.dtype)
    return None
