"""Rotary position embeddings for PyTorch: a module with an exact cached table, and a functional form.

Shapes: ``b`` batch, ``n_h`` query heads, ``n_kv`` key/value heads, ``s``
sequence length, ``h_d`` head_dim, ``r`` rotary_dim. By default q and k are
``[b, n_h, s, h_d]`` (HF's layout after the head split); with
``sequence_dim=-3`` they are ``[b, s, n_h, h_d]`` (flash-attn's), or
``[total, n_h, h_d]`` for packed (varlen) batches.

The cos/sin rows are :func:`posenc.rope_table`'s, computed by the NumPy core
and kept float32 in a :class:`~posenc.torch._cache.TableCache` (the cache
rules of the sinusoidal module: not in ``state_dict``, never cast by
``.to(dtype)``, rebuilt after meta-device init, grown on demand in eager
mode). The forward is elementwise work on those rows: no table build, no
float64, nothing that breaks a ``torch.compile(fullgraph=True)`` graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import MAX_POSITION, PosEncError, check_int, check_layout
from ..rope.cos_sin import rope_cos_sin, rope_table
from ..rope.frequencies import ROPE_LAYOUTS, RopeFrequencies, rope_frequencies
from . import _fused
from ._cache import TableCache, compiling, drop_keys, position_bounds

__all__ = ["RotaryEmbedding", "apply_rope", "positions_from_cu_seqlens"]

# what other RoPE modules kept in checkpoints (HF Llama/NeoX, torchtune, rotary-embedding-torch):
# posenc recomputes them, so they are dropped on load
_LEGACY = ("inv_freq", "original_inv_freq", "cos_cached", "sin_cached", "cached_freqs", "freqs", "cache", "theta")

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True, eq=False)
class _Rows:
    """The module's table builder (picklable): rows ``[length, 2, r/2]`` of (cos, sin)."""

    freqs: RopeFrequencies

    def __call__(self, start: int, length: int) -> np.ndarray:
        return rope_table(self.freqs, start, length, np.float32)


def _check_sequence_dim(sequence_dim: Any) -> int:
    if sequence_dim not in (-2, -3):
        raise PosEncError(
            f"sequence_dim must be -2 (q/k [b, n_h, s, h_d]) or -3 ([b, s, n_h, h_d]), got {sequence_dim!r}"
        )
    return int(sequence_dim)


def _check_qk(name: str, x: Any, head_dim: int, sequence_dim: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dtype not in _FLOATS:
        what = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
        raise PosEncError(f"{name} must be a float16/bfloat16/float32/float64 tensor, got {what}")
    if x.dim() < -sequence_dim or x.shape[-1] != head_dim:
        want = "[..., s, h_d]" if sequence_dim == -2 else "[..., s, n_h, h_d]"
        raise PosEncError(f"{name} must be {want} with h_d = {head_dim}, got shape {tuple(x.shape)}")


def _broadcast(table: torch.Tensor, x: torch.Tensor, sequence_dim: int, batched: bool) -> torch.Tensor:
    """cos or sin ``[s, n]`` / ``[b, s, n]`` shaped to broadcast against x's pairs."""
    if sequence_dim == -3:
        table = table.unsqueeze(-2)  # [(b,) s, 1, n]
    elif batched:
        table = table.unsqueeze(-3)  # [b, 1, s, n]
    if batched and x.dim() < table.dim():
        raise PosEncError(f"[b, s] positions need a batch dimension in x, got shape {tuple(x.shape)}")
    return table


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, rotary_dim: int) -> torch.Tensor:
    """(x1·cos - x2·sin, x2·cos + x1·sin) per pair, in float32 (float64 for float64 x), back in x.dtype."""
    ct = torch.float64 if x.dtype == torch.float64 else torch.float32
    c = cos.to(ct)
    s = sin.to(ct)
    n = rotary_dim // 2
    if layout == "half":
        x1, x2 = x[..., :n], x[..., n:rotary_dim]
    else:
        x1, x2 = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]
    a = x1.to(ct)
    b = x2.to(ct)
    o1 = a * c - b * s
    o2 = b * c + a * s
    if layout == "half":
        out = torch.cat([o1, o2], dim=-1)
    else:
        out = torch.stack([o1, o2], dim=-1).flatten(-2)
    out = out.to(x.dtype)
    if rotary_dim < x.shape[-1]:
        out = torch.cat([out, x[..., rotary_dim:]], dim=-1)
    return out


class RotaryEmbedding(nn.Module):
    """Rotates queries and keys by their positions, with an exact cached cos/sin table.

    Args:
        head_dim: channels per head, h_d (even).
        base: θ (HF ``rope_theta``).
        scaling: None or a :mod:`posenc.rope.scaling` variant (HF's rope types).
        layout: ``"half"`` (HF, GPT-NeoX) or ``"interleaved"`` (Meta, GPT-J).
        rotary_dim: channels rotated (default h_d); the rest pass through.
        max_len: rows computed now (positions 0 … max_len-1); more are
            computed on demand in eager mode. Call :meth:`reserve` before
            ``torch.compile``.
        sequence_dim: where s sits in q and k: -2 for ``[b, n_h, s, h_d]``,
            -3 for ``[b, s, n_h, h_d]`` or packed ``[total, n_h, h_d]``.
        seq_len: for DynamicNTK / LongRoPE: the length that fixes the
            effective base (or factor set). None: max(position) + 1 of each
            eager call, as HF; a change of regime rebuilds the table (one
            table never mixes rotations), so a KV cache filled before it is
            stale: fix ``seq_len`` for a whole generation.

    Outputs are in the input dtypes; the math is float32 (float64 for
    float64 inputs) on float32 cos/sin rows within 1 ulp of the true values.

    >>> rope = RotaryEmbedding(4, base=100.0, layout="interleaved")
    >>> q = torch.tensor([[[[1.0, 0.0, 0.0, 0.0]]]])          # [b=1, n_h=1, s=1, h_d=4]
    >>> q2, k2 = rope(q, q, offset=2)
    >>> [round(v, 4) for v in q2.flatten().tolist()]
    [-0.4161, 0.9093, 0.0, 0.0]
    """

    def __init__(
        self,
        head_dim: int,
        *,
        base: float = 10000.0,
        scaling: Any = None,
        layout: str = "half",
        rotary_dim: int | None = None,
        max_len: int = 0,
        sequence_dim: int = -2,
        seq_len: int | None = None,
    ) -> None:
        super().__init__()
        freqs = rope_frequencies(head_dim, base=base, scaling=scaling, rotary_dim=rotary_dim, seq_len=seq_len)
        self.head_dim = freqs.head_dim
        self.rotary_dim = freqs.rotary_dim
        self.base = float(base)
        self.scaling = scaling
        self.layout = check_layout(layout, ROPE_LAYOUTS)
        self.sequence_dim = _check_sequence_dim(sequence_dim)
        self.seq_len = None if seq_len is None else check_int(seq_len, "seq_len", minimum=1)
        self.freqs = freqs
        self._regime = None if scaling is None else scaling.cache_key(seq_len)
        rows = check_int(max_len, "max_len", minimum=0)
        self.cache = TableCache(_Rows(freqs), (2, freqs.rotary_dim // 2), stop=rows)

    @property
    def attention_factor(self) -> float:
        """The factor in the cos/sin rows (YaRN, LongRoPE); 1 for most."""
        return self.freqs.attention_factor

    def reserve(self, max_len: int, start: int = 0) -> None:
        """Compute rows for positions ``start … max_len-1`` now (do this before torch.compile)."""
        self.cache.reserve(max_len, start)

    def _follow_length(self, stop: int) -> None:
        """Length-dependent scalings: rebuild the table when the regime changes (eager only)."""
        if self.scaling is None or self.scaling.cache_key(None) is None:
            return
        seq = self.seq_len if self.seq_len is not None else max(stop, 1)
        regime = self.scaling.cache_key(seq)
        if regime != self._regime:
            self.freqs = rope_frequencies(
                self.head_dim, base=self.base, scaling=self.scaling, rotary_dim=self.rotary_dim, seq_len=seq
            )
            self._regime = regime
            self.cache.reset(_Rows(self.freqs))

    def cos_sin(
        self, s: int, *, positions: torch.Tensor | None = None, offset: int | torch.Tensor = 0,
        device: torch.device | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The float32 (cos, sin) rows for s tokens: ``[s, r/2]`` or ``[b, s, r/2]`` each."""
        eager = not compiling()
        if positions is not None and (isinstance(offset, torch.Tensor) or offset != 0):
            raise PosEncError(f"pass either positions or offset, not both (got offset={offset!r})")
        if positions is None and isinstance(offset, torch.Tensor):
            positions = self._offset_positions(s, offset, device)
        if positions is None:
            if eager:
                off = check_int(offset, "offset")
                if max(abs(off), abs(off + s)) >= MAX_POSITION:
                    raise PosEncError(f"positions offset … offset+s-1 must satisfy |p| < 2**53, got offset={off}")
                self._follow_length(off + s)
                self.cache.ensure(off, off + s, device)
            rows = self.cache.rows(offset, s)  # type: ignore[arg-type]
        else:
            if not isinstance(positions, torch.Tensor):
                raise PosEncError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
            if positions.dim() not in (1, 2) or positions.shape[-1] != s:
                raise PosEncError(f"positions must be [s] or [b, s] with s = {s}, got shape {tuple(positions.shape)}")
            if eager:
                lo, hi = position_bounds(positions)
                self._follow_length(hi)
                self.cache.ensure(lo, hi, device)
            rows = self.cache.take(positions)
        return rows[..., 0, :], rows[..., 1, :]

    @staticmethod
    def _offset_positions(s: int, offset: torch.Tensor, device: torch.device | None) -> torch.Tensor:
        if offset.dtype == torch.bool or offset.is_complex() or offset.is_floating_point():
            raise PosEncError(f"a tensor offset must hold integers, got dtype {offset.dtype}")
        if offset.dim() == 1:
            offset = offset[:, None]
        elif offset.dim() != 0:
            raise PosEncError(f"a tensor offset must have shape [] or [b], got {tuple(offset.shape)}")
        return torch.arange(s, device=offset.device) + offset.to(torch.long)

    def rotate(
        self, x: torch.Tensor, *, positions: torch.Tensor | None = None, offset: int | torch.Tensor = 0
    ) -> torch.Tensor:
        """Rotate one tensor (q or k), ``[..., s, h_d]`` (or ``[..., s, n_h, h_d]``)."""
        _check_qk("x", x, self.head_dim, self.sequence_dim)
        s = x.shape[self.sequence_dim]
        cos, sin = self.cos_sin(s, positions=positions, offset=offset, device=x.device)
        return self._apply_tables(x, cos, sin)

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        *,
        positions: torch.Tensor | None = None,
        offset: int | torch.Tensor = 0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotated (q, k), each in its own dtype and shape.

        Args:
            q: ``[b, n_h, s, h_d]`` (or per ``sequence_dim``).
            k: ``[b, n_kv, s, h_d]``, the same s (n_kv may differ: GQA).
            positions: integer ``[s]`` or ``[b, s]``: per-row positions
                (left padding: ``cumsum(mask) - 1``; packed sequences:
                :func:`positions_from_cu_seqlens`). Default offset … offset+s-1.
            offset: first position when ``positions`` is None: an int (KV-cache
                length), or an integer tensor ``[]`` or ``[b]``.

        Raises:
            PosEncError: bad shapes, dtypes, positions (value checks in eager mode).
        """
        _check_qk("q", q, self.head_dim, self.sequence_dim)
        _check_qk("k", k, self.head_dim, self.sequence_dim)
        s = q.shape[self.sequence_dim]
        if k.shape[self.sequence_dim] != s:
            raise PosEncError(f"q and k must have the same sequence length, got {tuple(q.shape)} and {tuple(k.shape)}")
        cos, sin = self.cos_sin(s, positions=positions, offset=offset, device=q.device)
        return self._apply_tables(q, cos, sin), self._apply_tables(k, cos, sin)

    def _apply_tables(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if self.sequence_dim == -2:
            out = _fused.rotate(x, cos, sin, self.layout, self.rotary_dim)
            if out is not None:
                return out
        batched = cos.dim() == 3
        return _rotate(
            x, _broadcast(cos, x, self.sequence_dim, batched), _broadcast(sin, x, self.sequence_dim, batched),
            self.layout, self.rotary_dim,
        )

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: Any, strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        drop_keys(state_dict, prefix, _LEGACY)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def extra_repr(self) -> str:
        return (
            f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, base={self.base}, "
            f"scaling={self.scaling!r}, layout={self.layout!r}, sequence_dim={self.sequence_dim}"
        )


def positions_from_cu_seqlens(cu_seqlens: torch.Tensor) -> torch.Tensor:
    """Positions of a packed batch: 0 … len_j - 1 for each sequence j, ``[total]``.

    ``cu_seqlens`` is flash-attn's ``[n + 1]`` cumulative lengths (0, l0,
    l0 + l1, …); the result restarts at 0 where each sequence starts.

    >>> positions_from_cu_seqlens(torch.tensor([0, 3, 5])).tolist()
    [0, 1, 2, 0, 1]
    """
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dtype.is_floating_point or cu_seqlens.is_complex() \
            or cu_seqlens.dtype == torch.bool or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 1:
        raise PosEncError(f"cu_seqlens must be a 1-D integer tensor [n + 1], got {cu_seqlens!r}"[:200])
    cu = cu_seqlens.to(torch.long)
    lengths = cu[1:] - cu[:-1]
    if not compiling():
        if int(cu[0]) != 0 or bool((lengths < 0).any()):
            raise PosEncError(f"cu_seqlens must start at 0 and never decrease, got {cu_seqlens.tolist()}"[:200])
    starts = torch.repeat_interleave(cu[:-1], lengths)  # [total]: each token's sequence start
    return torch.arange(starts.shape[0], device=cu.device) - starts


_NUMPY = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}


def apply_rope(
    x: torch.Tensor,
    positions: Any,
    *,
    base: float = 10000.0,
    scaling: Any = None,
    layout: str = "half",
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    sequence_dim: int = -2,
) -> torch.Tensor:
    """Functional RoPE, equal to :func:`posenc.apply_rope` bit for bit.

    The cos/sin come from :func:`posenc.rope_cos_sin` on the CPU each call
    (float64 for float64 x, float32 otherwise): convenient and exact, but
    use :class:`RotaryEmbedding` (cached rows) inside a model.

    Args:
        x: ``[..., s, h_d]`` (or ``[..., s, n_h, h_d]`` with ``sequence_dim=-3``).
        positions: ``[s]`` or ``[b, s]`` (tensor or array-like; non-integers allowed).
        base, scaling, layout, rotary_dim, seq_len: as :func:`posenc.apply_rope`.
    """
    sd = _check_sequence_dim(sequence_dim)
    if not isinstance(x, torch.Tensor) or x.dtype not in _FLOATS:
        raise PosEncError(f"x must be a float16/bfloat16/float32/float64 tensor, got {type(x).__name__}")
    lay = check_layout(layout, ROPE_LAYOUTS)
    h = x.shape[-1]
    if isinstance(positions, torch.Tensor):
        p = positions.detach().cpu()
        positions = (p.to(torch.float64) if p.is_floating_point() else p).numpy()
    pos = np.asarray(positions)
    s = x.shape[sd] if x.dim() >= -sd else -1
    if pos.ndim not in (1, 2) or pos.shape[-1] != s:
        raise PosEncError(f"positions must be [s] or [b, s] with s = {s}, got shape {pos.shape}")
    ct = np.float64 if x.dtype == torch.float64 else np.float32
    cos, sin = rope_cos_sin(pos, h, base=base, scaling=scaling, rotary_dim=rotary_dim, seq_len=seq_len, dtype=ct)
    r = cos.shape[-1] * 2
    batched = pos.ndim == 2
    c = _broadcast(torch.from_numpy(cos).to(x.device), x, sd, batched)
    sn = _broadcast(torch.from_numpy(sin).to(x.device), x, sd, batched)
    return _rotate(x, c, sn, lay, r)
