"""The modules :func:`posenc.hf.patch` puts in place of a transformers model's rotary embeddings.

:class:`PatchedRotary` answers a ``*RotaryEmbedding``'s call ``(x,
position_ids[, layer_type])`` with posenc's exact rows, in the form the
modeling code reads (found by :func:`output_form`: cos and sin concatenated
for ``rotate_half``, repeated pairwise for the interleaved families, half
width, or Llama 4 / DeepSeek-V2's complex ``freqs_cis``), per layer type
where the module serves several. :class:`PatchedSinCos` does the same for
GPT-J and CodeGen, whose attention reads a ``[sin | cos]`` table by
``position_ids``. Rows come from :class:`posenc.torch.RotaryEmbedding`'s
cache; float64 inputs get float64 rows.

torch.compile: inside a compiled graph the rows come from one custom
operator, ``posenc::hf_rotary_rows`` (:func:`torch.library.custom_op`),
whose body is the eager lookup itself: the graph holds no table and no
bound, so a compiled model reads any position (10^6 as well as 5) with no
``reserve``, ``fullgraph=True`` included, and gets eager's bits, dynamic
NTK's kept base and LongRoPE's regime too. The operator runs on the host
between the graph's kernels (it reads ``max(position_ids)`` as an eager call
does: one device sync per call on a GPU), so it is tagged
``cudagraph_unsafe`` where torch has the tag: ``mode="reduce-overhead"``
splits its CUDA graphs there. An exported program (``torch.export``) names
the live module by a process-local key: it runs in the process that made it.
Without ``torch.library.custom_op`` (torch < 2.4) the rows are computed in a
``torch.compiler.disable``'d call instead: a graph break, eager's bits.

Dynamic NTK: transformers' ``dynamic_rope_update``
(``modeling_rope_utils.py``) recomputes the base when ``max(position_ids) +
1`` passes the longest length seen so far and *keeps* it for the shorter
calls that follow, until a call shorter than ``max_position_embeddings``
resets it. :class:`PatchedRotary` follows that rule exactly (each base's
frequencies exact); :class:`posenc.torch.RotaryEmbedding` itself (with
``seq_len=None``) recomputes from each call's own length instead.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

import torch
from torch import nn

from ..errors import PosEncError
from ..rope.scaling import DynamicNTK
from ..rows.window import AHEAD, SPARSE_FACTOR, following
from ..torch.rope import RotaryEmbedding

__all__ = ["FORMS", "PatchedRotary", "PatchedSinCos", "multi_axis_rows", "output_form", "padded", "rotary_for"]

#: the forms of a rotary module's output that posenc reproduces
FORMS = ("cat", "repeat", "half", "complex")

_DYNAMIC_KEEP = 8  # bases held at once for dynamic NTK (a generation moves through one at a time)


def follow(rope: RotaryEmbedding, positions: torch.Tensor, dtype: torch.dtype) -> None:
    """Keep the rows window where the model is decoding (eager): a request outside it moves or grows it there.

    The window follows the decode by :func:`posenc.rows.window.following`
    (the backend-neutral policy), held through :meth:`RotaryEmbedding.reserve`.
    Sparse positions (spanning more than :data:`~posenc.rows.window.SPARSE_FACTOR`
    rows per position) are no decode: they are left to the lookup, which
    computes far rows directly instead of holding the whole span.
    """
    if torch.compiler.is_compiling() or positions.numel() == 0:
        return
    lo, hi = int(positions.min()), int(positions.max()) + 1
    if hi - lo > SPARSE_FACTOR * positions.numel() + AHEAD:
        return  # sparse (position_ids [[0, 10**8]]): not a decode to follow; the lookup computes them directly
    span = following(rope.cache.held(dtype), lo, hi)
    if span is not None:
        rope.reserve(span[1], span[0], dtype=dtype)


def rotary_for(rope: Any, seq_len: int | None = None) -> RotaryEmbedding:
    """posenc's RotaryEmbedding for a :class:`~posenc.RopeConfig` (rows only: its layout is the model's business)."""
    return RotaryEmbedding(rope.head_dim, base=rope.base, scaling=rope.scaling, rotary_dim=rope.rotary_dim,
                           seq_len=seq_len, max_len=0)


def multi_axis_rows(rows: torch.Tensor, rope: Any) -> torch.Tensor:
    """M-RoPE: 1-D rows ``[n_axes·b, s, 2, r/2]`` of each axis's positions -> ``[b, s, 2, r/2]``, pair i from its axis.

    The ladder is shared (ω_i = θ^(-2i/r) for every pair, as Qwen2-VL's,
    Qwen3-VL's and GLM-4V's ``inv_freq``); which axis turns pair i is
    :attr:`~posenc.rope.frequencies.RopeFrequencies.pair_axes` (contiguous
    sections for Qwen2-VL / GLM-4V, interleaved for Qwen3-VL).
    """
    from ..rope.frequencies import rope_frequencies

    pair_axes = rope_frequencies(rope).pair_axes
    n = len(rope.sections)
    per_axis = rows.reshape(n, -1, *rows.shape[1:])  # [n, b, s, 2, r/2]
    index = torch.as_tensor(pair_axes, device=rows.device).reshape(1, 1, 1, 1, -1)
    return per_axis.gather(0, index.expand(1, *per_axis.shape[1:])).squeeze(0)


def padded(cos: torch.Tensor, sin: torch.Tensor, rope: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``[..., r/2]`` widened to ``[..., h_d/2]`` with angle 0 (cos 1, sin 0) for Gemma 4's ``"head_half"``.

    transformers' proportional RoPE holds ``inv_freq`` 0 past the k turning
    pairs and rotates the whole head (:mod:`posenc.rope.scaling.proportional`); the
    padding is exact.
    """
    extra = rope.head_dim // 2 - cos.shape[-1]
    if rope.layout != "head_half" or extra <= 0:
        return cos, sin
    ones = torch.ones((*cos.shape[:-1], extra), dtype=cos.dtype, device=cos.device)
    return torch.cat((cos, ones), dim=-1), torch.cat((sin, torch.zeros_like(ones)), dim=-1)


def _format(cos: torch.Tensor, sin: torch.Tensor, form: str) -> Any:
    if form == "cat":
        return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    if form == "repeat":
        return torch.repeat_interleave(cos, 2, dim=-1), torch.repeat_interleave(sin, 2, dim=-1)
    if form == "half":
        return cos, sin
    return torch.complex(cos, sin)


def output_form(stock_out: Any, cos: torch.Tensor, sin: torch.Tensor) -> str | None:
    """Which of :data:`FORMS` the stock output is, given posenc's rows ``[b, s, r/2]`` at the same positions."""
    for form in FORMS:
        mine = _format(cos, sin, form)
        if form == "complex":
            ok = isinstance(stock_out, torch.Tensor) and stock_out.is_complex() and stock_out.shape == mine.shape \
                and bool(torch.allclose(torch.view_as_real(stock_out).double(), torch.view_as_real(mine).double(),
                                        atol=1e-5, rtol=0))
        else:
            ok = isinstance(stock_out, tuple) and len(stock_out) == 2 and all(
                isinstance(t, torch.Tensor) and not t.is_complex() and t.shape == m.shape
                and bool(torch.allclose(t.double(), m.double(), atol=1e-5, rtol=0))
                for t, m in zip(stock_out, mine, strict=True))
        if ok:
            return form
    return None


def _slot(kind: str | None) -> str:
    """The name of a layer type's rows module in :attr:`PatchedRotary.rotary` (``"all_layers"`` for None)."""
    return "all_layers" if kind is None else kind


class PatchedRotary(nn.Module):
    """A rotary embedding of a transformers model, answered with posenc's exact rows.

    Args:
        stock: the module replaced (kept for :func:`posenc.hf.unpatch`, not a submodule).
        ropes: layer type (None: the module takes none) -> :class:`~posenc.RopeConfig`.
        form: one of :data:`FORMS`.
        original_max: ``max_position_embeddings`` (dynamic NTK's reset length).
    """

    def __init__(self, stock: nn.Module, ropes: dict[str | None, Any], form: str, original_max: int | None) -> None:
        super().__init__()
        object.__setattr__(self, "stock", stock)  # not registered: no keys, not moved twice
        self.ropes = dict(ropes)
        self.form = form
        # "all_layers" for the module that takes no layer_type: a name torch.export can write as an attribute
        self.rotary = nn.ModuleDict({_slot(k): rotary_for(r) for k, r in ropes.items()})
        self.original_max = original_max
        self._longest: dict[str | None, int] = {}
        self._dynamic: dict[tuple[str | None, int], RotaryEmbedding] = {}
        self._lock = threading.Lock()  # the longest length seen and the bases held change together
        self._key = _register(self)  # the compiled graph's operator finds this module by it

    def _module(self, kind: str | None, position_ids: torch.Tensor) -> RotaryEmbedding:
        rope = self.ropes[kind]
        if not isinstance(rope.scaling, DynamicNTK):
            return self.rotary[_slot(kind)]  # type: ignore[return-value]
        # transformers' dynamic_frequency_update: grow past the longest seen, keep it, reset below the original
        original = rope.scaling.original_max
        seq = int(position_ids.max()) + 1
        with self._lock:
            longest = self._longest.get(kind, original)
            if seq > longest:
                longest = seq
            if seq < original and longest > original:
                longest = original
            self._longest[kind] = longest
            if longest <= original:
                return self.rotary[_slot(kind)]  # type: ignore[return-value]
            key = (kind, longest)
            if key not in self._dynamic:
                if len(self._dynamic) >= _DYNAMIC_KEEP:
                    self._dynamic.pop(next(iter(self._dynamic)))
                self._dynamic[key] = rotary_for(rope, seq_len=longest).to(position_ids.device)
            return self._dynamic[key]

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None) -> Any:
        kind = layer_type if layer_type in self.ropes else None
        if kind not in self.ropes:
            raise PosEncError(f"layer_type {layer_type!r} is not one this rotary embedding serves "
                              f"({sorted(map(str, self.ropes))})")
        if self.ropes[kind].sections is None and position_ids.dim() > 2:  # [3, b, s] read flat: rows of 3·s tokens
            raise PosEncError(f"position_ids of shape {list(position_ids.shape)} (one per axis) to a rotary "
                              f"embedding posenc read as 1-D RoPE ({type(self.stock).__name__}); want [b, s]")
        dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        if torch.compiler.is_compiling():  # the eager lookup, as one opaque operator of the graph
            cos_rows, sin_rows = _rows_in_graph(position_ids, self._key, str(kind), self._width(kind),
                                                self.ropes[kind].sections is not None, dtype, x.device)
        else:
            cos_rows, sin_rows = self.rows(kind, position_ids, dtype, x.device)
        out = _format(cos_rows, sin_rows, self.form)
        if self.form == "complex":
            return out
        cos, sin = out
        return cos.to(x.dtype), sin.to(x.dtype)

    def rows(self, kind: str | None, position_ids: torch.Tensor, dtype: torch.dtype,
             device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin) ``[b, s, w]`` for ``position_ids`` ``[b, s]`` (``[n_axes, b, s]`` with M-RoPE), eagerly.

        ``w`` is r/2, or head_dim/2 for Gemma 4's padded rows; float32 or
        float64 (``dtype``). What :meth:`forward` formats, and what the
        compiled graph's operator returns.
        """
        axes = self.ropes[kind].sections
        if axes is not None:  # M-RoPE: rows per position axis, then each pair's own axis (below)
            position_ids = position_ids.expand(len(axes), -1, -1).reshape(-1, position_ids.shape[-1])
        rope = self._module(kind, position_ids)
        positions = position_ids if position_ids.dim() == 2 else position_ids.reshape(1, -1)
        if rope.scaling is not None and rope.scaling.cache_key(None) is not None:
            rope._follow_length(0, int(positions.max()) + 1)  # LongRoPE's regime first: it resets the rows
        follow(rope, positions, dtype)
        rows = rope.cache.lookup(positions.shape[-1], positions=positions, batch=int(positions.shape[0]),
                                 device=device, dtype=dtype, before=rope._follow_length)
        if axes is not None:
            rows = multi_axis_rows(rows, self.ropes[kind])
        return padded(rows[..., 0, :], rows[..., 1, :], self.ropes[kind])

    def _width(self, kind: str | None) -> int:
        """The last dimension of :meth:`rows`: r/2, or head_dim/2 for Gemma 4's padded rows."""
        rope = self.ropes[kind]
        width = rope.rotary_dim // 2
        return max(width, rope.head_dim // 2) if rope.layout == "head_half" else width

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)  # locks do not pickle or deepcopy; each copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._lock = threading.Lock()
        self._key = _register(self)  # a copy is its own module: the compiled operator must find it, not the original

    def extra_repr(self) -> str:
        return f"form={self.form!r}, replaces={type(self.stock).__name__}"


_LIVE: weakref.WeakValueDictionary[int, PatchedRotary] = weakref.WeakValueDictionary()
_KEYS = itertools.count()


def _register(module: PatchedRotary) -> torch.Tensor:
    """The key by which the compiled graph's operator finds ``module`` (held weakly), process-local.

    A CPU int64 scalar held as a plain attribute, not a buffer: torch.compile
    lifts it as a graph input, so patched models of one config share one
    graph (an int attribute would be a constant, one recompile per model);
    ``.to(device)``, ``state_dict`` and DDP's buffer broadcast never see it.
    """
    key = next(_KEYS)
    _LIVE[key] = module
    return torch.tensor(key, dtype=torch.int64)


def _live(key: torch.Tensor) -> PatchedRotary:
    module = _LIVE.get(int(key))
    if module is None:
        raise PosEncError(f"posenc::hf_rotary_rows: the patched rotary module {int(key)} no longer exists "
                          "(a graph or exported program outlived its model)")
    return module


def _kind_of(module: PatchedRotary, kind: str) -> str | None:
    return next(k for k in module.ropes if str(k) == kind)


def _eager_rows(position_ids: torch.Tensor, key: torch.Tensor, kind: str, width: int, multi_axis: bool,
                dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    module = _live(key)
    cos, sin = module.rows(_kind_of(module, kind), position_ids, dtype, device)
    return cos.clone(), sin.clone()  # fresh tensors: an operator's outputs alias neither its inputs nor each other


def _fake_rows(position_ids: torch.Tensor, key: torch.Tensor, kind: str, width: int, multi_axis: bool,
               dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """:meth:`PatchedRotary.rows`' shape from ``position_ids``' alone: ``[b, s, width]``."""
    if multi_axis:  # [n_axes, b, s] (or [b, s], expanded)
        lead: tuple[Any, ...] = (position_ids.shape[-2] if position_ids.dim() >= 2 else 1, position_ids.shape[-1])
    elif position_ids.dim() == 2:
        lead = tuple(position_ids.shape)
    else:
        lead = (1, position_ids.numel())
    return (position_ids.new_empty((*lead, width), dtype=dtype, device=device),
            position_ids.new_empty((*lead, width), dtype=dtype, device=device))


def _define_operator() -> Any:
    """``posenc::hf_rotary_rows``: the eager rows as one operator of a compiled graph (torch >= 2.4)."""
    custom_op = getattr(torch.library, "custom_op", None)
    if custom_op is None:  # pragma: no cover - torch < 2.4: a graph break, eager's bits
        return torch.compiler.disable(_eager_rows)
    unsafe = getattr(torch.Tag, "cudagraph_unsafe", None)  # host reads: never inside a captured CUDA graph
    options: dict[str, Any] = {"mutates_args": ()}
    if unsafe is not None:
        options["tags"] = (unsafe,)
    op = custom_op("posenc::hf_rotary_rows", **options)(_eager_rows)
    op.register_fake(_fake_rows)
    return op


_rows_in_graph = _define_operator()


class PatchedSinCos:
    """GPT-J / CodeGen: the ``[b, n, r]`` table ``[sin | cos]`` that ``_get_embed_positions`` returns, exact.

    The attention gathers rows ``position_ids`` from it and casts them to the
    key's dtype; the rows here are float64 (posenc's, correctly rounded), so
    that cast is the only rounding. The table covers ``max(position_ids)``.
    """

    def __init__(self, rope: Any, held: int) -> None:
        self.rotary = rotary_for(rope)
        self.held = held

    def __call__(self, position_ids: torch.Tensor) -> torch.Tensor:
        n = max(self.held, int(position_ids.max()) + 1)
        rows = self.rotary.cache.lookup(n, offset=0, device=position_ids.device, dtype=torch.float64)
        table = torch.cat((rows[:, 1, :], rows[:, 0, :]), dim=-1)  # [n, r]: sin, then cos
        return table.unsqueeze(0).expand(position_ids.shape[0], -1, -1)
