"""Rotary position embeddings for PyTorch: the module, with an exact cached cos/sin table.

The functional form (:func:`apply_rope`, :func:`positions_from_cu_seqlens`)
lives in :mod:`posenc.torch.rope_functional` and is re-exported here.

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

Multi-axis RoPE (``sections=``, :mod:`posenc.rope.sections`): row p of the
table holds every pair's cos/sin at position p (its own ω_i), the rows of a
text token. A token at (t, h, w) reads the rows of t, h and w in one lookup
(the same cache and lookup as 1-D) and takes each pair from its own axis's
row: the values of :func:`posenc.rope_cos_sin` with sections, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError, check_int, check_seq_len
from ..rope.cos_sin import cos_sin_tables, rope_table
from ..rope.frequencies import RopeFrequencies, spec_frequencies
from ..rope.sections import Sections
from ..rope.spec import RopeConfig, RopeSettings, spec_in
from ..rope.xpos import check_xpos
from ..support.compile import host_only
from . import _fused
from ._cache import DEFAULT_ROWS, TableCache, compiling, drop_keys
from ._exact import LadderBuffers
from ._positions import _is_zero
from ._real_rows import check_real_positions, real_rows
from ._rotation import batch_size, broadcast_rows, check_qk, check_sequence_dim, rotate_pairs, table_dtype
from .rope_functional import apply_rope, positions_from_cu_seqlens
from .xpos import XPosTable

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RotaryEmbedding", "apply_rope", "positions_from_cu_seqlens"]

# what other RoPE modules kept in checkpoints (HF Llama/NeoX, torchtune, rotary-embedding-torch):
# posenc recomputes them, so they are dropped on load
_LEGACY = ("inv_freq", "original_inv_freq", "cos_cached", "sin_cached", "cached_freqs", "freqs", "cache", "theta")

@dataclass(frozen=True, eq=False)
class _Rows:
    """The module's rows ``[count, 2, r/2]`` of (cos, sin): a picklable :class:`~posenc.torch._cache.RowBuilder`.

    Consecutive rows come from :func:`posenc.rope_table` (the fast path),
    scattered ones from the exact per-position path; the same bits either way.
    """

    freqs: RopeFrequencies

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return rope_table(self.freqs, start, length, dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        p = positions.astype(np.float64)
        if self.freqs.sections is not None:  # a row is a text token's: every axis at p
            p = np.repeat(p[:, None], self.freqs.sections.n_axes, axis=1)
        cos, sin = cos_sin_tables(p, self.freqs, dtype)
        return np.stack([cos, sin], axis=1)


class RotaryEmbedding(nn.Module):
    """Rotates queries and keys by their positions, with an exact cached cos/sin table.

    Args:
        head_dim: a :class:`posenc.RopeConfig` (``posenc.from_hf_config(config)``,
            ``posenc.rope_preset``), the spec holding base, scaling, layout,
            rotary_dim and the sections; or channels per head, h_d (even),
            with the settings as keywords (``**settings``).
        max_len: rows computed now (positions 0 … max_len-1; default 4096,
            see :data:`~posenc.torch._cache.DEFAULT_ROWS`). More are computed
            on demand, also under ``torch.compile`` when it may break the
            graph; under ``fullgraph=True`` positions must lie in the rows
            held (``max_len`` or :meth:`reserve`).
        sequence_dim: where s sits in q and k: -2 for ``[b, n_h, s, h_d]``,
            -3 for ``[b, s, n_h, h_d]`` or packed ``[total, n_h, h_d]``.
        seq_len: for DynamicNTK / LongRoPE: the length that fixes the
            effective base (or factor set). None: max(position) + 1 of each
            eager call, as HF; a change of regime rebuilds the table (one
            table never mixes rotations), so a KV cache filled before it is
            stale: fix ``seq_len`` for a whole generation. With ``xpos`` it
            also fixes the centre N//2 (see :mod:`posenc.torch.xpos`).
        **settings: without a spec, its fields (:class:`~posenc.rope.spec.RopeSettings`,
            as :func:`posenc.apply_rope`): ``base`` θ (HF ``rope_theta``);
            ``scaling`` None or a :mod:`posenc.rope.scaling` variant (HF's rope
            types); ``layout`` ``"half"`` (HF, GPT-NeoX), ``"interleaved"``
            (Meta, GPT-J) or ``"head_half"`` (Gemma 4); ``rotary_dim``
            channels rotated (default h_d), the rest passing through;
            ``sections``, ``section_layout``, ``ladder``: multi-axis RoPE, as
            :func:`posenc.rope_frequencies` (Qwen2-VL's M-RoPE: ``sections=(16,
            24, 24)``; Qwen3-VL: add ``section_layout="interleaved"``; the
            Qwen2-VL vision tower: ``ladder="per_axis"``). ``positions`` then
            carry a trailing axis, ``[s, n_axes]`` or ``[b, s, n_axes]``
            (HF's ``position_ids`` ``[3, b, s]`` is
            ``position_ids.permute(1, 2, 0)``); an ``offset`` gives text
            tokens, every axis at the same position. Floating positions are
            real-valued coordinates: with :func:`posenc.rope_preset`'s
            ``"eva02"`` or ``"dinov3"`` (``RotaryEmbedding(cfg)``) and :func:`posenc.eva02_coords` /
            :func:`posenc.dinov3_coords`, exact on the device, also under
            ``torch.compile(fullgraph=True)``.
        xpos: None, or a :class:`posenc.XPos`: q is also scaled by
            ζ^((p − c)/scale_base) and k by its inverse, as
            :func:`posenc.apply_rope` with ``xpos=``, bit for bit (1-D
            positions only).

    Outputs are in the input dtypes; the math is float32 on float32 cos/sin
    rows within 1 ulp of the true values, and float64 on float64 rows for
    float64 inputs (then equal to :func:`posenc.apply_rope` in float64).
    Safe to call from many threads.

    >>> import posenc
    >>> rope = RotaryEmbedding(posenc.RopeConfig(4, base=100.0, layout="interleaved"))
    >>> q = torch.tensor([[[[1.0, 0.0, 0.0, 0.0]]]])          # [b=1, n_h=1, s=1, h_d=4]
    >>> q2, k2 = rope(q, q, offset=2)
    >>> [round(v, 4) for v in q2.flatten().tolist()]
    [-0.4161, 0.9093, 0.0, 0.0]
    """

    def __init__(
        self,
        head_dim: int | RopeConfig,
        *,
        max_len: int = DEFAULT_ROWS,
        sequence_dim: int = -2,
        seq_len: int | None = None,
        xpos: Any = None,
        **settings: Unpack[RopeSettings],
    ) -> None:
        super().__init__()
        # the spec (given, or built from the settings): each setting checked once, when it was built
        self.spec = spec = spec_in(head_dim, settings)
        self.sequence_dim = check_sequence_dim(sequence_dim)
        self.seq_len = None if seq_len is None else check_seq_len(seq_len)
        freqs = spec_frequencies(spec, self.seq_len)
        self.sections = spec.multi_axis
        self.head_dim = freqs.head_dim
        self.rotary_dim = freqs.rotary_dim
        self.base = spec.base
        self.scaling = scaling = spec.scaling
        self.layout = spec.layout
        self.freqs = freqs
        self._regime = None if scaling is None else scaling.cache_key(seq_len)
        # DynamicNTK / LongRoPE without seq_len: the rows follow each call's length (decided on the host)
        self._follows_length = seq_len is None and scaling is not None and scaling.cache_key(None) is not None
        rows = check_int(max_len, "max_len", minimum=0)
        if xpos is not None and self._regime is not None:
            raise PosEncError(f"xpos with a length-dependent scaling ({scaling!r}) is not supported")
        if xpos is not None and self.sections is not None:
            raise PosEncError("xpos with multi-axis sections is not supported: xPos decays along one position axis")
        self.cache = TableCache(_Rows(freqs), (2, freqs.rotary_dim // 2), stop=0 if xpos is not None else rows)
        self.xpos = None if xpos is None else XPosTable(freqs, xpos, self.seq_len, rows)
        # multi-axis: which axis's row each pair reads. A plain CPU tensor made from the sections, not a
        # buffer: nothing to save, and nothing a meta-device init could leave uninitialised
        self._pair_axes = None if self.sections is None else torch.tensor(
            self.sections.pair_axes(), dtype=torch.long, device="cpu")
        # real-valued positions (EVA-02, DINOv3): the ladder's float64 words as non-persistent buffers
        self.angles = LadderBuffers(freqs.ladder)

    @property
    def attention_factor(self) -> float:
        """The factor in the cos/sin rows (YaRN, LongRoPE); 1 for most."""
        return self.freqs.attention_factor

    def reserve(self, max_len: int, start: int = 0, *, dtype: torch.dtype = torch.float32) -> None:
        """Hold rows for positions ``start … max_len-1`` now (before ``torch.compile(fullgraph=True)``)."""
        if self.xpos is not None:
            self.xpos.reserve(max_len, start, dtype=dtype)
        else:
            self.cache.reserve(max_len, start, dtype=dtype)

    def _follow_length(self, lo: int, hi: int) -> None:
        """Length-dependent scalings: rebuild the table when the regime changes (eager, under the cache lock)."""
        if self.scaling is None or self.scaling.cache_key(None) is None:
            return
        seq = self.seq_len if self.seq_len is not None else max(hi, 1)
        regime = self.scaling.cache_key(seq)
        if regime != self._regime:
            self.freqs = spec_frequencies(self.spec, seq)
            self._regime = regime
            self.cache.reset(_Rows(self.freqs))

    def _rows(
        self, s: Any, positions: Any, offset: Any, device: Any, batch: int | None, dtype: torch.dtype
    ) -> torch.Tensor:
        """``[s, 2, r/2]`` or ``[b, s, 2, r/2]``: cos and sin side by side, read-only."""
        if isinstance(positions, torch.Tensor) and positions.is_floating_point():
            return self._real_rows(s, positions, offset, device, batch, dtype)
        if self._follows_length and compiling():  # the regime is chosen from the real length, eagerly
            return _rows_on_host(self, s, positions, offset, device, batch, dtype)
        if self.sections is not None and positions is not None:
            return self._axis_rows(self.sections, s, positions, device, batch, dtype)
        return self.cache.lookup(
            s, positions=positions, offset=offset, batch=batch, device=device, dtype=dtype, before=self._follow_length
        )

    def _real_rows(
        self, s: Any, positions: torch.Tensor, offset: Any, device: Any, batch: int | None, dtype: torch.dtype
    ) -> torch.Tensor:
        """Floating positions: no table lookup, the exact sin/cos of each p·ω_i (:mod:`posenc.torch._real_rows`)."""
        if isinstance(offset, torch.Tensor) or not (offset is None or _is_zero(offset)):
            raise PosEncError(f"pass either positions or offset, not both (got offset={offset!r})")
        if self._follows_length:
            raise PosEncError(
                f"real-valued positions with a length-dependent scaling ({self.scaling!r}) need seq_len=N "
                "(one set of frequencies): the length max(position) + 1 is not defined by fractional positions")
        check_real_positions(positions, int(s), batch, None if self.sections is None else self.sections.n_axes)
        dev = torch.device(device) if device is not None else positions.device
        return real_rows(positions, self.freqs, self.angles, self._pair_axes, dev, dtype)

    def _axis_rows(
        self, sections: Sections, s: Any, positions: Any, device: Any, batch: int | None, dtype: torch.dtype
    ) -> torch.Tensor:
        """Multi-axis positions ``[s, n]`` / ``[b, s, n]``: one lookup of every axis's rows, each pair from its axis."""
        n = sections.n_axes
        if not isinstance(positions, torch.Tensor) or positions.dim() not in (2, 3) \
                or tuple(positions.shape[-2:]) != (s, n):
            shape = list(positions.shape) if isinstance(positions, torch.Tensor) else type(positions).__name__
            raise PosEncError(
                f"positions for sections {sections.shown} must be [s, {n}] or [b, s, {n}] with s = {s} (one "
                f"position per axis, last; HF's position_ids [{n}, b, s] is position_ids.permute(1, 2, 0)), "
                f"got {shape}"
            )
        if positions.dim() == 3 and (batch is None or positions.shape[0] not in (1, batch)):
            want = f"[s, {n}] = [{s}, {n}]" + ("" if batch is None else f" or [b, s, {n}] = [{batch}, {s}, {n}]")
            raise PosEncError(  # named as given, before the flattening below hides the axes
                f"positions for sections {sections.sizes} must be {want} (b from x), got {list(positions.shape)}")
        flat = positions.reshape(*positions.shape[:-2], s * n)  # [(b,) s·n]: every axis's position, token by token
        rows = self.cache.lookup(s * n, positions=flat, batch=batch, device=device, dtype=dtype,
                                 before=self._follow_length)
        rows = rows.reshape(*rows.shape[:-3], s, n, 2, rows.shape[-1])  # [(b,) s, n, 2, r/2]
        axes = torch.as_tensor(self._pair_axes, device=rows.device)
        pick = axes.view(*([1] * (rows.dim() - 1)), -1).expand(*rows.shape[:-3], 1, 2, -1)
        return torch.gather(rows, -3, pick).squeeze(-3)

    def cos_sin(
        self, s: int, *, positions: torch.Tensor | None = None, offset: int | torch.Tensor = 0,
        device: torch.device | None = None, dtype: torch.dtype = torch.float32,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The (cos, sin) rows for s tokens: ``[s, r/2]`` or ``[b, s, r/2]`` each, float32 or float64.

        Copies: writing into them never reaches the module's table.
        """
        batch = None  # no q here to pair with: [b, s] positions ([b, s, n_axes] with sections) and [b] offsets set it
        if isinstance(positions, torch.Tensor) and positions.dim() == 2 + (self.sections is not None):
            batch = int(positions.shape[0])
        elif isinstance(offset, torch.Tensor) and offset.dim() == 1:
            batch = int(offset.shape[0])
        rows = self._rows(s, positions, offset, device, batch, dtype)
        return rows[..., 0, :].clone(), rows[..., 1, :].clone()

    def rotate(
        self, x: torch.Tensor, *, positions: torch.Tensor | None = None, offset: int | torch.Tensor = 0,
        role: str | None = None,
    ) -> torch.Tensor:
        """Rotate one tensor (q or k), ``[..., s, h_d]`` (or ``[..., s, n_h, h_d]``); with xpos, ``role`` "q" or "k"."""
        check_qk("x", x, self.head_dim, self.sequence_dim)
        if self.xpos is not None or role is not None:
            check_xpos(None if self.xpos is None else self.xpos.xpos, role)
        s = x.shape[self.sequence_dim]
        if self.xpos is not None:
            rows = self.xpos.rows(s, positions, offset, x.device, batch_size(x), table_dtype(x), x.dtype)
            return self._apply_tables(x, rows[..., 0:2, :] if role == "q" else rows[..., 2:4, :])
        rows = self._rows(s, positions, offset, x.device, batch_size(x), table_dtype(x))
        return self._apply_tables(x, rows)

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
            positions: ``[s]`` or ``[b, s]``: per-row positions (left padding:
                ``cumsum(mask) - 1``; packed sequences:
                :func:`positions_from_cu_seqlens`). Integer tensors read the
                cached table; floating tensors are real-valued positions
                (EVA-02's and DINOv3's fractional coordinates), computed
                exactly on their device at each call (no table), the bits of
                :func:`posenc.rope_cos_sin`. Default offset … offset+s-1.
            offset: first position when ``positions`` is None: an int (KV-cache
                length; NumPy integers too), or an integer tensor ``[]`` or ``[b]``.

        Returns:
            New tensors (never views of the table).

        Raises:
            PosEncError: bad shapes (naming them), dtypes, positions (value
                checks in eager mode).
        """
        check_qk("q", q, self.head_dim, self.sequence_dim)
        check_qk("k", k, self.head_dim, self.sequence_dim)
        sd = self.sequence_dim
        s = q.shape[sd]
        heads = -3 if sd == -2 else -2
        if q.dim() != k.dim() or q.shape[:heads] + q.shape[heads + 1 :] != k.shape[:heads] + k.shape[heads + 1 :]:
            raise PosEncError(
                f"q and k must agree in every dimension but heads, got {tuple(q.shape)} and {tuple(k.shape)}"
            )
        dq, dk = table_dtype(q), table_dtype(k)
        if self.xpos is not None:  # (cos, sin)·ζ^(+…) for q, ·ζ^(−…) for k
            xq = self.xpos.rows(s, positions, offset, q.device, batch_size(q), dq, q.dtype)
            xk = self.xpos.rows(s, positions, offset, q.device, batch_size(q), dk, k.dtype)
            return self._apply_tables(q, xq[..., 0:2, :]), self._apply_tables(k, xk[..., 2:4, :])
        rows_q = self._rows(s, positions, offset, q.device, batch_size(q), dq)
        rows_k = rows_q if dk == dq else self._rows(s, positions, offset, q.device, batch_size(q), dk)
        return self._apply_tables(q, rows_q), self._apply_tables(k, rows_k)

    def _apply_tables(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        if self.sequence_dim == -2:
            out = _fused.rotate(x, rows, self.layout, self.rotary_dim)
            if out is not None:
                return out
        cos, sin = rows[..., 0, :], rows[..., 1, :]
        batched = cos.dim() == 3
        return rotate_pairs(
            x, broadcast_rows(cos, x, self.sequence_dim, batched), broadcast_rows(sin, x, self.sequence_dim, batched),
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
        text = (
            f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, base={self.base}, "
            f"scaling={self.scaling!r}, layout={self.layout!r}, sequence_dim={self.sequence_dim}"
            + ("" if self.xpos is None else f", xpos={self.xpos.xpos!r}")
        )
        return text if self.sections is None else f"{text}, sections={self.sections!r}"


_FOLLOWS_LENGTH = (
    "posenc.torch.RotaryEmbedding with a length-dependent scaling (DynamicNTK, LongRoPE) and seq_len=None "
    "chooses its frequencies from each call's length, on the host: pass seq_len=N (one set of frequencies) "
    "to compile with fullgraph=True, or compile with fullgraph=False"
)


@host_only(_FOLLOWS_LENGTH)
def _rows_on_host(
    rope: RotaryEmbedding, s: Any, positions: Any, offset: Any, device: Any, batch: int | None, dtype: torch.dtype
) -> torch.Tensor:
    """The rows as an eager call reads them (the regime follows the real length), between two graphs."""
    return rope._rows(int(s), positions, offset, device, batch, dtype)
