"""Exact RoPE in vLLM: a general plugin that gives vLLM's rotary classes posenc's rows, in float32.

Install ``posenc[vllm]``; vLLM loads the plugin by itself in every process
(the ``vllm.general_plugins`` entry point ``posenc``, see
``vllm.plugins.load_general_plugins``), and ``VLLM_PLUGINS`` (a
comma-separated allow-list of plugin names) switches it off as any plugin.
:func:`register` calls ``CustomOp.register_oot(cls, name=<vLLM class name>)``
for each class of :data:`posenc.vllm.rows.PATCHED`, vLLM's own seam:
``CustomOp.__new__`` then builds posenc's subclass
(:mod:`posenc.vllm.classes`) wherever a model asks ``get_rope`` for that
class. Each subclass changes only the cache; its ``name`` stays the stock
one (``rotary_embedding``), so ``compilation_config.custom_ops`` directives
keep applying. The classes of :data:`posenc.vllm.rows.STOCK` stay stock, and
:func:`register` logs them once.

>>> from vllm.model_executor.custom_op import op_registry_oot
>>> register()
>>> op_registry_oot["YaRNScalingRotaryEmbedding"].__name__
'ExactYaRNScalingRotaryEmbedding'
>>> register()  # again (vLLM loads plugins in each process, maybe twice): nothing changes
"""

from __future__ import annotations

from typing import Any

__all__ = ["register", "registered"]

_DONE: list[str] = []


def registered() -> list[str]:
    """The vLLM class names this process's :func:`register` replaced (empty before it ran)."""
    return list(_DONE)


def register() -> None:
    """Register posenc's rotary classes with vLLM (the plugin's entry point); idempotent.

    A class another plugin already replaced is left to it (logged).
    """
    if _DONE:
        return
    from vllm.model_executor.custom_op import CustomOp, op_registry_oot

    from .classes import CLASSES, LOGGER
    from .rows import STOCK

    taken = []
    for name, cls in CLASSES.items():
        if name in op_registry_oot:
            taken.append(f"{name} (already replaced by {op_registry_oot[name].__name__})")
            continue
        CustomOp.register_oot(cls, name=name)
        cls.name = _stock_op_name(cls)  # type: ignore[attr-defined]
        _DONE.append(name)
    left = [f"{n} ({why})" for n, why in STOCK.items()] + taken
    LOGGER.info("posenc.vllm: exact float32 RoPE rows for %s; stock: %s", ", ".join(_DONE), "; ".join(left))


def _stock_op_name(cls: type) -> Any:
    """The ``name`` vLLM registered the class's stock ancestor under (``rotary_embedding``)."""
    return next((base.__dict__["name"] for base in cls.__mro__[1:] if isinstance(base.__dict__.get("name"), str)),
                cls.__dict__.get("name"))
