"""The rows of :class:`~posenc.torch.RotaryEmbedding` at real-valued positions, computed exactly on the device.

A table holds integer positions only. EVA-02's coordinates (``i·ref/feat``,
:func:`posenc.eva02_coords`), DINOv3's (2π·(2·(i + 0.5)/H − 1),
:func:`posenc.dinov3_coords`) and CogVideoX's linspace grid are fractional,
so a floating-point ``positions`` tensor is not looked up: its cos/sin are
sin/cos of p·ω_i computed by posenc's exact angle arithmetic as torch
operations (:mod:`posenc.torch._exact`; on a CPU tensor in eager mode the
NumPy core itself), on the positions' device, with no table and no host
round trip. The values are :func:`posenc.rope_cos_sin`'s bit for bit: each
float64 result (times the attention factor, as there) rounded once to the
row dtype. Integer-valued floats give the table's bits too (one value per
position, whichever path computes it).

With sections (multi-axis RoPE) ``positions`` is ``[s, n_axes]`` or
``[b, s, n_axes]``: every axis's sin/cos over the whole ladder, and pair i
taken from the axis it turns with, as :func:`posenc.rope_cos_sin` does.
"""

from __future__ import annotations

import torch

from ..errors import MAX_POSITION, PosEncError
from ..exact.fixed import FLOAT_LIMIT
from ..rope.frequencies import RopeFrequencies
from ._cache import compiling
from ._exact import LadderBuffers, host_eager, tracing

__all__ = ["check_real_positions", "real_rows"]


def check_real_positions(positions: torch.Tensor, s: int, batch: int | None, n_axes: int | None) -> None:
    """Raise unless ``positions`` is ``[s]`` / ``[b, s]`` (``[(b,) s, n_axes]`` with sections), finite, |p| < 2**53.

    The shape always; the values in eager mode only (one device sync), as the table path.
    """
    tail = (s,) if n_axes is None else (s, n_axes)
    shape = tuple(positions.shape)
    one = "[s]" if n_axes is None else f"[s, {n_axes}]"
    two = "[b, s]" if n_axes is None else f"[b, s, {n_axes}]"
    if shape[-len(tail):] != tail or len(shape) not in (len(tail), len(tail) + 1) or (
            len(shape) > len(tail) and (batch is None or shape[0] not in (1, batch))):
        want = f"{one} with s = {s}" + ("" if batch is None else f", or {two} with b = {batch}")
        raise PosEncError(f"real-valued positions must be {want} (b from q), got {list(shape)}")
    if tracing() or positions.numel() == 0 or positions.is_meta or torch._subclasses.fake_tensor.is_fake(positions):
        return
    p = positions.detach()  # compared in its own dtype: 2**53 is a float32 (bfloat16) value, float16 never gets there
    bad = ~torch.isfinite(p) | (p.abs() >= MAX_POSITION)
    if bool(bad.any()):
        raise PosEncError(f"positions must be finite with |p| < 2**53, got {p[bad][0].item()!r}")


def _fixed(positions: torch.Tensor, angles: LadderBuffers, dtype: torch.dtype) -> bool:
    """The 32-bit path: float32 (float16, bfloat16) positions, rows not float64, off the host.

    An eager device tensor takes it only where every |p| < 2**31 (the values
    are checked there anyway); traced, a larger one fails the graph's assert
    (:func:`posenc.triton.positions.check_range`).
    """
    if dtype == torch.float64 or positions.dtype == torch.float64 or not angles.has_fixed or host_eager(positions):
        return False
    if compiling() or positions.numel() == 0 or positions.is_meta or torch._subclasses.fake_tensor.is_fake(positions):
        return True
    return tracing() or bool((positions.detach().abs() < FLOAT_LIMIT).all())


def real_rows(
    positions: torch.Tensor, freqs: RopeFrequencies, angles: LadderBuffers, pair_axes: torch.Tensor | None,
    device: torch.device, dtype: torch.dtype,
) -> torch.Tensor:
    """``[(b,) s, 2, r/2]``: (cos, sin) at validated floating ``positions``, times the attention factor."""
    home = angles.home  # where the ladder's words are: the module's device
    if _fixed(positions, angles, dtype):
        axes = None if pair_axes is None else torch.as_tensor(pair_axes, device=home)
        s32, c32 = angles.sincos32(positions.detach().to(home), freqs.attention_factor, axes, dtype=dtype)
        return torch.stack([c32, s32], dim=-2).to(device)
    p = positions.detach().to(device=home, dtype=torch.float64)
    s, c = angles.sincos(p)  # [..., n] (1-D) or [..., n_axes, n] (sections)
    if pair_axes is not None:  # sections: pair i from the row of its axis
        axes = torch.as_tensor(pair_axes, device=home)
        pick = axes.view(*([1] * (s.dim() - 1)), -1).expand(*s.shape[:-2], 1, -1)
        s, c = torch.gather(s, -2, pick).squeeze(-2), torch.gather(c, -2, pick).squeeze(-2)
    af = freqs.attention_factor
    if af != 1.0:  # the float64 product, rounded once, as cos_sin_tables
        s, c = s * af, c * af
    return torch.stack([c.to(dtype), s.to(dtype)], dim=-2).to(device)
