"""What :func:`posenc.hf.patch` puts in place of RoPE held as a table: GPT-J, CodeGen, RoFormer; 4.x's seq_len call.

Where each transformers release keeps these rows is
:mod:`posenc.hf.versions`. Every table here is posenc's float64 rows
(correctly rounded, from :class:`posenc.torch.RotaryEmbedding`'s cache),
rounded once to the dtype the stock module would hand the attention, so
that the rows a model's attention receives are the same bits in every
release (``tests/hf/test_hf_tables.py``):

- :class:`HeldSinCos`: GPT-J's attention up to 5.23 (``_get_embed_positions``
  shadowed), rows in the dtype of the table the attention holds.
- :func:`exact_table`: CodeGen's attention up to 5.23 indexes its
  ``embed_positions`` table directly; :func:`posenc.hf.patch` swaps in this
  one (same shape, dtype and device).
- :class:`PatchedSinCosRotary`: ``GPTJRotaryEmbedding`` /
  ``CodeGenRotaryEmbedding`` (5.24 on): ``(x, position_ids) -> (sin, cos)``,
  cast to ``x``'s dtype where the stock module casts (GPT-J), else to its
  table's (CodeGen).
- :class:`PatchedSinusoidal`: RoFormer's ``RoFormerSinusoidalPositionalEmbedding``
  (``[sin | cos]`` rows for ``input_ids_shape`` from
  ``past_key_values_length``), holding the stock ``weight`` so that
  ``state_dict`` keeps its key.
- :class:`AxesPatchedRotary`: the M-RoPE modules of transformers 4.x
  (Qwen2-VL, Qwen2.5-VL, GLM-4.1V up to 4.57), which return each position
  axis's rows ``[n_axes, b, s, d]`` and leave the sections to the
  attention's ``apply_multimodal_rotary_pos_emb``.
- :class:`SeqLenPatchedRotary`: a rotary module of transformers 4.x called as
  ``(x, position_ids, seq_len=…)`` (Phi-3, Gemma, DBRX); ``seq_len`` cannot
  change rows that depend on the positions alone, and
  :func:`posenc.hf.patch` refuses the length-dependent scalings there.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..torch.rope import RotaryEmbedding
from .rotary import PatchedRotary, PatchedSinCos, rotary_for

__all__ = ["AxesPatchedRotary", "HeldSinCos", "PatchedSinCosRotary", "PatchedSinusoidal", "SeqLenPatchedRotary",
           "exact_table", "sin_cos_rows"]


def sin_cos_rows(rotary: RotaryEmbedding, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """posenc's float64 ``(sin, cos)`` rows ``[*positions.shape, r/2]`` at integer ``positions`` of any shape."""
    flat = positions.reshape(1, -1)
    rows = rotary.cache.lookup(int(flat.shape[-1]), positions=flat, batch=1, device=positions.device,
                               dtype=torch.float64)[0]
    shape = (*positions.shape, rows.shape[-1])
    return rows[:, 1, :].reshape(shape), rows[:, 0, :].reshape(shape)


def _table(module: nn.Module) -> torch.Tensor:
    """The ``embed_positions`` tensor a stock module holds (a buffer, or a plain attribute in 4.x)."""
    table: torch.Tensor = module.embed_positions  # type: ignore[assignment]  # a tensor, not a submodule
    return table


def exact_table(rope: Any, n: int, like: torch.Tensor) -> torch.Tensor:
    """The ``[n, r]`` table ``[sin | cos]`` of positions 0 … n-1, float64 rounded once to ``like``'s dtype."""
    sin, cos = sin_cos_rows(rotary_for(rope), torch.arange(n, device=like.device))
    return torch.cat((sin, cos), dim=-1).to(like.dtype)


class HeldSinCos(PatchedSinCos):
    """GPT-J's ``_get_embed_positions`` (up to 5.23), in the dtype of the table ``owner.embed_positions``.

    5.23's attention casts the gathered rows to the key's dtype, 4.45's does
    not: rounding posenc's float64 rows once to the held table's dtype gives
    the rows the stock table would, exact, in both.
    """

    def __init__(self, rope: Any, owner: nn.Module) -> None:
        super().__init__(rope, int(_table(owner).shape[0]))
        self.owner = owner

    def __call__(self, position_ids: torch.Tensor) -> torch.Tensor:
        return super().__call__(position_ids).to(_table(self.owner).dtype)


class PatchedSinCosRotary(nn.Module):
    """``GPTJRotaryEmbedding`` / ``CodeGenRotaryEmbedding`` (transformers 5.24 on), answered with posenc's rows.

    Args:
        stock: the module replaced (kept for :func:`posenc.hf.unpatch`, not a submodule).
        rope: the :class:`~posenc.RopeConfig` of the family (``rotary_dim``, base 10000).
        cast_to_input: whether the stock module casts its rows to ``x``'s dtype
            (GPT-J); otherwise they keep its table's dtype (CodeGen).
    """

    held: torch.Tensor

    def __init__(self, stock: nn.Module, rope: Any, cast_to_input: bool) -> None:
        super().__init__()
        object.__setattr__(self, "stock", stock)  # not registered: no keys, not moved twice
        self.rotary = rotary_for(rope)
        self.cast_to_input = cast_to_input
        table = _table(stock)
        # an empty buffer that follows model.to(dtype/device) as the stock table would; not saved
        self.register_buffer("held", torch.empty(0, dtype=table.dtype, device=table.device), persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sin, cos = sin_cos_rows(self.rotary, position_ids.to(x.device))
        dtype = x.dtype if self.cast_to_input else self.held.dtype
        return sin.to(dtype), cos.to(dtype)

    def extra_repr(self) -> str:
        return f"replaces={type(self.stock).__name__}"


class PatchedSinusoidal(nn.Module):
    """RoFormer's sinusoidal embedding: ``[sin | cos]`` rows of posenc, in the stock ``weight``'s dtype.

    Args:
        stock: the ``RoFormerSinusoidalPositionalEmbedding`` replaced (kept for unpatch).
        rope: the :class:`~posenc.RopeConfig` (head_dim = hidden_size / heads, base 10000, interleaved).
    """

    weight: nn.Parameter

    def __init__(self, stock: nn.Module, rope: Any) -> None:
        super().__init__()
        object.__setattr__(self, "stock", stock)
        self.weight = stock.weight  # type: ignore[assignment]  # the same parameter: state_dict keeps its key, model.to(dtype) moves it
        self.rotary = rotary_for(rope)

    @torch.no_grad()
    def forward(self, input_ids_shape: torch.Size, past_key_values_length: int = 0,
                position_ids: torch.Tensor | None = None, cache_length: int | None = None) -> torch.Tensor:
        start = past_key_values_length if cache_length is None else cache_length  # 5.24 renamed it
        if position_ids is None:
            s = int(input_ids_shape[1])
            position_ids = torch.arange(start, start + s, device=self.weight.device)
        sin, cos = sin_cos_rows(self.rotary, position_ids.to(self.weight.device))
        return torch.cat((sin, cos), dim=-1).to(self.weight.dtype)

    def extra_repr(self) -> str:
        return f"replaces={type(self.stock).__name__}"


class SeqLenPatchedRotary(PatchedRotary):
    """:class:`~posenc.hf.rotary.PatchedRotary` for a 4.x rotary module called with ``seq_len`` as well."""

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None,
                seq_len: Any = None) -> Any:
        return super().forward(x, position_ids, layer_type)


class AxesPatchedRotary(PatchedRotary):
    """:class:`~posenc.hf.rotary.PatchedRotary` for a 4.x M-RoPE module: the rows of each axis, stacked.

    Built with the RoPE of one axis (the shared ladder, no sections): each
    of the ``n`` axes of ``position_ids [n, b, s]`` gets its exact rows, and
    the attention takes each section's pairs from its axis, as it does from
    the stock module's ``[n, b, s, d]``.
    """

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None) -> Any:
        n = int(position_ids.shape[0]) if position_ids.dim() == 3 else 1
        out = super().forward(x, position_ids.reshape(-1, position_ids.shape[-1]), layer_type)
        return tuple(t.reshape(n, -1, *t.shape[1:]) for t in out)
