"""Diffusion timesteps for PyTorch: :class:`Timesteps`, a drop-in for diffusers' module, exact on any device.

The angle is computed on t's device by posenc's exact arithmetic
(:mod:`posenc.torch._exact`, a torch twin of :mod:`posenc.exact`), so fractional
and continuous t work, nothing travels to the host, nothing waits for the
device, and ``torch.compile(fullgraph=True)`` traces it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError, check_angle, check_channels, check_positions
from ..timesteps.conventions import Diffusers, Flux, TimestepConvention, get, reference_times, round_to
from ._exact import LadderBuffers, check_input, exact_sincos, host_values, reference_times_twin

__all__ = ["Timesteps"]


class Timesteps(nn.Module):
    """diffusers' ``Timesteps`` with the exact angle: ``[N] -> [N, num_channels]`` float32.

    The arguments are diffusers' (``src/diffusers/models/embeddings.py``,
    ``Timesteps``), so ``posenc.torch.Timesteps(320, True, 0)`` replaces
    ``diffusers.models.embeddings.Timesteps(320, True, 0)`` in a UNet; the
    values are :func:`posenc.timestep_embedding`'s (within 1 float32 ulp of
    the formula) where diffusers' own are off by up to 5e-5 (t <= 1000) or
    2.5e-2 (``scale=1000``).

    Args:
        num_channels: output channels (odd: the last is zero).
        flip_sin_to_cos: True for ``[cos | sin]``.
        downscale_freq_shift: the exponent divides by ``half - shift``.
        scale: multiplies the angle.
        max_period: the slowest period's base (diffusers' default 10000).

    Input: t of any shape ``[...]`` and dtype (integer steps, float32, bf16…),
    on any device with float64 (not MPS). Output ``[..., num_channels]``,
    float32 as diffusers', on t's device. On CPU tensors in eager mode t is
    checked (finite, inside the exact range: else :class:`~posenc.PosEncError`);
    on an accelerator, or under compile, checking would wait for the device,
    so it is the caller's promise there.

    >>> m = Timesteps(4, flip_sin_to_cos=False, downscale_freq_shift=1)
    >>> m(torch.tensor([0, 1])).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.8414709568023682, 9.999999747378752e-05, 0.5403022766113281, 1.0]]
    >>> dict(m.state_dict())
    {}
    """

    def __init__(self, num_channels: int, flip_sin_to_cos: bool, downscale_freq_shift: float, scale: float = 1,
                 *, max_period: float = 10000) -> None:
        super().__init__()
        check_channels(num_channels, "num_channels")
        preset = Diffusers(flip_sin_to_cos, downscale_freq_shift, scale, max_period)
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift
        self.scale = scale
        self._setup(preset)

    @classmethod
    def from_convention(cls, num_channels: int, convention: Any) -> Timesteps:
        """The module for any :mod:`posenc.timesteps` preset or name (``"flux"``, ``"guided-diffusion"``…).

        >>> Timesteps.from_convention(6, "flux")(torch.tensor([0.5])).shape
        torch.Size([1, 6])
        """
        preset = get(convention)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.num_channels = num_channels
        self._setup(preset)
        return self

    def _setup(self, preset: TimestepConvention) -> None:
        plan = preset.plan(self.num_channels)
        self.num_channels = plan.dim
        self.preset = preset
        self.cos_first = plan.cos_first
        self.angles = LadderBuffers(plan.ladder)
        self._fastest = plan.ladder.fastest
        self._round = preset.time_dtype if isinstance(preset, Flux) else None
        self._factor = preset.time_factor if isinstance(preset, Flux) else 1.0
        try:  # the scalar torch's float32 multiply takes (an overflow is named on use, on CPU)
            self._factor32 = float(round_to(np.array([self._factor]), "float32")[0])
        except PosEncError:
            self._factor32 = float("inf")

    def _format(self, t: torch.Tensor) -> str:
        """The dtype name Flux's ``time_factor · t`` is formed in, for this t."""
        preset = self.preset
        return preset.time_format(str(t.dtype).removeprefix("torch.")) if isinstance(preset, Flux) else "float64"

    def _times(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the float64 times the ladder multiplies, detached; the same carrying t's gradient).

        With Flux's rounding the value is the reference's ``time_factor · t``
        (:func:`~posenc.timesteps.conventions.reference_times`), its
        derivative the factor's: on a CPU tensor in eager mode from the
        NumPy function (which checks t and names an overflow), elsewhere
        from its twin of integer and exact float64 operations
        (:func:`~posenc.torch._exact.round_twin`), which a compiler cannot
        fold away. Without it, t itself, checked on a CPU tensor.
        """
        t64 = t.to(torch.float64)
        eager_cpu = t.device.type == "cpu" and not torch.compiler.is_compiling()
        if eager_cpu:
            arr = check_positions(host_values(t), "t")
        if self._round is None:
            value = t64.detach()
            grad = t64
        else:
            name = self._format(t)
            if eager_cpu:
                vals = reference_times(arr.reshape(-1), name, self._factor)
                value = torch.from_numpy(vals).reshape(t.shape)
            else:
                value = reference_times_twin(t64.detach(), name, self._factor, self._factor32)
            grad = value + self._factor * (t64 - t64.detach()) if t64.requires_grad else value
        if eager_cpu and value.numel():
            check_angle(float(value.abs().max()), self._fastest, "t")
        return value, grad

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        t = check_input(timesteps, "t", self.angles.words()[0].device, "posenc.timestep_embedding")
        value, grad = self._times(t)
        s, c = exact_sincos(grad, self.angles, value)
        parts = [c.float(), s.float()] if self.cos_first else [s.float(), c.float()]
        if self.num_channels % 2:
            parts.append(torch.zeros((*t.shape, 1), dtype=torch.float32, device=t.device))
        return torch.cat(parts, dim=-1)

    def extra_repr(self) -> str:
        return f"num_channels={self.num_channels}, preset={self.preset!r}"

