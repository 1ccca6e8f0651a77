"""Exact position tables for torch modules: one cache, one lookup.

A module that adds or rotates by a per-position table (the sinusoidal
encoding, RoPE's cos/sin) asks its :class:`TableCache` for rows with
:meth:`TableCache.lookup` (``positions`` or ``offset`` -> rows); every check
on positions and offsets is written once, in :mod:`posenc.torch._positions`,
and the rows are read or computed by :mod:`posenc.torch._rows`. Which rows to
hold, grow or compute directly is the backend-neutral policy of
:mod:`posenc.rows.window` (the NumPy cache :class:`posenc.rows.RowCache`
follows the same one); this module keeps what is torch's: buffers, devices,
autograd and torch.compile. The cache guarantees what
users of other libraries found broken (see
``shared/research/user-reports.md``, items 2, 4, 10, 16, 17, 18) and what
issue 10 asked for:

- **Exact rows.** Rows come from the NumPy core (the builder's ``rows`` for
  consecutive positions, ``at`` for any positions; both give each position
  one value), never from ``torch.arange(dtype=float)`` or a float32 ``p * ω``
  on the device, so ``set_default_dtype``, DeepSpeed's ``arange`` patch,
  autocast and TF32 cannot touch them.
- **float32, and float64 for float64 callers**, on the caller's device.
  ``module.to(torch.bfloat16)`` moves the tables but never casts them
  (``_apply`` is overridden); a table cast or replaced behind the module's
  back (FSDP buffer casts, accelerate materialising buffers) is recomputed
  at the next eager call. The float64 table is computed the first time a
  float64 caller asks.
- **Nothing in ``state_dict``**; stale keys from older checkpoints are dropped.
- **Meta-device safe.** Built under ``torch.device("meta")`` a table is a
  shape only; ``to_empty()`` and the next real call recompute it.
- **Rows from construction.** :data:`DEFAULT_ROWS` positions (0 … 4095)
  are held from the start, torchtune's default ``max_seq_len`` and as many
  as the ``max_position_embeddings`` of most HF configs, so
  ``torch.compile(model)`` works with no extra call.
- **Sparse positions cost what they use.** The cache holds one contiguous
  window of positions per dtype, grown by :func:`posenc.rows.window.for_lookup`:
  doubling for decoding (amortised O(1) rows per token), a small multiple
  (:data:`SPARSE_FACTOR`) of the rows asked for (a long prefill). Anything
  else (``positions=[0, 2**31 - 2]``, ``offset=10**9`` beside a window at
  0) is computed directly, row by row through the exact per-position path,
  and not kept: peak extra memory is a small multiple of the output.
- **Thread-safe.** Reading, growing, relocating and replacing the tables
  happen under one lock per cache; a returned view is taken from a table
  that is never written again, so a thread that grows the cache cannot
  change rows another thread is reading.
- **torch.compile.** Inside a compiled graph nothing is locked, synced or
  checked by value. A run (an ``int`` offset) beyond the window leaves the
  graph (``torch.compiler.disable``) to grow the cache eagerly, so a compile
  that allows graph breaks just works; under ``fullgraph=True`` that is an
  error whose reason names ``reserve()``/``max_len``. Tensor positions or
  offsets are gathered with an in-graph assert that they lie in the window.

Row ``i`` of a table holds position ``start + i``; positions may be negative.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn

from ..errors import PosEncError, check_int
from ..rows.builder import RowBuilder, cache_arguments
from ..rows.window import DEFAULT_ROWS, SPARSE_FACTOR, check_positions_held, for_lookup, for_reserve, grown
from ..support.compile import host_only
from ..support.memory import check_size
from ._positions import Request, parse_request, position_bounds
from ._rows import NUMPY_DTYPES, direct_rows, gather_rows, host_rows, to_device

__all__ = [
    "DEFAULT_ROWS",
    "SPARSE_FACTOR",
    "RowBuilder",
    "TableCache",
    "compiling",
    "drop_keys",
    "position_bounds",
]

_BUFFER = {torch.float32: "table", torch.float64: "table64"}
_BEYOND = (
    "posenc.torch: positions beyond the rows this module holds: under torch.compile(fullgraph=True) nothing grows, "
    "so call reserve(n) (or construct it with max_len=n) before compiling"
)
_BEYOND_GATHERED = (
    "posenc.torch: tensor positions or offsets beyond the rows this module holds: inside torch.compile they are read, "
    "never grown, so call reserve(n) (or construct it with max_len=n) before compiling"
)


def compiling() -> bool:
    """True while torch.compile / torch.export traces: no syncs, no growth, no locks then."""
    return bool(torch.compiler.is_compiling())


class TableCache(nn.Module):
    """Rows of an exact per-position table, held in float32 (and float64 on demand), grown safely.

    Args:
        build: a :class:`RowBuilder`.
        row_shape: shape of one row, e.g. ``(d_model,)`` or ``(2, n)``.
        stop: rows for positions ``start … stop-1`` are computed now
            (default :data:`DEFAULT_ROWS`; ``0``: none until first use).
        start: the first position held.

    Attributes:
        table: float32 ``[stop - start, *row_shape]``, a non-persistent buffer.
        table64: the float64 rows (empty until a float64 caller asks).

    >>> import numpy as np
    >>> class Ramp:  # row p = [p]
    ...     def rows(self, start, n, dtype): return np.arange(start, start + n, dtype=dtype)[:, None]
    ...     def at(self, p, dtype): return p.astype(dtype)[:, None]
    >>> c = TableCache(Ramp(), (1,), stop=4)
    >>> c.lookup(2, positions=torch.tensor([3, 0])).flatten().tolist()
    [3.0, 0.0]
    >>> c.lookup(2, offset=10**6).flatten().tolist(), (c.start, c.stop)   # far: computed, not kept
    ([1000000.0, 1000001.0], (0, 4))
    """

    table: torch.Tensor
    table64: torch.Tensor

    def __init__(
        self, build: RowBuilder, row_shape: Sequence[int], *, stop: int = DEFAULT_ROWS, start: int = 0
    ) -> None:
        super().__init__()
        self.build, self.row_shape, first, count = cache_arguments(build, row_shape, stop, start)
        self._check_size(count, torch.float32)
        self._lock = threading.RLock()
        self._start: dict[torch.dtype, int] = {}
        self._own: dict[torch.dtype, torch.Tensor] = {}
        # honour torch.device("meta") / torch.device("cuda") context managers
        device = torch.empty(0).device
        self._install(torch.float32, self._compute(first, count, device, torch.float32), first)
        self._install(torch.float64, self._compute(0, 0, device, torch.float64), 0)

    # -- state -----------------------------------------------------------------

    @property
    def start(self) -> int:
        """The first position of the float32 rows."""
        return self._start[torch.float32]

    @property
    def stop(self) -> int:
        """One past the last position of the float32 rows."""
        return self.start + int(self.table.shape[0])

    def held(self, dtype: torch.dtype = torch.float32) -> tuple[int, int]:
        """``(start, stop)``: the positions whose ``dtype`` rows are held."""
        a = self._start[dtype]
        return a, a + int(getattr(self, _BUFFER[dtype]).shape[0])

    def _install(self, dtype: torch.dtype, table: torch.Tensor, start: int) -> None:
        self.register_buffer(_BUFFER[dtype], table, persistent=False)
        self._start[dtype] = start
        # the table we computed: anything else found in the buffer is recomputed
        self._own[dtype] = table

    def _fresh(self, dtype: torch.dtype) -> bool:
        t = getattr(self, _BUFFER[dtype])
        return t is self._own[dtype] and not t.is_meta and t.dtype == dtype

    def _check_size(self, rows: int, dtype: torch.dtype) -> None:
        check_size((rows, *self.row_shape), NUMPY_DTYPES[dtype], "a position table")

    def _compute(self, start: int, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        shape = (length, *self.row_shape)
        # a table made under inference_mode could not be used where autograd records
        with torch.inference_mode(False):
            if device.type == "meta" or length == 0:
                return torch.empty(shape, dtype=dtype, device=device)
            return to_device(host_rows(self.build, shape, dtype, start=start), device)

    # -- the lookup --------------------------------------------------------------

    def lookup(
        self,
        s: Any,
        *,
        positions: torch.Tensor | None = None,
        offset: Any = 0,
        batch: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        before: Callable[[int, int], None] | None = None,
    ) -> torch.Tensor:
        """The rows for ``s`` tokens at ``positions``, or at ``offset … offset+s-1``.

        Args:
            s: tokens in the sequence.
            positions: integer positions ``[s]``, or ``[b, s]`` with b 1 or
                ``batch`` (integer-valued floating tensors are accepted).
            offset: when ``positions`` is None: an int (NumPy integers too),
                or an integer tensor ``[]`` or ``[b]`` (b 1 or ``batch``).
            batch: the caller's batch size, or None when it has none.
            device: where the rows are wanted (default: where the table is).
            dtype: torch.float32 or torch.float64.
            before: called with the bounds ``(lo, hi)`` under the lock before
                any growth (RoPE's length-dependent scalings reset the table there).

        Returns:
            ``[s, *row_shape]``, or ``[b, s, *row_shape]`` for ``[b, s]``
            positions or ``[b]`` offsets; read-only (it may be a view of the
            table: copy before writing into it).

        Raises:
            PosEncError: before any work, naming the value or shape: both
                positions and offset; non-integer dtypes; shapes that do not
                match ``s``/``batch``; NaN, non-integers or ``|p| >= 2**53``
                (value checks in eager mode only).
        """
        eager = not compiling()
        req = parse_request(s, positions, offset, batch, eager)
        if not isinstance(dtype, torch.dtype) or dtype not in _BUFFER:
            raise PosEncError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        if not eager:
            return self._traced(req, dtype, device, before)
        dev = torch.device(device) if device is not None else self.table.device
        if dev.type == "meta":
            lead = (int(req.s),) if req.index is None else tuple(req.index.shape)
            return torch.empty((*lead, *self.row_shape), dtype=dtype, device=dev)
        with self._lock:
            if before is not None:
                before(req.lo, req.hi)
            self._place(dev)
            a, z = self.held(dtype)
            if req.hi > req.lo and not (a <= req.lo and req.hi <= z):  # the policy's "read", inline: the hot path
                if for_lookup((a, z), req.lo, req.hi, req.count) == "direct":
                    return self._direct(req, dtype, dev)
                self._grow(req.lo, req.hi, dtype)
            return self._read(req, dtype)

    def _traced(self, req: Request, dtype: torch.dtype, device: Any, before: Any) -> torch.Tensor:
        """Inside a compiled graph: a slice or a gather, no locks, no syncs."""
        table = getattr(self, _BUFFER[dtype])
        a = self._start[dtype]
        if req.index is None:
            if req.first < a or req.first + req.s > a + table.shape[0]:
                return _outside_graph(self, req, dtype, device, before)
            return table[req.first - a : req.first - a + req.s]
        idx = req.index.to(device=table.device, dtype=torch.long) - a
        torch._assert_async(((idx >= 0) & (idx < table.shape[0])).all(), _BEYOND_GATHERED)
        return gather_rows(table, idx, self.row_shape)

    def _read(self, req: Request, dtype: torch.dtype) -> torch.Tensor:
        """Rows inside the window: a view of a table that nothing writes again, or a gather."""
        table = getattr(self, _BUFFER[dtype])
        a = self._start[dtype]
        if req.index is None:
            return table[req.first - a : req.first - a + req.s]
        return gather_rows(table, req.index.to(table.device) - a, self.row_shape)

    def _direct(self, req: Request, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """Rows computed for these positions alone (held ones gathered), not kept."""
        table = getattr(self, _BUFFER[dtype])
        return direct_rows(self.build, table, self._start[dtype], req, self.row_shape, dtype, device)

    # -- growth (eager, under the lock) -----------------------------------------

    def _grow(self, lo: int, hi: int, dtype: torch.dtype) -> None:
        """Extend the window to cover ``lo … hi-1``, computing only the new rows."""
        table = getattr(self, _BUFFER[dtype])
        a, z = self.held(dtype)
        dev = table.device
        new_lo, new_hi = grown((a, z), lo, hi)
        check_positions_held(new_lo, new_hi)
        self._check_size(new_hi - new_lo, dtype)
        below = self._compute(new_lo, a - new_lo, dev, dtype)
        above = self._compute(z, new_hi - z, dev, dtype)
        with torch.inference_mode(False):
            self._install(dtype, torch.cat([below, table, above]), new_lo)

    def reserve(self, stop: int, start: int = 0, *, dtype: torch.dtype = torch.float32) -> None:
        """Hold the rows for positions ``start … stop-1`` now (before ``torch.compile(fullgraph=True)``).

        The window grows to cover them, or, when that would hold far more
        rows than asked for, moves to exactly them.
        """
        first, last = check_int(start, "start"), check_int(stop, "stop")
        if not isinstance(dtype, torch.dtype) or dtype not in _BUFFER:
            raise PosEncError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        if last <= first:
            return
        check_positions_held(first, last)
        with self._lock:
            self._place(self.table.device)
            action = for_reserve(self.held(dtype), first, last)
            if action == "held":
                return
            if action == "grow":
                self._grow(first, last, dtype)
                return
            self._check_size(last - first, dtype)
            dev = getattr(self, _BUFFER[dtype]).device
            self._install(dtype, self._compute(first, last - first, dev, dtype), first)

    def reset(self, build: RowBuilder | None = None) -> None:
        """Forget every row (and replace the builder): for modules whose table changes."""
        with self._lock:
            if build is not None:
                self.build = build
            for dtype in _BUFFER:
                self._install(dtype, self._compute(0, 0, getattr(self, _BUFFER[dtype]).device, dtype), 0)

    # -- torch integration -----------------------------------------------------

    def _place(self, device: torch.device) -> None:
        """Tables on ``device`` and ours (recomputed if cast, replaced or meta)."""
        for dtype in _BUFFER:
            t = getattr(self, _BUFFER[dtype])
            if t.device != device or (device.type != "meta" and not self._fresh(dtype)):
                self._relocate(device, dtype)

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> TableCache:
        # fn casts and moves; only its device is honoured: the tables keep their dtypes and exact rows
        try:
            device = fn(torch.empty(0, dtype=torch.float32, device=self.table.device)).device
        except NotImplementedError:  # .to(device) from meta: nothing to copy, we recompute
            device = fn(torch.empty(0, dtype=torch.float32)).device
        with self._lock:
            self._place(device)
        return self

    def _relocate(self, device: torch.device, dtype: torch.dtype) -> None:
        """Put the same rows on ``device``: copied when ours and real, recomputed otherwise."""
        a, z = self.held(dtype)
        if self._fresh(dtype):
            self._install(dtype, getattr(self, _BUFFER[dtype]).to(device), a)  # an exact copy
        else:
            self._install(dtype, self._compute(a, z - a, device, dtype), a)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)  # locks do not pickle; each copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._lock = threading.RLock()

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: Any, strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        drop_keys(state_dict, prefix, ("table", "table64"))  # saved by a version that persisted it
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def extra_repr(self) -> str:
        return f"positions={self.start}…{self.stop - 1}, row_shape={self.row_shape}, device={self.table.device}"


@host_only(_BEYOND)
def _outside_graph(cache: TableCache, req: Request, dtype: torch.dtype, device: Any, before: Any) -> torch.Tensor:
    """A run beyond the window met inside a compiled graph: served eagerly (``before`` too), between two graphs."""
    return cache.lookup(int(req.s), offset=int(req.first), device=device, dtype=dtype, before=before)


def drop_keys(state_dict: dict[str, Any], prefix: str, names: Iterable[str]) -> dict[str, Any]:
    """Remove ``prefix + name`` for each name (legacy buffers); returns what was removed.

    For ``_load_from_state_dict`` overrides: old checkpoints of the modules
    posenc replaces carry tables and frequencies (``pe``, ``inv_freq``,
    ``_float_tensor``…) that posenc recomputes exactly instead of loading.
    """
    return {n: state_dict.pop(prefix + n) for n in names if prefix + n in state_dict}
