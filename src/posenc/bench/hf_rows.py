"""The transformers rows of ``posenc bench``: a decode step of a patched model against the stock one.

A small Llama (random weights, built from a config: nothing downloaded)
decodes one token at a time at position 10^6 with its KV cache, stock and
patched by :func:`posenc.hf.patch`, timed side by side; the stock step is the
floor. Every repetition decodes the next position, as ``generate`` does, so
the patched model's rows follow the decode (a window where it is going,
:class:`posenc.hf.rotary.PatchedRotary`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .measure import time_side_by_side
from .report import Row

__all__ = ["producers"]

POSITION = 10**6


def _model(hidden: int, heads: int, layers: int) -> Any:
    import torch
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.LlamaConfig(vocab_size=1024, hidden_size=hidden, intermediate_size=2 * hidden,
                                          num_hidden_layers=layers, num_attention_heads=heads,
                                          num_key_value_heads=heads, max_position_embeddings=131072,
                                          rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
        torch.manual_seed(0)
        return transformers.LlamaForCausalLM(config).eval()


class _Decoder:
    """One decode step per call, at the next position, with a KV cache prefilled at ``start``."""

    def __init__(self, model: Any, start: int, prompt: int = 8) -> None:
        import torch
        from transformers import DynamicCache

        self.model, self.torch = model, torch
        self.cache = DynamicCache(config=model.config)
        ids = torch.arange(prompt).reshape(1, prompt)
        with torch.no_grad():
            model(ids, position_ids=ids + start, past_key_values=self.cache, use_cache=True)
        self.position = start + prompt

    def __call__(self) -> Any:
        torch = self.torch
        pos = torch.tensor([[self.position]])
        with torch.no_grad():
            out = self.model(pos % 1024, position_ids=pos, past_key_values=self.cache, use_cache=True)
        self.position += 1
        return out


def _decode(hidden: int, heads: int, layers: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        try:
            import posenc.hf
        except ImportError:  # pragma: no cover - torch without transformers
            return []
        try:
            stock = _Decoder(_model(hidden, heads, layers), POSITION)
            patched = _Decoder(posenc.hf.patch(_model(hidden, heads, layers)), POSITION)
        except ImportError:
            return []
        for step in (stock, patched):  # warm: first calls allocate
            step()
            step()
        op = f"HF Llama decode step at 10^6 (hidden {hidden}, {layers} layers) f32"
        ms = time_side_by_side({"floor: stock transformers": stock, "posenc.hf.patch": patched}, repeats * 5)
        floor = ms["floor: stock transformers"]
        return [Row(op, "floor: stock transformers", floor, 1.0, floor_ms=floor),
                Row(op, "posenc.hf.patch", ms["posenc.hf.patch"], ms["posenc.hf.patch"] / floor, floor_ms=floor)]

    return produce


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``); none without transformers."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return []
    return [_decode(256, 4, 2) if quick else _decode(512, 8, 4)]
