"""The vLLM rows of ``posenc bench``: building a rotary cache, posenc's plugin class against stock vLLM's.

Both build ``RotaryEmbedding(head 128, rotary_dim 128, 131072 positions,
base 10^6)`` on the CPU, float32: stock vLLM (``torch.einsum`` of float32
positions and frequencies, then ``cos``/``sin``) is the floor, posenc's
:class:`posenc.vllm.classes.ExactRotaryEmbedding` the exact rows
(:func:`posenc.rope_table`). Only when vllm imports (``.venv-vllm``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .measure import time_side_by_side
from .report import Row

__all__ = ["producers"]


def _build(positions: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        import torch
        from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbedding

        from ..parity.checkpoint import _stock_vllm
        from ..vllm.classes import ExactRotaryEmbedding

        args: tuple[Any, ...] = (128, 128, positions, 1e6, True, torch.float32)
        with _stock_vllm():  # on the CPU, with posenc's plugin (if loaded) set aside
            fns = {"floor: stock vLLM": lambda: RotaryEmbedding(*args),
                   "posenc.vllm": lambda: ExactRotaryEmbedding(*args)}
            ms = time_side_by_side(fns, repeats)
        op = f"vLLM rotary cache build {positions}x128 f32"
        floor = ms["floor: stock vLLM"]
        return [Row(op, "floor: stock vLLM", floor, 1.0, floor_ms=floor),
                Row(op, "posenc.vllm", ms["posenc.vllm"], ms["posenc.vllm"] / floor, floor_ms=floor)]

    return produce


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``); none without vllm."""
    try:
        import vllm.plugins  # noqa: F401  (not bare vllm: a folder named vllm on sys.path imports as a namespace)
    except ImportError:
        return []
    return [_build(8192 if quick else 131072)]
