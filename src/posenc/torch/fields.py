"""Neural-field encodings for PyTorch: :class:`NeRFEncoding` and :class:`FourierFeatures`, exact and differentiable.

Values come from posenc's exact angle on x's device (:mod:`posenc.torch._exact`),
equal to :func:`posenc.nerf_encoding` / :func:`posenc.fourier_features`; the
gradient with respect to x is the derivative of the formula (ω·cos, −ω·sin),
since fields are optimised through their encodings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError, check_angle, check_positions, shape_text, show_value
from ..exact.dot import dot2_turns
from ..fields.conventions import get
from ..fields.encoding import _matrix, arrange, two_pi
from ._exact import LadderBuffers, exact_sincos, turns_core

__all__ = ["FourierFeatures", "NeRFEncoding"]


def _check_cpu(x: torch.Tensor, fastest: float, what: str) -> None:
    """The NumPy API's checks on a CPU tensor in eager mode (on a device they would wait for it)."""
    if x.device.type != "cpu" or torch.compiler.is_compiling():
        return
    arr = check_positions(x.detach().to(torch.float64).numpy(), "x")
    if arr.size and fastest:
        check_angle(float(np.max(np.abs(arr))), fastest, what)


class NeRFEncoding(nn.Module):
    """The frequency encoding of a neural field: ``[..., d] -> [..., 2·L·d (+ d)]`` in x's dtype.

    Args:
        n_freqs: bands L.
        convention: ``"nerf"``, ``"nerfstudio"``, ``"tcnn"`` or a
            :mod:`posenc.fields` preset (see :func:`posenc.nerf_encoding`).
        include_input: add x itself; None: the preset's default.

    >>> enc = NeRFEncoding(4)
    >>> x = torch.tensor([[0.1, 0.2, 0.3]], requires_grad=True)
    >>> y = enc(x)
    >>> y.shape, enc.out_dim(3)
    (torch.Size([1, 27]), 27)
    >>> y.sum().backward(); x.grad.shape
    torch.Size([1, 3])
    """

    def __init__(self, n_freqs: int, *, convention: Any = "nerf", include_input: bool | None = None) -> None:
        super().__init__()
        self.plan = get(convention).plan(n_freqs)
        keep = self.plan.include_input if include_input is None else include_input
        if not isinstance(keep, (bool, np.bool_)):
            raise PosEncError(f"include_input must be True, False or None, got {show_value(include_input)}")
        self.include_input = bool(keep)
        self.angles = LadderBuffers(self.plan.ladder)
        self._fastest = self.plan.ladder.fastest  # a plain float: compile cannot enter cached_property's lock

    def out_dim(self, in_dim: int) -> int:
        """Output channels for ``in_dim`` coordinates."""
        return in_dim * (2 * len(self.plan.ladder) + int(self.include_input))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_cpu(x, self._fastest, "x")
        m, d, n = x.shape[:-1].numel(), x.shape[-1], self.angles.size
        p = x.reshape(-1).to(torch.float64)
        s, c = exact_sincos(p, self.angles)
        enc = arrange(self.plan, s.reshape(m, d, n), c.reshape(m, d, n), x.dtype)
        if self.include_input:
            raw = x.reshape(m, d)
            enc = torch.cat([raw, enc] if self.plan.input_at == "first" else [enc, raw], dim=-1)
        return enc.reshape(*x.shape[:-1], enc.shape[-1])


class FourierFeatures(nn.Module):
    """Tancik et al.'s ``[cos(2π B v) | sin(2π B v)]`` for a fixed ``b`` = B ``[m, d]``: ``[..., d] -> [..., 2m]``.

    B is a float64 buffer (saved in the ``state_dict``, as nerfstudio's
    ``b_matrix``); a dtype cast of the model leaves it float64, so the
    features never change with the model's precision.

    >>> ff = FourierFeatures(torch.eye(2))
    >>> ff(torch.tensor([[1 / 12, 1 / 6]], dtype=torch.float64)).round(decimals=4).tolist()
    [[0.866, 0.5, 0.5, 0.866]]
    """

    B: torch.Tensor

    def __init__(self, b: Any) -> None:
        super().__init__()
        arr = b.detach().cpu().to(torch.float64).numpy() if isinstance(b, torch.Tensor) else b
        shape = np.shape(arr)
        if len(shape) != 2 or shape[1] < 1:  # d = 0: no coordinate to encode, as posenc.fourier_features
            raise PosEncError(f"B must be a matrix [m, d] with m >= 1 and d >= 1, got shape {shape_text(shape)}")
        mat = _matrix(arr, shape[1])
        self.register_buffer("B", torch.from_numpy(mat.copy()))
        self.angles = LadderBuffers(two_pi())

    def _apply(self, fn: Any, recurse: bool = True) -> FourierFeatures:
        b = self.B
        super()._apply(fn, recurse)
        if self.B.dtype != torch.float64:  # a dtype cast: keep B exact, follow only the device
            self.B = b.to(device=self.B.device)
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m, d = self.B.shape
        x = x.reshape(1) if x.ndim == 0 else x  # a scalar: one point of one coordinate, as the NumPy function
        if x.shape[-1] != d:
            raise PosEncError(f"x's last axis must hold B's d = {d} coordinates, got shape {tuple(x.shape)}")
        _check_cpu(x, 0.0, "x")
        x64 = x.reshape(-1, 1, d).to(torch.float64)
        plain = (x64 * self.B).sum(-1)  # the differentiable B·x; its value comes from the double-double below
        hi, lo = dot2_turns(self.B.unsqueeze(0), x64.detach(), torch.round)  # B·x mod 1, as the NumPy function
        q, f, g = turns_core(hi.reshape(-1), lo.reshape(-1))  # its quarter turns and the rest, exactly
        s, c = exact_sincos(plain.reshape(-1), self.angles, f, g, quarter=q)
        out = torch.cat([c.reshape(-1, m), s.reshape(-1, m)], dim=-1) + 0.0  # an exact zero is +0
        return out.to(x.dtype).reshape(*x.shape[:-1], 2 * m)
