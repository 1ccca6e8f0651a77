"""The torch backend: torch tensors in and out, the rows NumPy's exact tables (built on the host, moved to x's device).

What :func:`posenc.torch.apply_rope` runs on (:data:`TORCH`). Its own rules:
x may be bfloat16 and ``[..., s, n_h, h_d]`` (``sequence_dim=-3``); positions
are ``[s]`` or ``[b, s]`` (``[(b,) s, n_axes]`` with sections), ``b`` x's batch.
Imported by :mod:`posenc.torch` only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from ..errors import PosEncError, check_dtype, check_positions
from ..rope.frequencies import RopeFrequencies
from ..rope.numpy_backend import NUMPY
from ..rope.spec import RopeConfig
from ..rope.tables import cos_sin_tables
from ..rope.xpos import XPos, xpos_cos_sin
from ..sinusoidal.plan import Plan
from ..support.memory import nbytes
from ..support.vocabulary import RopeLayout
from ._memory import check_device_size
from ._rotation import FLOATS, broadcast_rows, check_sequence_dim, rotate_pairs

__all__ = ["TORCH", "HostPositions", "TorchBackend"]


class TorchBackend:
    """:class:`~posenc.rope.backend.Backend` and :class:`~posenc.sinusoidal.backend.EncodingBackend` over torch
    tensors (any device; the rows from the host)."""

    name = "torch"

    def sequence_dim(self, value: Any) -> int:
        return check_sequence_dim(value)

    def float_input(self, x: Any, name: str, sequence_dim: int) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype not in FLOATS:
            raise PosEncError(f"{name} must be a float16/bfloat16/float32/float64 tensor, got {type(x).__name__}")
        if x.dim() < -sequence_dim:
            raise PosEncError(f"{name} must be [..., s, h_d] (sequence_dim {sequence_dim}), got shape {tuple(x.shape)}")
        return x

    def table_dtype(self, dtype: Any) -> np.dtype:
        return check_dtype(dtype)

    def check_tables(self, shape: tuple[int, ...], spec: RopeConfig, dtype: Any) -> None:
        NUMPY.check_tables(shape, spec, dtype)

    def check_output(self, x: torch.Tensor, shape: tuple[int, ...], spec: RopeConfig, xpos: XPos | None) -> None:
        # the host tables (NumPy's), then x rotated on its device with its pairs in the rotation dtype
        ct = self.rotation_dtype(x)
        NUMPY.check_tables(shape, spec, ct)
        work = 2 * nbytes(tuple(x.shape), ct)
        check_device_size(tuple(x.shape), x.dtype, "apply_rope output", x.device, work)

    def positions(self, value: Any) -> np.ndarray:
        if isinstance(value, torch.Tensor):
            p = value.detach().cpu()
            value = (p.to(torch.float64) if p.is_floating_point() else p).numpy()
        return check_positions(value)

    def check_positions_shape(self, pos: np.ndarray, x: torch.Tensor, spec: RopeConfig, sequence_dim: int) -> None:
        """Raise unless ``pos`` is ``[s]`` / ``[b, s]`` (``[(b,) s, n_axes]`` with sections) with a b that x has."""
        s, sec = x.shape[sequence_dim], spec.multi_axis
        if sec is None and (pos.ndim not in (1, 2) or pos.shape[-1] != s):
            raise PosEncError(f"positions must be [s] or [b, s] with s = {s}, got shape {pos.shape}")
        if sec is not None and (pos.ndim not in (2, 3) or pos.shape[-2:] != (s, sec.n_axes)):
            raise PosEncError(f"positions for sections {sec.shown} must be [s, {sec.n_axes}] or "
                              f"[b, s, {sec.n_axes}] with s = {s}, got shape {pos.shape}")
        batch_ndim = 2 if sec is None else 3
        if pos.ndim == batch_ndim and (x.dim() < 4 or pos.shape[0] not in (1, x.shape[-4])):
            raise PosEncError(
                f"batched positions {pos.shape} need x with a batch dimension b = {pos.shape[0]} before the heads "
                f"([b, n_h, s, h_d] or [b, s, n_h, h_d]), got x of shape {tuple(x.shape)}"
            )

    def frequencies(self, spec: RopeConfig, seq_len: int | None, pos: np.ndarray) -> RopeFrequencies:
        return NUMPY.frequencies(spec, seq_len, pos)

    def cos_sin(self, pos: np.ndarray, freqs: RopeFrequencies, dtype: Any) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = cos_sin_tables(pos, freqs, dtype)
        return _tensor(cos), _tensor(sin)

    def rotation_dtype(self, x: torch.Tensor) -> np.dtype:
        # float64 rows for float64 x (posenc.apply_rope's float64 math), float32 otherwise
        return np.dtype(np.float64) if x.dtype == torch.float64 else np.dtype(np.float32)

    def xpos_cos_sin(self, pos: np.ndarray, freqs: RopeFrequencies, xpos: XPos, role: str, seq_len: int | None,
                     x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # xPos's factors are judged against what q or k will be: bfloat16 as float32 (NumPy has no bfloat16)
        like = np.dtype(np.float32) if x.dtype == torch.bfloat16 else np.dtype(str(x.dtype).removeprefix("torch."))
        cos, sin = xpos_cos_sin(pos, freqs, xpos, role, seq_len, self.rotation_dtype(x), like)
        return _tensor(cos), _tensor(sin)

    def rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: RopeLayout, rotary_dim: int,
               sequence_dim: int) -> torch.Tensor:
        batched = cos.dim() == 3
        c = broadcast_rows(cos.to(x.device), x, sequence_dim, batched)
        s = broadcast_rows(sin.to(x.device), x, sequence_dim, batched)
        return rotate_pairs(x, c, s, layout, rotary_dim)


    # the sinusoid's primitives (posenc.sinusoidal.backend.EncodingBackend): NumPy's rows, built on the host

    def encoding_dtype(self, dtype: Any) -> torch.dtype:
        if not isinstance(dtype, torch.dtype) or dtype not in _HOST_DTYPES:  # a list or array is not hashed
            raise PosEncError(f"dtype must be torch.float16, bfloat16, float32 or float64, got {dtype!r}")
        return dtype

    def check_encoding(self, shape: tuple[int, ...], computed: int, d_model: int, origin: int, dtype: Any) -> None:
        NUMPY.check_encoding(shape, computed, d_model, origin, _HOST_DTYPES[dtype])

    def encoding_positions(self, value: Any) -> HostPositions:
        if not isinstance(value, torch.Tensor):
            return HostPositions(NUMPY.encoding_positions(value), None, ())
        if value.is_meta:
            return HostPositions(None, value.device, tuple(value.shape))
        p = value.detach().cpu()
        if p.dtype in (torch.float16, torch.bfloat16):
            p = p.to(torch.float32)  # exact
        return HostPositions(NUMPY.encoding_positions(p.numpy()), value.device, tuple(value.shape))

    def encoding_rows(self, positions: HostPositions, plan: Plan, dtype: Any) -> torch.Tensor:
        if positions.host is None:  # a meta tensor's: the shape alone
            return torch.empty((*positions.shape, plan.d_model), dtype=dtype, device="meta")
        out = _cast(torch.from_numpy(NUMPY.encoding_rows(positions.host, plan, _HOST_DTYPES[dtype])), dtype)
        device = positions.device
        return out if device is None or device.type == "cpu" else out.to(device)

    def table_rows(self, first: int, length: int, plan: Plan, dtype: Any) -> torch.Tensor:
        return _cast(torch.from_numpy(NUMPY.table_rows(first, length, plan, _HOST_DTYPES[dtype])), dtype)


class HostPositions(NamedTuple):
    """Positions read to the host (``host``, checked; None for a meta tensor's), and the device they came from."""

    host: np.ndarray | None
    device: torch.device | None
    shape: tuple[int, ...]


#: the host dtype rows are computed in, for each output dtype: bfloat16 from float64, rounded once by torch
_HOST_DTYPES = {
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.bfloat16: np.dtype(np.float64),
}


def _cast(rows: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return rows if rows.dtype == dtype else rows.to(dtype)


def _tensor(table: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(table))


#: the torch backend (no state: one is enough)
TORCH = TorchBackend()

