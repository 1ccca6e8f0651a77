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

from ..errors import MAX_POSITION, PosEncError, check_angle, check_channels, check_positions
from ..exact.angles import fill_halves, fill_sincos, prefer_compiled
from ..support.memory import shape_of
from ..timesteps.conventions import Diffusers, Flux, TimestepConvention, TimestepPlan, get, reference_times, round_to
from ..triton.positions import check_values
from ._exact import (
    LadderBuffers,
    check_input,
    exact_sincos,
    exact_sincos32,
    host_eager,
    host_values,
    reference_times_twin,
)
from ._fixed import round_once, rows_dtype_ok
from ._inputs import as_tensor, check_float
from ._memory import check_device_size

#: (significand bits, smallest normal exponent, largest finite value) of the roundings done in float32
_ROUNDINGS = {"float32": (24, -126, float(np.finfo(np.float32).max)), "float16": (11, -14, 65504.0),
              "bfloat16": (8, -126, float.fromhex("0x1.fep127"))}


def round_float(x: torch.Tensor, name: str) -> torch.Tensor:
    """float32 ``x`` rounded once to nearest-even in ``name`` (float32, float16, bfloat16), as float32; overflow: NaN.

    :func:`posenc.jax.timesteps.round_float` on torch: the quantum q is a
    power of two built from x's bits, so x/q, its round and the product are
    exact in float32 and no dtype cast is there for a compiler to drop.
    """
    bits, emin, biggest = _ROUNDINGS[name]
    if name == "float32":
        return x
    b = x.view(torch.int32)
    e = torch.clamp(((b >> 23) & 0xFF) - 127, min=emin)
    q = ((e - (bits - 1) + 127) << 23).view(torch.float32)  # 2**(e − bits + 1), a normal float32
    out = torch.round(x / q) * q  # half to even
    return torch.where(torch.abs(out) <= biggest, out, float("nan"))

__all__ = ["TORCH_TIMESTEPS", "HostRows", "Timesteps", "TorchTimesteps"]

#: the dtypes the host path reads through NumPy as they are (no copy by torch); the others, as float64 or int64
_HOST_DIRECT = frozenset({torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16,
                          torch.int8, torch.uint8})


class HostRows:
    """The embedding of a preset's plan on the host, for CPU tensors in eager mode: no tensor held, nothing cached.

    What :class:`Timesteps` computes for a CPU tensor in eager mode without a
    gradient, and what :func:`posenc.torch.timestep_embedding` computes there
    without building a module (its ladder buffers are for the device paths):
    the plan's exact rows written by the NumPy core (numba when installed).
    Its fields are set once, from the preset and its plan; ``jit`` (whether
    numba is loaded) is asked on the first call, by any thread alike.

    >>> from posenc.timesteps import Diffusers
    >>> HostRows(Diffusers(), Diffusers().plan(4)).embed(torch.tensor([0, 1]), torch.float32).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.8414709568023682, 9.999999747378752e-05, 0.5403022766113281, 1.0]]
    """

    def __init__(self, preset: TimestepConvention, plan: TimestepPlan) -> None:
        self.preset = preset
        self.dim, self.cos_first = plan.dim, plan.cos_first
        self.ladder, self.size, self.fastest = plan.ladder, len(plan.ladder), plan.ladder.fastest
        self.jit: bool | None = None  # numba asked for on the first call
        self.round = preset.time_dtype if isinstance(preset, Flux) else None
        self.factor = preset.time_factor if isinstance(preset, Flux) else 1.0
        self.factor32 = 1.0  # the scalar torch's float32 multiply takes (read with a rounding only)
        if self.round is not None:
            try:  # an overflow is named on use, on CPU
                self.factor32 = float(round_to(np.array([self.factor]), "float32")[0])
            except PosEncError:
                self.factor32 = float("inf")

    def format(self, t: torch.Tensor) -> str:
        """The dtype name Flux's ``time_factor · t`` is formed in, for this t."""
        preset = self.preset
        return preset.time_format(str(t.dtype).removeprefix("torch.")) if isinstance(preset, Flux) else "float64"

    def embed(self, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The embedding of a checked CPU tensor (eager, no gradient) in ``dtype``, each value rounded once."""
        if self.round is None and dtype == torch.float32:  # the one-pass path writes float32
            out = self.plain(t)
            if out is not None:
                return out
        return self.render(self.times(t), dtype)

    def times(self, t: torch.Tensor) -> np.ndarray:
        """the module's times on a CPU tensor in eager mode, checked, as a float64 array shaped as t.

        The same checks and values, read once through NumPy (on a [64] t the
        torch conversions and reductions were a fifth of the call).
        """
        arr = check_positions(host_values(t), "t")
        if self.round is not None:
            arr = reference_times(arr.reshape(-1), self.format(t), self.factor).reshape(arr.shape)
        if arr.size:
            check_angle(float(np.max(np.abs(arr))), self.fastest, "t")
        return arr

    def render(self, value: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The embedding of checked float64 times on the host: the NumPy core writes float32 sin/cos directly.

        Each channel is rounded once from the float64 value, as ``.float()``
        of the float64 rows is (the same bits); numba serves it when
        installed (loaded on the first call: a module is called many times).
        One output, its sin and cos halves written in place: no
        concatenation, whose copy torch spreads over its threads (on a
        loaded 2-core machine that one parallel copy took longer than the
        angles themselves). float16 and float64 are written as float32 is;
        bfloat16 (which NumPy lacks) from float64 rows, rounded once.
        """
        n, dim = self.size, self.dim
        m = value.size
        if dtype == torch.bfloat16:
            return round_once(self.render(value, torch.float64), dtype)
        out = torch.empty((m, dim), dtype=dtype)
        if self.jit is None:
            self.jit = prefer_compiled(1 << 62)
        arr = out.numpy()
        s, c = arr[:, n:2 * n], arr[:, :n]
        if not self.cos_first:
            s, c = c, s
        if n and m:
            fill_sincos(value.reshape(-1), self.ladder, s, c,
                        engine="numba" if self.jit and dtype != torch.float16 else "auto")  # numba: no float16
        if dim > 2 * n:
            arr[:, 2 * n:] = 0.0
        return out.reshape(*value.shape, dim)

    def plain(self, t: torch.Tensor) -> torch.Tensor | None:
        """:meth:`render` of :meth:`times` without the preset's rounding, in one pass: None to take them.

        The checks are theirs, read from t's smallest and largest values
        (NaN and ±inf fail the comparisons): |t| < 2**53 and, with the
        fastest frequency, an angle below 2**53. Anything they would refuse
        (or an integer t past 2**53, which float64 would round) goes back to
        them, so each refusal is theirs, with their message. t is read
        through NumPy without a float64 copy by torch (float32, float64,
        int64 and int32 as they are); the kernel writes both halves of
        the one output directly (:func:`~posenc.exact.angles.fill_halves`).
        """
        v = t.detach()
        if v.dtype in _HOST_DIRECT:
            arr = v.numpy()
        else:  # bfloat16, float8: NumPy cannot read them
            arr = v.to(torch.float64 if v.dtype.is_floating_point else torch.int64).numpy()
        dim, n = self.dim, self.size
        m = arr.size
        reach = 0.0
        if m:
            lo, hi = arr.min(), arr.max()
            if arr.dtype.kind == "f":
                low, reach = -float(lo), float(hi)
                if not (low < MAX_POSITION and reach < MAX_POSITION):
                    return None  # NaN, ±inf or |t| >= 2**53: check_positions names it
                reach = max(low, reach)
            else:
                big = max(-int(lo), int(hi))
                if big >= 2**53:
                    return None
                reach = float(big)
            check_angle(reach, self.fastest, "t")
        if self.jit is None:
            self.jit = prefer_compiled(1 << 62)
        if not self.jit:
            return None
        out = torch.empty((*arr.shape, dim), dtype=torch.float32)
        res = out.numpy().reshape(m, dim)
        cols = (n, 0) if self.cos_first else (0, n)
        if m > 1 and (lo == hi != 0 or (arr.dtype.kind != "f" and 2 * (int(hi) - int(lo) + 1) <= m)):
            return out if self.rows_once(arr, lo, hi, res, cols, reach) else None
        pos = np.ascontiguousarray(arr.reshape(-1), dtype=np.float64)
        if not fill_halves(pos, self.ladder, res, *cols, reach):
            return None
        if dim > 2 * n:
            res[:, 2 * n:] = 0.0
        return out

    def rows_once(self, arr: np.ndarray, lo: Any, hi: Any, res: np.ndarray, cols: tuple[int, int],
                   reach: float) -> bool:
        """:meth:`plain`'s rows when t repeats: one t for the batch, or whole steps ``lo … hi``, 2·span <= m.

        Each value's row is computed once (``lo … hi``, or the one value) and
        copied to the rows that hold it: a row is a function of its value
        alone, so the bits are those of computing every row (a scheduler's
        batch shares its step; 4096 steps of 0 … 999 cost 1000 rows). A float
        t of zeros takes the full path: -0.0 == 0.0 are two inputs, and this
        copy would not ask the core what each gives. False where the kernel
        is not there (nothing written).
        """
        n = self.size
        if lo == hi:
            steps = np.array([float(lo)])
        else:
            steps = np.arange(int(lo), int(hi) + 1, dtype=np.float64)  # |t| < 2**53: every integer exact
        table = np.empty((steps.size, res.shape[1]), dtype=np.float32)
        if not fill_halves(steps, self.ladder, table, *cols, reach):
            return False
        table[:, 2 * n:] = 0.0
        if lo == hi:
            res[:] = table[0]
        else:
            # mode='clip': every index is in range (lo, hi are t's own); 'raise' buffers the whole output
            np.take(table, arr.reshape(-1).astype(np.intp) - int(lo), axis=0, out=res, mode="clip")
        return True


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
    on any device. Off the host (an accelerator, or traced) a non-float64 t
    takes the 32-bit exact path (:mod:`posenc.torch._fixed`: integers only,
    no float64, so MPS too; Triton's kernel on CUDA when installed), where
    an integer t outside int32 or a float |t| >= 2**31 (or not finite) is
    refused (:func:`posenc.triton.positions.check_range`: a
    :class:`~posenc.PosEncError` naming it eagerly, which reads t, so an
    accelerator waits for it; a device assert in a traced graph; never NaN
    channels); a float64 t keeps the float64 path. Output
    ``[..., num_channels]``, float32 as diffusers', on t's device. On CPU
    tensors in eager mode t is checked (finite, inside the exact range: else
    :class:`~posenc.PosEncError`).

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

    def _setup(self, preset: TimestepConvention, plan: TimestepPlan | None = None) -> None:
        plan = preset.plan(self.num_channels) if plan is None else plan
        self.num_channels = plan.dim
        self.preset = preset
        self.cos_first = plan.cos_first
        self.angles = LadderBuffers(plan.ladder)
        self.host = HostRows(preset, plan)  # the host path's (plain attributes, without Module.__getattr__)

    @classmethod
    def of_plan(cls, preset: TimestepConvention, plan: TimestepPlan) -> Timesteps:
        """The module of ``preset``'s ``plan`` (built by the caller: the functional form's)."""
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.num_channels = plan.dim
        self._setup(preset, plan)
        return self

    def _times(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the float64 times the ladder multiplies, detached; the same carrying t's gradient).

        With Flux's rounding the value is the reference's ``time_factor · t``
        (:func:`~posenc.timesteps.conventions.reference_times`), its
        derivative the factor's: on a CPU tensor in eager mode from the
        NumPy function (which checks t and names an overflow), elsewhere
        from its twin of integer and exact float64 operations
        (:func:`~posenc.torch._exact.round_twin`), which a compiler cannot
        fold away. Without it, t itself. Checked first: on a CPU tensor in
        eager mode by the NumPy functions' checks, elsewhere (a device, or a
        trace: ``make_fx`` too, whose tensors cannot be read) finite with
        |t| < 2**53 (:func:`~posenc.triton.positions.check_values`; before,
        a NaN t gave NaN channels there, and ``make_fx`` failed reading t).
        """
        t64 = t.to(torch.float64)
        eager_cpu = host_eager(t)
        if eager_cpu:
            arr = check_positions(host_values(t), "t")
        else:
            check_values(t, "t")
        if self.host.round is None:
            value = t64.detach()
            grad = t64
        else:
            name = self.host.format(t)
            if eager_cpu:
                vals = reference_times(arr.reshape(-1), name, self.host.factor)
                value = torch.from_numpy(vals).reshape(t.shape)
            else:
                value = reference_times_twin(t64.detach(), name, self.host.factor, self.host.factor32)
            grad = value + self.host.factor * (t64 - t64.detach()) if t64.requires_grad else value
        if eager_cpu and value.numel():
            check_angle(float(value.abs().max()), self.host.fastest, "t")
        return value, grad

    def _fixed(self, t: torch.Tensor, dtype: torch.dtype = torch.float32) -> bool:
        """Whether t takes the 32-bit path: off the host (a device, or traced), t and the output not float64, no
        float64 product."""
        if host_eager(t) or not self.angles.has_fixed or not rows_dtype_ok(t.dtype) or dtype == torch.float64:
            return False
        return self.host.round is None or self.host.format(t) in _ROUNDINGS

    def _times32(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_times` without float64: t itself, or Flux's product in float32 as the reference forms it.

        ``reference_times``' rule (t rounded to the dtype, times
        float32(time_factor) in one float32 multiply, rounded to the dtype) in
        float32 arithmetic, as :mod:`posenc.jax.timesteps` does.
        """
        if self.host.round is None:
            return t.detach(), t
        name = self.host.format(t)
        t32 = t.to(torch.float32)
        value = round_float(round_float(t32.detach(), name) * self.host.factor32, name)
        grad = value + self.host.factor * (t32 - t32.detach()) if t32.requires_grad else value
        return value, grad

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        return self.embed(timesteps, torch.float32)

    def embed(self, timesteps: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The embedding in ``dtype`` (float16, bfloat16, float32 or float64), each value rounded once.

        What :meth:`forward` computes (in float32) and
        :func:`posenc.torch.timestep_embedding` returns.
        """
        t = check_input(timesteps, "t", self.angles.home, "posenc.timestep_embedding")
        if not t.requires_grad and host_eager(t):
            return self.host.embed(t, dtype)
        if self._fixed(t, dtype):
            value, grad = self._times32(t)
            s, c = exact_sincos32(grad, self.angles, value, dtype=dtype)
        else:
            value, grad = self._times(t)
            s, c = exact_sincos(grad, self.angles, value)
            s, c = round_once(s, dtype), round_once(c, dtype)
        # .to(dtype): a gradient's float32 term widens a narrow dtype's values (exactly) to float32
        parts = [c.to(dtype), s.to(dtype)] if self.cos_first else [s.to(dtype), c.to(dtype)]
        if self.num_channels % 2:
            parts.append(torch.zeros((*t.shape, 1), dtype=dtype, device=t.device))
        return torch.cat(parts, dim=-1)

    def extra_repr(self) -> str:
        return f"num_channels={self.num_channels}, preset={self.preset!r}"



class TorchTimesteps:
    """The :class:`~posenc.timesteps.backend.TimestepBackend` primitives over torch tensors, on t's device.

    t is a real tensor on any device (bfloat16 and grad-requiring too) or an
    array-like (:func:`~posenc.torch._inputs.as_tensor`). A CPU tensor in
    eager mode without a gradient takes the host rows (:class:`HostRows`: the
    NumPy core's bits, no module built); any other t the module's device
    paths (:class:`Timesteps` of the plan, on t's device).
    """

    name = "torch"

    def timestep_dtype(self, dtype: Any) -> torch.dtype:
        return check_float(dtype)

    def check_timesteps(self, t: Any, dim: int, dtype: Any) -> None:
        shape = shape_of(t)
        if shape is not None:  # a ragged t: the times' check names it
            device = t.device if isinstance(t, torch.Tensor) else torch.device("cpu")
            check_device_size((*shape, dim), dtype, "timestep embedding", device, 0)

    def timestep_plan(self, preset: TimestepConvention, dim: Any, t: Any) -> TimestepPlan:
        return preset.plan(dim)

    def timestep_times(self, t: Any) -> torch.Tensor:
        x = as_tensor(t, "t")
        return check_input(x, "t", x.device, "posenc.timestep_embedding")

    def timestep_rows(self, times: torch.Tensor, preset: TimestepConvention, plan: TimestepPlan,
                      dtype: Any) -> torch.Tensor:
        if not times.requires_grad and host_eager(times):
            return HostRows(preset, plan).embed(times, dtype)
        return Timesteps.of_plan(preset, plan).to(times.device).embed(times, dtype)


#: the torch primitives (no state: one is enough)
TORCH_TIMESTEPS = TorchTimesteps()
