"""Relative position biases for PyTorch: ALiBi and T5's learned buckets.

Both return a bias to add to attention scores ``[b, n_h, q, k]`` (or to pass
as ``attn_mask`` to ``scaled_dot_product_attention``). Their numbers come
from the NumPy core, so they equal :func:`posenc.alibi_bias` and
:func:`posenc.t5_bucket` bit for bit:

- :class:`AlibiBias` keeps the rows ``m_h·t`` of :func:`posenc.bias.alibi.alibi_table`
  (float32, and float64 for float64 callers) in a
  :class:`~posenc.torch._cache.TableCache`: not in ``state_dict``, never cast
  by ``.to(dtype)``, thread-safe, grown on demand in eager mode, a gather
  under ``torch.compile``.
- :class:`T5RelativeBias` holds HF's learned ``nn.Embedding`` under HF's
  attribute name, so a T5 checkpoint's ``relative_attention_bias.weight``
  loads as is, and looks the buckets up in a table of :func:`posenc.t5_bucket`
  (offsets beyond ``max_distance`` share the last bucket, so
  ``2·max_distance + 1`` rows cover every offset), kept in a TableCache for
  the same device, meta-device and compile rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from ..bias.alibi import alibi_convention, alibi_rows_at, alibi_slopes, alibi_table, check_placement
from ..bias.t5 import T5Buckets, T5Settings, t5_bucket, t5_buckets
from ..errors import MAX_D_MODEL, MAX_POSITION, PosEncError, check_int, show_value
from ..registry import guarded
from ._cache import DEFAULT_ROWS, TableCache, compiling
from ._memory import check_device_size

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AlibiBias", "T5RelativeBias", "bucket_cache", "lookup_buckets"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check_float(dtype: Any) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or dtype not in _FLOATS:  # a tensor would compare element by element
        raise PosEncError(f"dtype must be a torch float16/bfloat16/float32/float64, got {dtype!r}")
    return dtype


def _check_causal(causal: Any) -> bool:
    if not isinstance(causal, bool):
        raise PosEncError(f"causal must be True or False, got {causal!r}")
    return causal


@dataclass(frozen=True, eq=False)
class _AlibiRows:
    """The module's row builder (picklable): rows ``m_h·t``, ``[count, n_heads]``."""

    n_heads: int
    convention: Any

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return alibi_table(self.n_heads, start, length, convention=self.convention, dtype=dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return alibi_rows_at(self.n_heads, positions, convention=self.convention, dtype=dtype)


def _coefficient(conv: Any, qp: torch.Tensor, kp: torch.Tensor, causal: bool,
                 shape: tuple[int, ...]) -> torch.Tensor:
    """The variant's distance terms t, checked (a user's too): an integer-valued real tensor that broadcasts.

    The rows are a table indexed by t, so t must be whole numbers here; a
    variant with fractional terms is refused by name (:func:`posenc.alibi_bias`
    multiplies m·t directly and takes it).
    """
    who = f"the ALiBi variant {show_value(conv)}: coefficient(...)"
    t = guarded(who, conv.coefficient, qp[..., :, None], kp[..., None, :], kp[..., -1:, None], causal)
    if not isinstance(t, torch.Tensor) or t.is_complex() or t.dtype == torch.bool:
        got = show_value(t) if not isinstance(t, torch.Tensor) else f"a {t.dtype} tensor"
        raise PosEncError(f"{who} returned {got}; expected a real tensor broadcastable to {shape} "
                          "(t in bias = m·t)")
    try:
        fits = torch.broadcast_shapes(tuple(t.shape), shape) == torch.Size(shape)
    except RuntimeError:
        fits = False
    if not fits:
        raise PosEncError(f"{who} returned a tensor of shape {tuple(t.shape)}; expected one broadcastable to "
                          f"{shape} (t in bias = m·t)")
    if t.is_floating_point():
        if not bool(torch.isfinite(t).all()):
            raise PosEncError(f"{who} returned a non-finite distance term; t must be finite (bias = m·t)")
        if not bool((t == t.round()).all()):
            raise PosEncError(f"{who} returned fractional distance terms; posenc.torch's ALiBi rows are a table "
                              "indexed by whole t (use posenc.alibi_bias, which multiplies m·t directly)")
        t = t.to(torch.long)
    return t


class AlibiBias(nn.Module):
    """ALiBi's per-head linear bias, exact, for ``[b, n_h, q, k]`` attention.

    Args:
        n_heads: heads, >= 1.
        convention: ``"press"``, ``"bloom"``, ``"mpt"`` or an instance
            (:mod:`posenc.bias.alibi`); see there which agree after softmax.
        causal: mask keys after each query with ``-inf``.
        max_len: distances ``-max_len … max_len-1`` computed now (default
            4096); more are computed on demand in eager mode. Call
            :meth:`reserve` before ``torch.compile(fullgraph=True)`` for longer
            sequences.

    Attributes:
        slopes: float64 ``[n_heads]``, correctly rounded (a property, not a
            buffer: nothing to save or cast).

    >>> b = AlibiBias(2)(3, 3)                  # slopes 2**-4, 2**-8
    >>> b.shape, b[0, 0].tolist()
    (torch.Size([1, 2, 3, 3]), [[0.0, -inf, -inf], [-0.0625, 0.0, -inf], [-0.125, -0.0625, 0.0]])
    """

    def __init__(
        self, n_heads: int, *, convention: Any = "press", causal: bool = True, max_len: int = DEFAULT_ROWS
    ) -> None:
        super().__init__()
        self.convention = alibi_convention(convention)
        self.n_heads = check_int(n_heads, "n_heads", minimum=1, maximum=MAX_D_MODEL)  # as posenc.alibi_slopes
        self.causal = _check_causal(causal)
        rows = check_int(max_len, "max_len", minimum=0)
        self.cache = TableCache(_AlibiRows(self.n_heads, self.convention), (self.n_heads,), stop=rows, start=-rows)

    @property
    def slopes(self) -> torch.Tensor:
        return torch.from_numpy(alibi_slopes(self.n_heads, convention=self.convention))

    def reserve(self, max_len: int, *, dtype: torch.dtype = torch.float32) -> None:
        """Hold the rows for every distance of sequences up to ``max_len`` now (before torch.compile)."""
        n = check_int(max_len, "max_len", minimum=0)
        self.cache.reserve(n, -n, dtype=torch.float64 if dtype == torch.float64 else torch.float32)

    def forward(
        self,
        q_len: int,
        k_len: int,
        *,
        offset: int = 0,
        positions: torch.Tensor | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """The bias ``[1, n_h, q_len, k_len]``, or ``[b, n_h, q_len, k_len]`` for ``[b, k_len]`` positions.

        Args:
            q_len, k_len: queries and keys.
            offset: the first query's key index (KV-cache length when decoding).
            positions: None, or integer key positions ``[k_len]`` / ``[b, k_len]``
                (BLOOM: ``(mask.cumsum(-1) - 1) * mask``); queries take
                ``positions[..., offset + r]``.
            dtype: of the result: :func:`posenc.alibi_bias`'s values bit for
                bit in float32 and float64; bfloat16/float16 are rounded from
                the float32 ones.
            device: default: where the rows are (or the positions').

        Raises:
            PosEncError: the checks of :func:`posenc.alibi_bias` (values in eager mode).
        """
        dt = _check_float(dtype)
        if not compiling():
            q = check_int(q_len, "q_len", minimum=1)
            k = check_int(k_len, "k_len", minimum=1)
            off = check_int(offset, "offset")
            check_placement(q, k, off, self.causal, positions)
            if positions is None and max(abs(off), abs(off + q)) >= MAX_POSITION:
                raise PosEncError(f"offset must keep positions below 2**53, got offset={off}")
        else:
            q, k, off = q_len, k_len, offset
            if positions is None and not self._holds(q, k, off, dt):  # eager grows the rows: so do we, on the host
                return _alibi_on_host(self, q, k, off, dt, device)
        dev = torch.device(device) if device is not None else (
            positions.device if positions is not None else self.cache.table.device)
        if not compiling():
            b = positions.shape[0] if positions is not None and positions.dim() == 2 else 1
            shape = (b, self.n_heads, q, k)
            if dev.type == "meta" or (positions is not None and positions.is_meta):  # deferred init, FSDP
                return torch.empty(shape, dtype=dt, device="meta")
            # the distance terms and the mask [b, q, k], the gathered rows and their masked copy [b, n_h, q, k]
            rows = 8 if dt == torch.float64 else 4
            check_device_size(shape, dt, "ALiBi bias", dev, 2 * b * q * k * 8 + 2 * b * self.n_heads * q * k * rows)
        if positions is None:
            kp = torch.arange(k, device=dev)
            qp = torch.arange(off, off + q, device=dev)
        else:
            if positions.dim() not in (1, 2) or positions.shape[-1] != k:
                raise PosEncError(
                    f"positions must be [k_len] or [b, k_len] with k_len = {k}, got shape {tuple(positions.shape)}"
                )
            if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
                raise PosEncError(f"positions must be an integer tensor, got dtype {positions.dtype}")
            kp = positions.to(device=dev, dtype=torch.long)
            qp = kp[..., off:off + q]
        t = self.convention.coefficient(qp[..., :, None], kp[..., None, :], kp[..., -1:, None], self.causal) \
            if compiling() else _coefficient(self.convention, qp, kp, self.causal, (*qp.shape[:-1], q, k))
        rows_dtype = torch.float64 if dt == torch.float64 else torch.float32
        flat = self.cache.lookup(t.numel(), positions=t.reshape(-1), device=dev, dtype=rows_dtype)
        bias = flat.reshape(*t.shape, self.n_heads).movedim(-1, -3)  # [..., n_h, q or 1, k]
        bias = bias.expand(*bias.shape[:-2], q, k)
        if bias.dim() == 3:
            bias = bias.unsqueeze(0)
        if self.causal:
            dev = bias.device
            future = torch.arange(k, device=dev)[None, :] > torch.arange(off, off + q, device=dev)[:, None]
            bias = bias.masked_fill(future, float("-inf"))
        return bias.to(dt)

    def _holds(self, q: Any, k: Any, off: Any, dtype: torch.dtype) -> bool:
        """Whether the rows cover every t of queries ``off …`` and keys ``0 …`` (guards on the sizes when traced)."""
        reach = self.convention.reach(min(0, off), max(k - 1, off + q - 1))
        a, z = self.cache.held(torch.float64 if dtype == torch.float64 else torch.float32)
        return a <= -reach and reach < z

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, convention={self.convention!r}, causal={self.causal}"


@torch.compiler.disable(reason=(
    "posenc.torch.AlibiBias: these distances lie beyond the rows it holds, and only an eager call grows them "
    "(on the host): call reserve(n) with n >= q_len + offset and k_len before compiling with fullgraph=True, "
    "or compile with fullgraph=False"))
def _alibi_on_host(m: AlibiBias, q: Any, k: Any, off: Any, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """The bias as an eager call computes it (growing the rows), between two graphs."""
    return m(int(q), int(k), offset=int(off), dtype=dtype, device=device)


@dataclass(frozen=True, eq=False)
class _BucketRows:
    """The T5 module's row builder (picklable): the bucket of each offset, ``[count, 1]`` (exact small integers)."""

    config: T5Buckets

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        c = self.config
        b = t5_bucket(positions, bidirectional=c.bidirectional, num_buckets=c.num_buckets, max_distance=c.max_distance)
        return b.astype(dtype)[:, None]

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return self.at(np.arange(start, start + length), dtype)


def bucket_cache(config: T5Buckets, *, held: bool = True) -> TableCache:
    """The bucket of every offset as a table: ``[-max_distance, max_distance]`` now (``held``), or grown on use.

    Offsets past ``max_distance`` share its bucket, so these rows cover every
    offset once clamped (:func:`lookup_buckets`); a module holds them all, so
    nothing grows under compile. Not held, the rows are the ones asked for
    (an eager caller's, whatever ``max_distance``).
    """
    md = config.max_distance if held else 0
    return TableCache(_BucketRows(config), (1,), start=-md, stop=md + 1 if held else 0)


def lookup_buckets(cache: TableCache, config: T5Buckets, relative_position: torch.Tensor,
                   device: torch.device | None = None) -> torch.Tensor:
    """The bucket of each integer offset ``j − i`` from ``cache`` (:func:`bucket_cache`): int64, the same shape.

    On ``device`` (default: where the cache's rows are).
    """
    md = config.max_distance
    if relative_position.is_meta:
        return torch.empty(relative_position.shape, dtype=torch.long, device="meta")
    rel = relative_position.clamp(-md, md)
    rows = cache.lookup(rel.numel(), positions=rel.reshape(-1), device=device)
    return rows.reshape(rel.shape).to(torch.long)


class T5RelativeBias(nn.Module):
    """T5's learned relative position bias: one scalar per (bucket, head).

    The table is ``relative_attention_bias = nn.Embedding(num_buckets, n_heads)``,
    named as in HF's ``T5Attention``: a checkpoint's
    ``encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight``
    (``[num_buckets, n_heads]``) is this module's
    ``relative_attention_bias.weight``. The buckets are :func:`posenc.t5_bucket`'s.

    Args:
        n_heads: heads, >= 1.
        **settings: :class:`posenc.bias.T5Settings`, as :func:`posenc.t5_bucket`: ``bidirectional``,
            True for T5's encoder (the default), False for its decoder; ``num_buckets``,
            ``max_distance`` (T5: 32, 128).

    >>> m = T5RelativeBias(2, bidirectional=False)
    >>> m(4, 4).shape
    torch.Size([1, 2, 4, 4])
    >>> sorted(m.state_dict())
    ['relative_attention_bias.weight']
    >>> m.bucket(torch.tensor([3, 0, -1, -20, -10**9])).tolist()
    [0, 0, 1, 17, 31]
    """

    def __init__(self, n_heads: int, **settings: Unpack[T5Settings]) -> None:
        super().__init__()
        self.config = t5_buckets(None, "T5RelativeBias", **settings)
        self.n_heads = check_int(n_heads, "n_heads", minimum=1, maximum=MAX_D_MODEL)  # columns of the embedding
        self.relative_attention_bias = nn.Embedding(self.config.num_buckets, self.n_heads)
        self.cache = bucket_cache(self.config)  # every row held: nothing grows, under compile too

    def bucket(self, relative_position: torch.Tensor) -> torch.Tensor:
        """The bucket of each offset ``j − i`` (integer tensor), as :func:`posenc.t5_bucket`: int64, same shape."""
        return lookup_buckets(self.cache, self.config, relative_position)

    def forward(self, q_len: int, k_len: int, *, offset: int = 0) -> torch.Tensor:
        """The bias ``[1, n_h, q_len, k_len]`` for queries at ``offset …`` and keys at ``0 …`` (HF ``compute_bias``).

        ``offset`` is HF's ``past_seen_tokens``. The result is in the
        embedding's dtype, on its device.
        """
        dev = self.relative_attention_bias.weight.device
        if not compiling():
            q = check_int(q_len, "q_len", minimum=1)
            k = check_int(k_len, "k_len", minimum=1)
            check_int(offset, "offset")
            shape, wt = (1, self.n_heads, q, k), self.relative_attention_bias.weight.dtype
            if dev.type == "meta":  # deferred init, FSDP: the shape and dtype, no values
                return torch.empty(shape, dtype=wt, device="meta")
            # the offsets, their clamp, the buckets (int64 [q, k] each) and the looked-up rows (float32)
            check_device_size(shape, wt, "T5 bias", dev, q * k * (3 * 8 + 4))
        rel = torch.arange(k_len, device=dev)[None, :] - (torch.arange(q_len, device=dev)[:, None] + offset)
        values = self.relative_attention_bias(self.bucket(rel).to(dev))  # [q, k, n_h]
        return values.permute(2, 0, 1).unsqueeze(0)

    def extra_repr(self) -> str:
        c = self.config
        return (f"n_heads={self.n_heads}, bidirectional={c.bidirectional}, num_buckets={c.num_buckets}, "
                f"max_distance={c.max_distance}")
