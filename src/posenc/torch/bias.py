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

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from ..bias.alibi import Press, alibi_convention, alibi_rows_at, alibi_slopes, alibi_table
from ..bias.spec import LIMIT, AlibiSpec, T5Buckets, T5Settings, check_placement, t5_buckets
from ..bias.t5 import t5_bucket
from ..errors import MAX_D_MODEL, MAX_POSITION, PosEncError, check_int, show_value
from ..registry import guarded
from ..support.compile import host_only
from ..support.memory import shape_of
from ._cache import DEFAULT_ROWS, TableCache, compiling
from ._inputs import as_tensor, check_float, offsets
from ._memory import check_device_size

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["TORCH_BIAS", "AlibiBias", "T5RelativeBias", "TorchBias", "bucket_cache", "lookup_buckets"]

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
        # press's −|i − j| (and a subclass's that keeps it): its zero is −0.0 in the NumPy function
        self._signed_zero = type(self.convention).coefficient is Press.coefficient

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
        dt = check_float(dtype)
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
        if not self.causal and self._signed_zero:  # NumPy's m·(−|0|) is −0.0; a table row at t = 0 is +0.0
            bias = torch.where((t == 0).unsqueeze(-3), -0.0, bias)
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


@host_only(
    "posenc.torch.AlibiBias: these distances lie beyond the rows it holds, and only an eager call grows them "
    "(on the host): call reserve(n) with n >= q_len + offset and k_len before compiling with fullgraph=True, "
    "or compile with fullgraph=False")
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


def _device(x: Any) -> torch.device:
    return x.device if isinstance(x, torch.Tensor) else torch.device("cpu")


class TorchBias:
    """The :class:`~posenc.bias.backend.BiasBackend` primitives over torch tensors, on the input's device.

    Positions and offsets are integer tensors on any device (or array-likes,
    :func:`~posenc.torch._inputs.as_tensor`). ALiBi's values are the rows of
    :class:`AlibiBias` (the NumPy function's float32/float64 bits, gathered
    by whole distance terms), T5's buckets those of :class:`T5RelativeBias`
    (a table of :func:`posenc.t5_bucket`), looked up on the input's device.
    """

    name = "torch"

    def alibi_dtype(self, dtype: Any) -> torch.dtype:
        return check_float(dtype)

    def check_alibi(self, spec: AlibiSpec, positions: Any, dtype: Any) -> None:
        shape = None if positions is None else shape_of(positions)
        b = shape[0] if shape is not None and len(shape) == 2 else 1
        q, k, h = spec.q_len, spec.k_len, spec.n_heads
        # the distance terms and the mask [b, q, k], the gathered rows and their masked copy [b, n_h, q, k]
        rows = 8 if dtype == torch.float64 else 4
        work = 2 * b * q * k * 8 + 2 * b * h * q * k * rows
        check_device_size((b, h, q, k), dtype, "ALiBi bias", _device(positions), work)

    def alibi_positions(self, positions: Any, spec: AlibiSpec) -> torch.Tensor:
        pos = as_tensor(positions, "positions")
        if pos.dim() not in (1, 2) or pos.shape[-1] != spec.k_len:
            raise PosEncError(f"positions must be [k_len] or [b, k_len] with k_len = {spec.k_len}, "
                              f"got shape {tuple(pos.shape)}")
        if pos.is_floating_point() or pos.is_complex() or pos.dtype == torch.bool:
            raise PosEncError(f"positions must be an integer tensor, got dtype {pos.dtype}")
        return pos

    def alibi_rows(self, spec: AlibiSpec, positions: torch.Tensor | None, dtype: Any) -> torch.Tensor:
        module = AlibiBias(spec.n_heads, convention=spec.convention, causal=spec.causal, max_len=0)
        bias = module(spec.q_len, spec.k_len, offset=spec.offset, positions=positions, dtype=dtype)
        return bias[0] if positions is None or positions.dim() == 1 else bias

    def check_buckets(self, relative_position: Any) -> None:
        shape = shape_of(relative_position)
        if shape is not None:  # the output, the offsets' clamp and their rows (int64 each)
            n = math.prod(shape)
            check_device_size(shape, torch.int64, "t5_bucket output", _device(relative_position), 3 * 8 * n)

    def bucket_offsets(self, value: Any, name: str, what: str) -> torch.Tensor:
        return offsets(value, name, what)

    def buckets(self, spec: T5Buckets, offsets: torch.Tensor) -> torch.Tensor:
        return lookup_buckets(bucket_cache(spec, held=False), spec, offsets, offsets.device)

    def t5_weights(self, weights: Any) -> torch.Tensor:
        w = as_tensor(weights, "weights")
        if not w.dtype.is_floating_point or w.dim() != 2 or 0 in w.shape:
            raise PosEncError(f"weights must be a float matrix [num_buckets, n_heads], got {show_value(weights)}")
        return w

    def check_t5(self, weights: torch.Tensor, q_len: int, k_len: int) -> None:
        # the output, and the offsets, their clamp and the buckets (int64 [q, k] each)
        check_device_size((int(weights.shape[1]), q_len, k_len), weights.dtype, "T5 bias", weights.device,
                          3 * 8 * q_len * k_len)

    def t5_positions(self, value: Any, first: int, length: int, name: str, weights: torch.Tensor) -> torch.Tensor:
        if value is None:
            return torch.arange(first, first + length, device=weights.device)
        return offsets(value, name, "positions").to(weights.device)

    def t5_lookup(self, weights: torch.Tensor, spec: T5Buckets, q_positions: torch.Tensor,
                  k_positions: torch.Tensor, offset: int) -> torch.Tensor:
        rel = k_positions[None, :] - q_positions[:, None]  # |p| < 2**53 each: no int64 wraps
        if not rel.is_meta and not bool(((rel > -LIMIT) & (rel < LIMIT)).all()):
            reach = int(rel.abs().max())
            raise PosEncError(f"the offsets j − i of these positions (offset = {offset}) reach {reach}, "
                              "past 2**53 (T5's buckets take |j − i| < 2**53)")
        buckets = lookup_buckets(bucket_cache(spec, held=False), spec, rel, weights.device)
        return torch.nn.functional.embedding(buckets, weights).permute(2, 0, 1)


#: the torch primitives (no state: one is enough)
TORCH_BIAS = TorchBias()
