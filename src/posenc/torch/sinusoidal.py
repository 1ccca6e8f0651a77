"""The sinusoidal encoding for PyTorch: a drop-in module and a functional form.

Both take their values from the NumPy core (:mod:`posenc.conventions`,
:mod:`posenc.exact`), so they equal :func:`posenc.encode` bit for bit,
whatever the model's dtype, device, autocast or default-dtype settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import MAX_POSITION, PosEncError, check_int, check_real
from ..sinusoidal.conventions import Convention, resolve
from ._cache import TableCache, compiling, drop_keys, position_bounds

__all__ = ["SinusoidalPositionalEncoding", "encode"]

# buffers that the modules this one replaces kept in their checkpoints: the
# PyTorch tutorial's `pe`, fairseq's `_float_tensor` / `weights`, HF Marian's
# `weight`, positional-encodings' `inv_freq`
_LEGACY_TABLES = ("pe", "weights", "weight")
_LEGACY_OTHER = ("_float_tensor", "inv_freq")
_LEGACY_ROWS = 1024  # rows of a legacy table compared with ours on load
_LEGACY_ATOL = 2e-3  # float32 tables of other frameworks are this close below _LEGACY_ROWS; conventions differ by ~1


@dataclass(frozen=True)
class _Rows:
    """The module's table builder: rows of ``convention`` at ``d_model`` (picklable).

    Rows come from the convention's ``table`` (the fast angle-addition
    path), which equals :func:`posenc.encode` bit for bit whatever the
    start, so a cache that grows in pieces, or is built shard by shard on
    several ranks, holds one value per position.
    """

    convention: Convention
    d_model: int

    def __call__(self, start: int, length: int) -> np.ndarray:
        return self.convention.table(length, self.d_model, start=start, dtype=np.float32)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the exact sinusoidal encoding to activations: ``x + PE``.

    Shapes: ``b`` batch, ``s`` sequence length, ``d`` = ``d_model``.

    Args:
        d_model: channels ``d``.
        base: b in ω_i = b^(-2i/d) (without a convention).
        layout: ``"interleaved"`` or ``"split"`` (without a convention).
        convention: a preset of :mod:`posenc.conventions` or its name
            (``"fairseq"``, ``"tensor2tensor"``, ``"hf-marian"``, ``"keras"``,
            ``"positional-encodings"``, ``"vaswani"``) to reproduce a
            framework's table; it carries its own base and layout.
        dropout: dropout probability applied to ``x + PE`` in training.
        max_len: rows computed at construction (positions 0 … max_len-1).
            More are computed on demand in eager mode; under ``torch.compile``
            call :meth:`reserve` first.

    The table is float32, exact to 1 ulp, stored as a non-persistent
    buffer: it is not in ``state_dict``, follows ``.to(device)`` but is
    never cast by ``.to(dtype)``, and is recomputed after meta-device
    construction (``to_empty``). For float32 ``x`` the forward is a slice
    (or gather) and one add; for float16 / bfloat16 ``x`` the sum is formed
    in float32 and rounded once to ``x.dtype``.

    >>> pe = SinusoidalPositionalEncoding(4)
    >>> [round(v, 5) for v in pe(torch.zeros(2, 4), offset=1000)[0].tolist()]   # seed, Ex 6
    [0.82688, 0.56238, -0.54402, -0.83907]
    >>> fs = SinusoidalPositionalEncoding(6, convention="fairseq")  # first token at angle 2
    >>> [round(v, 4) for v in fs(torch.zeros(1, 6))[0].tolist()]
    [0.9093, 0.02, 0.0002, -0.4161, 0.9998, 1.0]
    """

    def __init__(
        self,
        d_model: int,
        *,
        base: float = 10000.0,
        layout: str = "interleaved",
        convention: Any = None,
        dropout: float = 0.0,
        max_len: int = 0,
    ) -> None:
        super().__init__()
        conv = resolve(convention, base=base, layout=layout)
        self.d_model = conv.plan(d_model).d_model
        self.convention = conv
        p = check_real(dropout, "dropout")
        if not 0.0 <= p < 1.0:
            raise PosEncError(f"dropout must be in [0, 1), got {p}")
        self.dropout = p
        rows = check_int(max_len, "max_len", minimum=0)
        self.cache = TableCache(_Rows(conv, self.d_model), (self.d_model,), stop=rows)

    def reserve(self, max_len: int, start: int = 0) -> None:
        """Compute the rows for positions ``start … max_len-1`` now (do this before torch.compile)."""
        self.cache.reserve(max_len, start)

    def forward(
        self, x: torch.Tensor, *, positions: torch.Tensor | None = None, offset: int | torch.Tensor = 0
    ) -> torch.Tensor:
        """``x + PE(positions)``, in ``x.dtype`` on ``x.device``.

        Args:
            x: ``[b, s, d]`` or ``[s, d]`` activations.
            positions: optional integer positions ``[s]`` or ``[b, s]``
                (``[b, s]`` needs a 3-D ``x``): per-row positions for KV-cache
                decoding, left-padded batches (e.g. ``cumsum(mask) - 1``) and
                packed sequences. Default: ``offset … offset+s-1``.
            offset: the position of the first token when ``positions`` is
                None: an int, or an integer tensor ``[]`` or ``[b]`` (one
                offset per row; a tensor also keeps torch.compile from
                specialising on its value).

        Returns:
            ``x``'s shape and dtype.

        Raises:
            PosEncError: before any work, for a bad shape or dtype of ``x`` or
                ``positions``, NaN or non-integer positions, or ``|p| >= 2**53``
                (the value checks run in eager mode only; under torch.compile
                positions must lie in the reserved rows).
        """
        eager = not compiling()
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() not in (2, 3):
            what = f"{x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise PosEncError(f"x must be a floating tensor [b, s, d] or [s, d], got {what}")
        if x.shape[-1] != self.d_model:
            raise PosEncError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        s = x.shape[-2]
        if positions is not None and (isinstance(offset, torch.Tensor) or offset != 0):
            raise PosEncError(f"pass either positions or offset, not both (got offset={offset!r})")
        if positions is None and isinstance(offset, torch.Tensor):
            positions = self._offset_positions(x, offset)
        if positions is None:
            if eager:
                off = check_int(offset, "offset")
                if max(abs(off), abs(off + s)) >= MAX_POSITION:
                    raise PosEncError(f"positions offset … offset+s-1 must satisfy |p| < 2**53, got offset={off}")
                self.cache.ensure(off, off + s, x.device)
            pe = self.cache.rows(offset, s)  # type: ignore[arg-type]
        else:
            self._check_positions_shape(x, positions)
            if eager:
                lo, hi = position_bounds(positions)
                self.cache.ensure(lo, hi, x.device)
            pe = self.cache.take(positions)
        # float32 table: float32 x adds directly; float64 x promotes exactly; for float16 /
        # bfloat16 x the sum is formed in float32 and rounded once (as torch.compile's fused
        # kernels do), so eager and compiled results agree bit for bit
        out = x + pe
        if out.dtype != x.dtype:
            out = out.to(x.dtype)
        if self.dropout > 0.0 and self.training:
            out = torch.nn.functional.dropout(out, self.dropout, True)
        return out

    @staticmethod
    def _check_positions_shape(x: torch.Tensor, positions: Any) -> None:
        if not isinstance(positions, torch.Tensor):
            raise PosEncError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
        if positions.dtype == torch.bool or positions.is_complex():
            raise PosEncError(f"positions must hold integers, got dtype {positions.dtype}")
        s = x.shape[-2]
        ok = positions.shape == (s,) or (x.dim() == 3 and positions.shape in ((x.shape[0], s), (1, s)))
        if not ok:
            want = "[s]" if x.dim() == 2 else "[s] or [b, s]"
            raise PosEncError(
                f"positions must have shape {want} matching x {tuple(x.shape)}, got {tuple(positions.shape)}"
            )

    @staticmethod
    def _offset_positions(x: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        if offset.dtype == torch.bool or offset.is_complex() or offset.is_floating_point():
            raise PosEncError(f"a tensor offset must hold integers, got dtype {offset.dtype}")
        if offset.dim() == 1 and x.dim() == 3 and offset.shape[0] == x.shape[0]:
            offset = offset[:, None]
        elif offset.dim() != 0:
            raise PosEncError(
                f"a tensor offset must have shape [] or [b] = [{x.shape[0] if x.dim() == 3 else '-'}], "
                f"got {tuple(offset.shape)}"
            )
        return torch.arange(x.shape[-2], device=x.device) + offset.to(device=x.device, dtype=torch.long)

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, local_metadata: Any, strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:
        drop_keys(state_dict, prefix, _LEGACY_OTHER)
        for key, old in drop_keys(state_dict, prefix, _LEGACY_TABLES).items():
            self._check_legacy_table(prefix + key, old)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def _check_legacy_table(self, key: str, old: Any) -> None:
        """A table saved by the module this one replaces must be this convention's."""
        if not isinstance(old, torch.Tensor) or old.is_meta or not old.is_floating_point():
            return
        rows = old.detach().reshape(-1, old.shape[-1]) if old.dim() >= 2 else None
        if rows is None or rows.shape[-1] != self.d_model or (old.dim() == 3 and 1 not in old.shape[:2]):
            raise PosEncError(
                f"checkpoint key {key!r} has shape {tuple(old.shape)}, not a [positions, {self.d_model}] table"
            )
        n = min(int(rows.shape[0]), _LEGACY_ROWS)
        origin = self.convention.plan(self.d_model).origin
        # legacy row r holds angle r, i.e. token position r - origin
        ours = torch.from_numpy(_Rows(self.convention, self.d_model)(-origin, n))
        diff = float((rows[:n].to("cpu", torch.float32) - ours).abs().max()) if n else 0.0
        if not diff <= _LEGACY_ATOL:
            raise PosEncError(
                f"checkpoint key {key!r} holds a sinusoidal table that differs from "
                f"{self.convention!r} by up to {diff:.3g}; choose the convention the checkpoint "
                f"was trained with (posenc.conventions.NAMES)"
            )

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, convention={self.convention!r}, dropout={self.dropout}"


_TORCH_TO_NUMPY = {
    torch.float16: np.float16,
    torch.float32: np.float32,
    torch.float64: np.float64,
    torch.bfloat16: np.float64,  # computed in float64, rounded once by torch
}


def encode(
    positions: Any,
    d_model: int,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    convention: Any = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The encoding of each position, on the positions' device: ``[..., d_model]``.

    Equal to :func:`posenc.encode` bit for bit (computed by it on the CPU);
    non-integer positions are fine here.

    Args:
        positions: a tensor (any real dtype, any device) or array-like ``[...]``.
        d_model, base, layout, convention: as in :func:`posenc.encode`.
        dtype: torch.float16, bfloat16, float32 or float64.

    >>> encode(torch.tensor([0, 1000]), 4, dtype=torch.float64)[1].round(decimals=5).tolist()
    [0.82688, 0.56238, -0.54402, -0.83907]
    """
    conv = resolve(convention, base=base, layout=layout)
    if dtype not in _TORCH_TO_NUMPY:
        raise PosEncError(f"dtype must be torch.float16, bfloat16, float32 or float64, got {dtype!r}")
    device = None
    if isinstance(positions, torch.Tensor):
        device = positions.device
        if positions.is_meta:
            d = conv.plan(d_model).d_model
            return torch.empty((*positions.shape, d), dtype=dtype, device="meta")
        p = positions.detach().cpu()
        if p.dtype in (torch.float16, torch.bfloat16):
            p = p.to(torch.float32)  # exact
        positions = p.numpy()
    out = torch.from_numpy(conv.encode(positions, d_model, dtype=_TORCH_TO_NUMPY[dtype]))
    if out.dtype != dtype:
        out = out.to(dtype)
    return out if device is None or device.type == "cpu" else out.to(device)
