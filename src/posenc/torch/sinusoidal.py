"""The sinusoidal encoding for PyTorch: a drop-in module and a functional form.

Both take their values from the NumPy core (:mod:`posenc.conventions`,
:mod:`posenc.exact`), so they equal :func:`posenc.encode` bit for bit,
whatever the model's dtype, device, autocast or default-dtype settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError, check_int, check_real
from ..sinusoidal.conventions import AnyConvention, Convention, SinusoidSettings, resolve
from ..sinusoidal.functions import encode_with, table_with
from ..support.compile import host_only
from ._cache import DEFAULT_ROWS, TableCache, drop_keys
from .backend import TORCH

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["SinusoidalPositionalEncoding", "encode", "table"]

# buffers that the modules this one replaces kept in their checkpoints: the
# PyTorch tutorial's `pe`, fairseq's `_float_tensor` / `weights`, HF Marian's
# `weight`, positional-encodings' `inv_freq`
_LEGACY_TABLES = ("pe", "weights", "weight")
_LEGACY_OTHER = ("_float_tensor", "inv_freq")
_LEGACY_ROWS = 1024  # rows of a legacy table compared with ours on load
_LEGACY_ATOL = 2e-3  # float32 tables of other frameworks are this close below _LEGACY_ROWS; conventions differ by ~1


@dataclass(frozen=True)
class _Rows:
    """The module's rows: ``convention`` at ``d_model`` (a picklable :class:`~posenc.torch._cache.RowBuilder`).

    Consecutive rows come from the convention's ``table`` (the fast
    angle-addition path), scattered ones from its ``encode`` (the exact
    per-position path); the two agree bit for bit whatever the start, so a
    cache that grows in pieces, or is built shard by shard on several ranks,
    holds one value per position.
    """

    convention: Convention
    d_model: int

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return self.convention.table(length, self.d_model, start=start, dtype=dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return self.convention.encode(positions, self.d_model, dtype=dtype)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the exact sinusoidal encoding to activations: ``x + PE``.

    Shapes: ``b`` batch, ``s`` sequence length, ``d`` = ``d_model``.

    Args:
        d_model: channels ``d``.
        convention: a preset of :mod:`posenc.conventions` or its name
            (``"fairseq"``, ``"tensor2tensor"``, ``"hf-marian"``, ``"keras"``,
            ``"positional-encodings"``, ``"vaswani"``) to reproduce a
            framework's table; it carries its own base and layout.
        dropout: dropout probability applied to ``x + PE`` in training.
        max_len: rows computed at construction (positions 0 … max_len-1;
            default 4096, see :data:`~posenc.torch._cache.DEFAULT_ROWS`).
            More are computed on demand, also under ``torch.compile`` when
            it may break the graph; under ``fullgraph=True`` positions must
            lie in the rows held (``max_len`` or :meth:`reserve`).
        **settings: without a convention (:class:`~posenc.sinusoidal.conventions.SinusoidSettings`):
            ``base``, b in ω_i = b^(-2i/d) (10000); ``layout``, ``"interleaved"`` or ``"split"``.

    The table is float32, exact to 1 ulp, stored as a non-persistent
    buffer: it is not in ``state_dict``, follows ``.to(device)`` but is
    never cast by ``.to(dtype)``, and is recomputed after meta-device
    construction (``to_empty``). For float32 ``x`` the forward is a slice
    (or gather) and one add; for float16 / bfloat16 ``x`` the sum is formed
    in float32 and rounded once to ``x.dtype``; float64 ``x`` gets float64
    rows (:func:`posenc.encode` in float64). Safe to call from many threads.

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
        convention: AnyConvention = None,
        dropout: float = 0.0,
        max_len: int = DEFAULT_ROWS,
        **settings: Unpack[SinusoidSettings],
    ) -> None:
        super().__init__()
        conv = resolve(convention, "SinusoidalPositionalEncoding", **settings)
        self.d_model = conv.plan(d_model).d_model
        self.convention = conv
        p = check_real(dropout, "dropout")
        if not 0.0 <= p < 1.0:
            raise PosEncError(f"dropout must be in [0, 1), got {p}")
        self.dropout = p
        rows = check_int(max_len, "max_len", minimum=0)
        self.cache = TableCache(_Rows(conv, self.d_model), (self.d_model,), stop=rows)

    def reserve(self, max_len: int, start: int = 0, *, dtype: torch.dtype = torch.float32) -> None:
        """Hold the rows for positions ``start … max_len-1`` now (before ``torch.compile(fullgraph=True)``)."""
        self.cache.reserve(max_len, start, dtype=dtype)

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
                None: an int (NumPy integers too), or an integer tensor ``[]``
                or ``[b]`` (one offset per row; a tensor also keeps
                torch.compile from specialising on its value).

        Returns:
            ``x``'s shape and dtype: a new tensor (never a view of the table).

        Raises:
            PosEncError: before any work, for a bad shape or dtype of ``x``,
                ``positions`` or ``offset`` (naming both shapes), NaN or
                non-integer positions, or ``|p| >= 2**53`` (the value checks
                run in eager mode only; under torch.compile tensor positions
                must lie in the rows held).
        """
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() not in (2, 3):
            what = f"{x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise PosEncError(f"x must be a floating tensor [b, s, d] or [s, d], got {what}")
        if x.shape[-1] != self.d_model:
            raise PosEncError(f"x must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")
        pe = self.cache.lookup(
            x.shape[-2], positions=positions, offset=offset, batch=x.shape[0] if x.dim() == 3 else None,
            device=x.device, dtype=torch.float64 if x.dtype == torch.float64 else torch.float32,
        )
        # float32 table: float32 x adds directly; for float16 / bfloat16 x the sum is formed in
        # float32 and rounded once (as torch.compile's fused kernels do), so eager and compiled
        # results agree bit for bit; float64 x adds the float64 rows
        out = x + pe
        if out.dtype != x.dtype:
            out = out.to(x.dtype)
        if self.dropout > 0.0 and self.training:
            out = torch.nn.functional.dropout(out, self.dropout, True)
        return out

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
        ours = torch.from_numpy(_Rows(self.convention, self.d_model).rows(-origin, n, np.dtype(np.float32)))
        diff = float((rows[:n].to("cpu", torch.float32) - ours).abs().max()) if n else 0.0
        if not diff <= _LEGACY_ATOL:
            raise PosEncError(
                f"checkpoint key {key!r} holds a sinusoidal table that differs from "
                f"{self.convention!r} by up to {diff:.3g}; choose the convention the checkpoint "
                f"was trained with (posenc.conventions.NAMES)"
            )

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, convention={self.convention!r}, dropout={self.dropout}"


@host_only(
    "posenc.torch.encode computes in NumPy on the host at every call, which torch.compile cannot trace: "
    "inside a compiled model use posenc.torch.SinusoidalPositionalEncoding (cached rows, one graph), "
    "or compile with fullgraph=False")
def encode(
    positions: Any,
    d_model: int,
    *,
    convention: AnyConvention = None,
    dtype: torch.dtype = torch.float32,
    **settings: Unpack[SinusoidSettings],
) -> torch.Tensor:
    """The encoding of each position, on the positions' device: ``[..., d_model]``.

    Equal to :func:`posenc.encode` bit for bit (computed by it on the CPU);
    non-integer positions are fine here.

    Args:
        positions: a tensor (any real dtype, any device) or array-like ``[...]``.
        d_model, convention, settings: as in :func:`posenc.encode`.
        dtype: torch.float16, bfloat16, float32 or float64.

    >>> encode(torch.tensor([0, 1000]), 4, dtype=torch.float64)[1].round(decimals=5).tolist()
    [0.82688, 0.56238, -0.54402, -0.83907]
    """
    return encode_with(TORCH, resolve(convention, "posenc.torch.encode", **settings), positions, d_model, dtype)


@host_only(
    "posenc.torch.table computes in NumPy on the host, which torch.compile cannot trace: call it before the "
    "compiled region, use posenc.torch.SinusoidalPositionalEncoding (cached rows, one graph), "
    "or compile with fullgraph=False")
def table(
    length: int,
    d_model: int,
    *,
    start: int = 0,
    dtype: torch.dtype = torch.float32,
    convention: AnyConvention = None,
    **settings: Unpack[SinusoidSettings],
) -> torch.Tensor:
    """Rows for positions ``start … start+length-1``, ``[length, d_model]``, a CPU tensor: :func:`posenc.table`'s bits.

    Args:
        length, d_model, start, convention, settings: as in :func:`posenc.table`.
        dtype: torch.float16, bfloat16, float32 or float64.

    >>> table(2, 4, start=1000, dtype=torch.float64)[0].round(decimals=5).tolist()
    [0.82688, 0.56238, -0.54402, -0.83907]
    """
    conv = resolve(convention, "posenc.torch.table", **settings)
    return table_with(TORCH, conv, length, d_model, start, dtype)
