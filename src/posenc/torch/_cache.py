"""Exact position tables for torch modules: the shared cache machinery.

A module that adds or rotates by a per-position table (the sinusoidal
encoding, RoPE's cos/sin) keeps the rows it has needed in a
:class:`TableCache`. The cache guarantees what users of other libraries
found broken (see ``/work/shared/research/user-reports.md``, items 2, 4, 10,
16, 17, 18):

- **Exact rows.** Rows come from the NumPy core (``build(start, length)``),
  never from ``torch.arange(dtype=float)`` or a float32 ``p * ω`` on the
  device, so ``set_default_dtype``, DeepSpeed's ``arange`` patch, autocast
  and TF32 cannot touch them. The cache grows in pieces, so ``build`` must
  give each position one value whatever ``start`` is: the exact paths
  (:func:`posenc.exact.fill_range` for consecutive rows,
  :func:`posenc.exact.fill_sincos` for any positions) both do.
- **Always float32, on the module's device.** ``module.to(torch.bfloat16)``,
  ``.half()`` and friends move the table but never cast it (``_apply`` is
  overridden); a table cast or replaced behind the module's back (FSDP
  buffer casts, accelerate materialising buffers) is recomputed at the next
  eager call.
- **Nothing in ``state_dict``.** The buffer is non-persistent; stale keys
  from older checkpoints are dropped on load.
- **Meta-device safe.** Built under ``torch.device("meta")`` the table is a
  shape only; ``to_empty()`` and ``.to(device)`` recompute it.
- **Grows on demand, eagerly.** :meth:`TableCache.ensure` (called by eager
  forwards) extends the rows; under ``torch.compile`` nothing grows or
  syncs: reserve the rows first (``reserve``), then the compiled forward is
  a slice or a gather plus an add.

Rows are indexed by position: row ``i`` of ``table`` holds position
``start + i``. Positions may be negative (``start`` moves down).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import MAX_POSITION, PosEncError, check_int

__all__ = ["Builder", "TableCache", "compiling", "drop_keys", "position_bounds"]

#: ``build(start, length)`` returns the rows for positions start … start+length-1,
#: an array ``[length, *row_shape]`` (cast to float32). Keep it picklable (a
#: dataclass or a bound method, not a lambda) so modules can be saved whole,
#: deep-copied and sent to worker processes.
Builder = Callable[[int, int], np.ndarray]

_MIN_GROWTH = 256  # rows computed at least per growth
_MAX_SLACK = 1 << 16  # at most this many rows beyond the need per growth


def compiling() -> bool:
    """True while torch.compile / torch.export traces: no syncs, no growth then."""
    return bool(torch.compiler.is_compiling())


class TableCache(nn.Module):
    """Float32 rows of an exact per-position table, grown on demand.

    Args:
        build: ``build(start, length) -> ndarray [length, *row_shape]``, the
            exact rows (see :data:`Builder`).
        row_shape: shape of one row, e.g. ``(d_model,)`` or ``(2, n)``.
        stop: rows for positions ``start … stop-1`` are computed now
            (``0``: none until first use).
        start: the first position held.

    Attributes:
        table: float32 ``[stop - start, *row_shape]``, a non-persistent buffer.
        start: position of row 0.

    >>> import numpy as np
    >>> c = TableCache(lambda s, n: np.arange(s, s + n, dtype=np.float32)[:, None], (1,), stop=4)
    >>> c.take(torch.tensor([3, 0])).flatten().tolist()
    [3.0, 0.0]
    >>> c.ensure(-2, 6); (c.start, c.stop)
    (-2, 254)
    """

    table: torch.Tensor

    def __init__(self, build: Builder, row_shape: Sequence[int], *, stop: int = 0, start: int = 0) -> None:
        super().__init__()
        self.build = build
        self.row_shape = tuple(int(n) for n in row_shape)
        first = check_int(start, "start")
        last = check_int(stop, "stop")
        # honour torch.device("meta") / torch.device("cuda") context managers
        device = torch.empty(0).device
        self._install(self._compute(first, max(last - first, 0), device), first)

    # -- state -----------------------------------------------------------------

    @property
    def stop(self) -> int:
        """One past the last position held."""
        return self.start + int(self.table.shape[0])

    def _install(self, table: torch.Tensor, start: int) -> None:
        self.register_buffer("table", table, persistent=False)
        self.start = start
        # the table we computed: anything else found in the buffer is recomputed
        self._own = table

    def _fresh(self) -> bool:
        t = self.table
        return t is self._own and not t.is_meta and t.dtype == torch.float32

    def _compute(self, start: int, length: int, device: torch.device) -> torch.Tensor:
        shape = (length, *self.row_shape)
        # a table made under inference_mode could not be used where autograd records
        with torch.inference_mode(False):
            if device.type == "meta" or length == 0:
                return torch.empty(shape, dtype=torch.float32, device=device)
            rows = np.ascontiguousarray(self.build(start, length), dtype=np.float32)
            if rows.shape != shape:
                raise PosEncError(f"table builder returned shape {rows.shape}, expected {shape}")
            t = torch.from_numpy(rows)
            return t if device.type == "cpu" else t.to(device)

    # -- growth (eager only) ---------------------------------------------------

    def ensure(self, lo: int, hi: int, device: torch.device | str | None = None) -> None:
        """Make positions ``lo … hi-1`` available on ``device`` (default: where the table is).

        Recomputes the table when it is on the meta device, was cast or
        replaced from outside, or lives on another device; otherwise extends
        it, computing only the new rows. Not for use inside torch.compile.
        """
        dev = self.table.device if device is None else torch.device(device)
        if self.table.device != dev or (dev.type != "meta" and not self._fresh()):
            self._relocate(dev)
        if hi <= lo or (self.start <= lo and hi <= self.stop):
            return
        size = self.stop - self.start
        if not size:
            self._install(self._compute(lo, max(hi - lo, _MIN_GROWTH), dev), lo)
            return
        new_lo, new_hi = min(self.start, lo), self.stop
        if hi > self.stop:
            # at least double (amortised O(1) per decoded token), but never far past the need
            need = hi - new_lo
            new_hi = new_lo + max(need, _MIN_GROWTH, min(2 * size, need + _MAX_SLACK))
        below = self._compute(new_lo, self.start - new_lo, dev)
        above = self._compute(self.stop, new_hi - self.stop, dev)
        with torch.inference_mode(False):
            self._install(torch.cat([below, self.table, above]), new_lo)

    def reserve(self, stop: int, start: int = 0) -> None:
        """Compute the rows for positions ``start … stop-1`` now (before torch.compile)."""
        self.ensure(check_int(start, "start"), check_int(stop, "stop"))

    def reset(self, build: Builder | None = None) -> None:
        """Forget every row (and replace the builder): for modules whose table changes."""
        if build is not None:
            self.build = build
        self._install(self._compute(0, 0, self.table.device), 0)

    # -- reading (safe under torch.compile) -------------------------------------

    def rows(self, first: int, length: int) -> torch.Tensor:
        """Rows for positions ``first … first+length-1``: a view ``[length, *row_shape]``.

        The caller has made them available (:meth:`ensure` or :meth:`reserve`).
        """
        i = first - self.start
        # checks that become runtime asserts (not graph breaks) under torch.compile
        torch._check(i >= 0, lambda: "positions below the cached rows: call reserve() before torch.compile")
        torch._check(
            i + length <= self.table.shape[0],
            lambda: "positions beyond the cached rows: call reserve() before torch.compile",
        )
        return self.table[i : i + length]

    def take(self, positions: torch.Tensor) -> torch.Tensor:
        """Rows at integer positions ``[...]`` (already available): ``[..., *row_shape]``."""
        idx = positions.to(device=self.table.device, dtype=torch.long)
        if self.start:
            idx = idx - self.start
        flat = self.table.reshape(self.table.shape[0], -1)
        out = torch.nn.functional.embedding(idx, flat)
        return out if len(self.row_shape) == 1 else out.reshape(*idx.shape, *self.row_shape)

    # -- torch integration -----------------------------------------------------

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> TableCache:
        # fn casts and moves; only its device is honoured: the table stays float32 and exact
        try:
            device = fn(torch.empty(0, dtype=torch.float32, device=self.table.device)).device
        except NotImplementedError:  # .to(device) from meta: nothing to copy, we recompute
            device = fn(torch.empty(0, dtype=torch.float32)).device
        if device != self.table.device or not self._fresh():
            self._relocate(device)
        return self

    def _relocate(self, device: torch.device) -> None:
        """Put the same rows on ``device``: copied when ours and real, recomputed otherwise."""
        if self._fresh():
            self._install(self.table.to(device), self.start)  # an exact copy
        else:
            self._install(self._compute(self.start, self.stop - self.start, device), self.start)

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: Any, strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        drop_keys(state_dict, prefix, ("table",))  # saved by a version that persisted it
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def extra_repr(self) -> str:
        return f"positions={self.start}…{self.stop - 1}, row_shape={self.row_shape}, device={self.table.device}"


def drop_keys(state_dict: dict[str, Any], prefix: str, names: Iterable[str]) -> dict[str, Any]:
    """Remove ``prefix + name`` for each name (legacy buffers); returns what was removed.

    For ``_load_from_state_dict`` overrides: old checkpoints of the modules
    posenc replaces carry tables and frequencies (``pe``, ``inv_freq``,
    ``_float_tensor``…) that posenc recomputes exactly instead of loading.
    """
    return {n: state_dict.pop(prefix + n) for n in names if prefix + n in state_dict}


def position_bounds(positions: torch.Tensor, name: str = "positions") -> tuple[int, int]:
    """Validate a positions tensor and return ``(min, max + 1)`` as Python ints.

    Integer tensors, or floating tensors holding integers, with every
    ``|p| < 2**53``. One device sync; eager only.

    Raises:
        PosEncError: for bool or complex tensors, NaN, infinities,
            non-integers or ``|p| >= 2**53``, naming the first bad value.
    """
    if not isinstance(positions, torch.Tensor):
        raise PosEncError(f"{name} must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise PosEncError(f"{name} must hold integers, got dtype {positions.dtype}")
    if positions.numel() == 0:
        return 0, 0
    p = positions.detach()
    if p.is_floating_point():
        q = p.to(torch.float64)
        bad = ~torch.isfinite(q) | (q != torch.trunc(q)) | (q.abs() >= MAX_POSITION)
        lo_hi = torch.stack([bad.any().to(torch.float64), q.min(), q.max()]).tolist()
        if lo_hi[0]:
            value = q[bad][0].item()
            raise PosEncError(
                f"{name} must be finite integers with |p| < 2**53 (the table is indexed by "
                f"position), got {value!r}"
            )
        return int(lo_hi[1]), int(lo_hi[2]) + 1
    lo, hi = (int(v) for v in torch.stack([p.min(), p.max()]).tolist())
    worst = hi if abs(hi) >= abs(lo) else lo
    if abs(worst) >= 2**53:
        raise PosEncError(f"{name} must satisfy |p| < 2**53, got {worst}")
    return lo, hi + 1
