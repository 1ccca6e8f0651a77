"""Rotating queries and keys by their positions (NumPy): :func:`posenc.rope.functions.apply_rope` on NumPy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import functions
from .functions import check_broadcast, check_head_dim_of_x
from .numpy_backend import NUMPY, rotate
from .spec import RopeConfig, RopeSettings

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["apply_rope", "check_broadcast", "check_head_dim_of_x", "rotate"]


def apply_rope(
    x: Any,
    positions: Any,
    *,
    spec: RopeConfig | None = None,
    seq_len: int | None = None,
    xpos: Any = None,
    role: Literal["q", "k"] | None = None,
    **settings: Unpack[RopeSettings],
) -> np.ndarray:
    """Rotate queries or keys by their positions (and decay them, with xPos).

    Shapes: b batch, n_h heads, s sequence, h_d head_dim.

    The rotation is a spec: ``spec=`` a :class:`~posenc.RopeConfig` (from
    :func:`posenc.from_hf_config`, :func:`posenc.rope_preset` or by hand), or
    its settings as keywords, which build the same spec (the same bits).

    Args:
        x: float16/32/64 ``[..., s, h_d]``, e.g. ``[b, n_h, s, h_d]``.
        positions: ``[s]``, or any shape that broadcasts to ``x.shape[:-1]``
            (``[b, 1, s]`` for per-row positions of ``[b, n_h, s, h_d]``); with
            sections ``[..., n_axes]``, the leading shape broadcasting to
            ``x.shape[:-1]`` (``[s, 3]`` for Qwen2-VL's (t, h, w); HF's
            ``[3, b, s]`` moved to ``[b, 1, s, 3]`` for ``[b, n_h, s, h_d]``).
        spec: a :class:`~posenc.RopeConfig` holding base, scaling, layout,
            rotary_dim and the sections, built and checked once; its head_dim
            must be ``x.shape[-1]``. Leave the settings out beside it (each
            one passed is refused by name).
        seq_len: for DynamicNTK/LongRoPE (and xPos's centre); default
            max(positions) + 1, as HF.
        xpos: None, or a :class:`posenc.XPos`: pair i is also multiplied by
            ζ_i^(±(p − c)/scale_base), c = seq_len//2 with ``center``
            (``seq_len`` default max(positions) + 1: pass the same one for q
            and k). See :mod:`posenc.rope.xpos`.
        role: with xpos, ``"q"`` (factor ζ^(+…)) or ``"k"`` (ζ^(−…)).
        **settings: without a spec, its fields (:class:`~posenc.rope.spec.RopeSettings`):
            ``base``, ``scaling``, ``rotary_dim`` as :func:`rope_cos_sin`;
            ``layout`` ``"half"`` (HF, GPT-NeoX), ``"interleaved"`` (Meta,
            GPT-J) or ``"head_half"`` (pairs (i, i + h_d/2), i < rotary_dim/2:
            Gemma 4's proportional RoPE, :mod:`posenc.rope.scaling.proportional`);
            ``sections``, ``section_layout``, ``ladder``: multi-axis RoPE
            (M-RoPE, axial), as :func:`rope_cos_sin`. Left out: RopeConfig's
            defaults; an unknown name is refused.

    Returns:
        Same shape and dtype as x. The math is float64 for float64 input and
        float32 otherwise, on exact tables; channels past ``rotary_dim`` are
        copied bit for bit.

    Raises:
        PosEncError: for any bad argument, before any work.

    >>> q = np.array([[1.0, 0.0, 0.0, 0.0]])        # [s=1, h_d=4]
    >>> cfg = RopeConfig(4, base=100.0, layout="interleaved")
    >>> apply_rope(q, [2], spec=cfg).round(4).tolist()
    [[-0.4161, 0.9093, 0.0, 0.0]]
    >>> apply_rope(q, [2], base=100.0, layout="interleaved").round(4).tolist()  # the same spec, as keywords
    [[-0.4161, 0.9093, 0.0, 0.0]]
    """
    return functions.apply_rope(NUMPY, x, positions, spec=spec, seq_len=seq_len, xpos=xpos, role=role, **settings)
