"""Stock vLLM beside the plugin in one process, and get_rope without its memo (tests/vllm)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from vllm.model_executor.custom_op import op_registry_oot
from vllm.model_executor.layers import rotary_embedding

import posenc.vllm


@contextlib.contextmanager
def stock_vllm() -> Iterator[None]:
    """vLLM as shipped, for a while: posenc's classes out of vLLM's registry, get_rope's memo emptied around it."""
    held = {n: op_registry_oot.pop(n) for n in posenc.vllm.registered() if n in op_registry_oot}
    rotary_embedding._ROPE_DICT.clear()
    try:
        yield
    finally:
        op_registry_oot.update(held)
        rotary_embedding._ROPE_DICT.clear()


def get_rope(head: int, max_position: int, params: dict[str, Any] | None, dtype: Any, *, stock: bool = False) -> Any:
    """vLLM's ``get_rope`` (stock vLLM's with ``stock=True``), never a layer memoized by an earlier call."""
    rotary_embedding._ROPE_DICT.clear()
    if stock:
        with stock_vllm():
            return rotary_embedding.get_rope(head, max_position, True, params, dtype)
    return rotary_embedding.get_rope(head, max_position, True, params, dtype)
