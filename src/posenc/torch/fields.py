"""Neural-field encodings for PyTorch: :class:`NeRFEncoding` and :class:`FourierFeatures`, exact and differentiable.

Values come from posenc's exact angle on x's device (:mod:`posenc.torch._exact`),
equal to :func:`posenc.nerf_encoding` / :func:`posenc.fourier_features`; the
gradient with respect to x is the derivative of the formula (ω·cos, −ω·sin),
since fields are optimised through their encodings.

The output follows the NumPy functions' rule for its dtype: a floating x
gives its own dtype, an integer x float32 (the NumPy functions' default);
bool and complex x are refused, as they are there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError, check_angle, check_positions, shape_text, show_value
from ..exact import Ladder
from ..exact.dot import dot2_turns
from ..exact.fixed_dot import phase_of_dot
from ..exact.fixed_sincos import sincos_f32
from ..fields.conventions import FieldConvention, FieldPlan, get
from ..fields.numpy_backend import Bands, arrange, check_matrix, check_raw, read_matrix, two_pi
from ..support.memory import shape_of
from ..triton.positions import check_values
from ._exact import LadderBuffers, check_input, exact_sincos, exact_sincos32, host_eager, host_values, turns_core
from ._fixed import NARROW_FLOATS, TORCH_OPS, round_once, rows_dtype_ok
from ._inputs import as_tensor, check_float
from ._memory import check_device_size

__all__ = ["TORCH_FIELDS", "FourierFeatures", "NeRFEncoding", "TorchFields"]


def _check_x(x: torch.Tensor, fastest: float, what: str) -> None:
    """The NumPy API's checks on x, before any work: never NaN features, on any path.

    On a CPU tensor in eager mode all of them (finite, |x| < 2**53, the
    angle); elsewhere (a device tensor, or traced) the first two on x's
    device (:func:`~posenc.triton.positions.check_values`: named eagerly, a
    device assert when traced). Unchecked, NaN and ±inf gave NaN features
    there (the 32-bit path, the float64 twin), or finite ones of no meaning.
    """
    if not host_eager(x):  # a device tensor, or traced (torch.compile, make_fx)
        check_values(x, what)
        return
    arr = check_positions(host_values(x), what)
    if arr.size and fastest:
        check_angle(float(np.max(np.abs(arr))), fastest, what)


def _out_dtype(x: torch.Tensor) -> torch.dtype:
    """The encoding's dtype: x's own when floating, float32 for integers (the NumPy functions' default)."""
    return x.dtype if x.dtype.is_floating_point else torch.float32


def _turn_sincos(p: torch.Tensor, angles: LadderBuffers) -> tuple[torch.Tensor, torch.Tensor]:
    """sin/cos of 2π·p (float64 phases in turns, any shape, differentiable), as the NumPy ``turn_sincos``."""
    flat = p.reshape(-1)
    hi = flat.detach()
    q, f, g = turns_core(hi, torch.zeros_like(hi))  # its quarter turns and the rest, exactly
    s, c = exact_sincos(flat, angles, f, g, quarter=q)
    return (s + 0.0).reshape(p.shape), (c + 0.0).reshape(p.shape)  # + 0.0: an exact zero is +0


class _TorchBands(nn.Module):
    """:class:`posenc.fields.numpy_backend.Bands` as buffers: the radian bands' ladder, the dyadic bands' τ and 2π."""

    def __init__(self, bands: Bands) -> None:
        super().__init__()
        self.radian = LadderBuffers(bands.ladder)
        taus = np.asarray(bands.taus, dtype=np.float64)
        self.taus = LadderBuffers(Ladder(taus, np.zeros_like(taus), np.zeros_like(taus)))  # τ as exact float64 bits
        self.turn = LadderBuffers(two_pi())
        self.n = bands.n
        # the channel order as runs of consecutive bands from one kind: (dyadic?, start, stop) in that kind's columns
        kinds = np.zeros(bands.n, dtype=bool)
        kinds[bands.dyadic] = True
        runs: list[tuple[bool, int, int]] = []
        seen = [0, 0]
        for k in kinds.tolist():
            if runs and runs[-1][0] == k:
                runs[-1] = (k, runs[-1][1], runs[-1][2] + 1)
            else:
                runs.append((k, seen[k], seen[k] + 1))
            seen[k] += 1
        self.runs = tuple(runs)
        self.any_dyadic = bool(bands.dyadic.size)
        self.any_radian = bool(bands.radian.size)

    def sincos(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """sin and cos of every band at float64 coordinates ``p [k]`` (differentiable): ``[k, n]``."""
        if not self.any_dyadic:
            return exact_sincos(p, self.radian)
        sd, cd = _turn_sincos(p.unsqueeze(-1) * self.taus.words()[0], self.turn)
        if not self.any_radian:
            return sd, cd
        sr, cr = exact_sincos(p, self.radian)
        pick = [(sd, cd) if k else (sr, cr) for k, _, _ in self.runs]
        s = torch.cat([ps[..., a:b] for (ps, _), (_, a, b) in zip(pick, self.runs, strict=True)], dim=-1)
        c = torch.cat([pc[..., a:b] for (_, pc), (_, a, b) in zip(pick, self.runs, strict=True)], dim=-1)
        return s, c


class NeRFEncoding(nn.Module):
    """The frequency encoding of a neural field: ``[..., d] -> [..., 2·L·d (+ d)]``.

    Args:
        n_freqs: bands L.
        convention: ``"nerf"``, ``"nerfstudio"``, ``"tcnn"`` or a
            :mod:`posenc.fields` preset (see :func:`posenc.nerf_encoding`).
        include_input: add x itself; None: the preset's default.

    Input: a real tensor x ``[..., d]`` (a 0-d x is one point of one
    coordinate, as in :func:`posenc.nerf_encoding`). Output in x's dtype when
    x is floating, float32 when it holds integers; the same bits as
    :func:`posenc.nerf_encoding` in that dtype.

    >>> enc = NeRFEncoding(4)
    >>> x = torch.tensor([[0.1, 0.2, 0.3]], requires_grad=True)
    >>> y = enc(x)
    >>> y.shape, enc.out_dim(3)
    (torch.Size([1, 27]), 27)
    >>> y.sum().backward(); x.grad.shape
    torch.Size([1, 3])
    >>> NeRFEncoding(1, convention="tcnn", include_input=True)(torch.tensor([[1]])).tolist()
    [[0.0, -1.0, 1.0]]
    """

    def __init__(self, n_freqs: int, *, convention: Any = "nerf", include_input: bool | None = None) -> None:
        super().__init__()
        plan = get(convention).plan(n_freqs)
        keep = plan.include_input if include_input is None else include_input
        if not isinstance(keep, (bool, np.bool_)):
            raise PosEncError(f"include_input must be True, False or None, got {show_value(include_input)}")
        self._setup(plan, bool(keep))

    @classmethod
    def of_plan(cls, plan: FieldPlan, include_input: bool) -> NeRFEncoding:
        """The module of a preset's ``plan`` (built and checked by the caller: the functional form's)."""
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._setup(plan, include_input)
        return self

    def _setup(self, plan: FieldPlan, include_input: bool) -> None:
        self.plan = plan
        self.include_input = include_input
        bands = Bands.of(self.plan)
        self.bands = _TorchBands(bands)
        # the 32-bit path (off the host, x not float64) reads the plan's ladder whole: its words hold the dyadic
        # bands (π·2**k) exactly, so sin(kπ) is 0 there as in the NumPy function
        self.rows32 = LadderBuffers(self.plan.ladder, host_core=False)
        self._fastest = bands.ladder.fastest  # a plain float: compile cannot enter cached_property's lock

    def out_dim(self, in_dim: int) -> int:
        """Output channels for ``in_dim`` coordinates."""
        return in_dim * (2 * len(self.plan.ladder) + int(self.include_input))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encode(x, None)

    def encode(self, x: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
        """The encoding in ``dtype`` (None: :meth:`forward`'s, x's own or float32), each value rounded once.

        What :meth:`forward` computes and :func:`posenc.torch.nerf_encoding` returns.
        """
        x = check_input(x, "x", self.bands.turn.home, "posenc.nerf_encoding")
        x = x.reshape(1) if x.ndim == 0 else x  # a scalar: one point of one coordinate, as the NumPy function
        _check_x(x, self._fastest, "x")
        dt = _out_dtype(x) if dtype is None else dtype
        m, d, n = x.shape[:-1].numel(), x.shape[-1], self.bands.n
        if not host_eager(x) and rows_dtype_ok(x.dtype) and dt != torch.float64 and self.rows32.has_fixed and n:
            s, c = exact_sincos32(x.reshape(-1), self.rows32, dtype=dt)
        else:  # float64 sin/cos, rounded once to dt (torch's cast to float16/bfloat16 would round twice)
            s, c = self.bands.sincos(x.reshape(-1).to(torch.float64))
            s, c = round_once(s, dt), round_once(c, dt)
        enc = arrange(self.plan, s.reshape(m, d, n), c.reshape(m, d, n), torch.stack, torch.cat, torch.permute)
        enc = enc.to(dt)
        if self.include_input:
            raw = round_once(x.reshape(m, d), dt)  # a float64 x into float16/bfloat16: rounded once
            enc = torch.cat([raw, enc] if self.plan.input_at == "first" else [enc, raw], dim=-1)
        return enc.reshape(*x.shape[:-1], enc.shape[-1])


_TWO_PI: list[LadderBuffers] = []  # the host's 2π ladder, built on first use


def _host_features(v: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) of 2π·B·v in float64 on the host, as the NumPy function: B·v mod 1 as a double-double."""
    if not _TWO_PI:
        _TWO_PI.append(LadderBuffers(two_pi()))
    m, d = b.shape
    x64 = v.reshape(-1, 1, d).to(torch.float64)
    hi, lo = dot2_turns(b.to(torch.float64).unsqueeze(0), x64, torch.round)
    q, f, g = turns_core(hi.reshape(-1), lo.reshape(-1))
    s, c = exact_sincos(hi.reshape(-1), _TWO_PI[0], f, g, quarter=q)
    return c.reshape(-1, m) + 0.0, s.reshape(-1, m) + 0.0  # + 0.0: an exact zero is +0


@torch.library.custom_op("posenc::fourier32", mutates_args=())
def _fourier32(v: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) of 2π·B·v ``[k, m]`` for float32 v ``[k, d]`` and B ``[m, d]``, in ``dtype``, no float64 off the host.

    On the CPU: the NumPy function's double-double (what the CPU computes
    eagerly too), each value rounded once to ``dtype``; elsewhere
    :func:`posenc.exact.fixed_dot.phase_of_dot`, the exact phase in 32-bit
    integers, and the 32-bit sin/cos (NaN where an operand is not finite).
    """
    if v.device.type == "cpu":
        c, s = _host_features(v, b)
        return round_once(c, dtype), round_once(s, dtype)
    phase, finite = phase_of_dot(TORCH_OPS, v, b)
    s, c = sincos_f32(TORCH_OPS, phase, None, dtype in NARROW_FLOATS)  # rounded to odd: the cast rounds once
    nan = torch.full_like(s[..., :1], float("nan"))
    return torch.where(finite.unsqueeze(-1), c, nan).to(dtype), torch.where(finite.unsqueeze(-1), s, nan).to(dtype)


@_fourier32.register_fake
def _(v: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (v.shape[0], b.shape[0])
    return v.new_empty(shape, dtype=dtype), v.new_empty(shape, dtype=dtype)


_EXACT_IN_F32 = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.uint8)


class FourierFeatures(nn.Module):
    """Tancik et al.'s ``[cos(2π B v) | sin(2π B v)]`` for a fixed ``b`` = B ``[m, d]``: ``[..., d] -> [..., 2m]``.

    B is a float64 buffer (saved in the ``state_dict``, as nerfstudio's
    ``b_matrix``); a dtype cast of the model leaves it float64, so the
    features never change with the model's precision. A B loaded from a
    ``state_dict`` is checked as the constructor checks it. Output in x's
    dtype when x is floating, float32 when it holds integers.

    >>> ff = FourierFeatures(torch.eye(2))
    >>> ff(torch.tensor([[1 / 12, 1 / 6]], dtype=torch.float64)).round(decimals=4).tolist()
    [[0.866, 0.5, 0.5, 0.866]]
    """

    B: torch.Tensor
    b32: torch.Tensor

    def __init__(self, b: Any) -> None:
        super().__init__()
        arr = b.detach().cpu().to(torch.float64).numpy() if isinstance(b, torch.Tensor) else b
        shape = np.shape(arr)
        if len(shape) != 2 or shape[1] < 1:  # d = 0: no coordinate to encode, as posenc.fourier_features
            raise PosEncError(f"B must be a matrix [m, d] with m >= 1 and d >= 1, got shape {shape_text(shape)}")
        mat = read_matrix(arr, shape[1])
        self.register_buffer("B", torch.from_numpy(mat.copy()))
        self.angles = LadderBuffers(two_pi())
        self.register_buffer("b32", torch.zeros(mat.shape, dtype=torch.int32), persistent=False)
        self._b_is_f32 = False
        self._hold32()

    def _hold32(self) -> None:
        """B's float32 bits (an int32 buffer: a dtype cast leaves it), when float32 holds every B_ij exactly.

        The 32-bit path (off the host) reads them; a B that float32 does not
        hold keeps the float64 path. Written when B is built or loaded (B
        changed in place afterwards: call this again).
        """
        b = self.B.detach()
        if b.is_meta:
            return
        b32 = b.to(torch.float32)
        self._b_is_f32 = bool(torch.equal(b32.to(torch.float64), b))
        with torch.no_grad():
            self.b32.copy_(b32.view(torch.int32).to(self.b32.device))

    def _apply(self, fn: Any, recurse: bool = True) -> FourierFeatures:
        b = self.B
        super()._apply(fn, recurse)
        if self.B.dtype != torch.float64:  # a dtype cast: keep B exact, follow only the device
            self.B = b.to(device=self.B.device)
        return self

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any, **kwargs: Any) -> None:
        b = state_dict.get(prefix + "B")
        if isinstance(b, torch.Tensor) and not b.is_meta:  # a NaN or huge B is refused by B's name, not later
            if tuple(b.shape) != tuple(self.B.shape):
                raise PosEncError(f"B must keep its shape {shape_text(tuple(self.B.shape))} when loaded, "
                                  f"got shape {shape_text(tuple(b.shape))}")
            check_matrix(b.detach().cpu().to(torch.float64).numpy())
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._hold32()

    def _features32(self, x: torch.Tensor, m: int, d: int, dt: torch.dtype) -> torch.Tensor:
        """The 32-bit path: float32 v and B (both exact), no float64 node; differentiable in x as the formula."""
        v = x.reshape(-1, d).to(torch.float32)
        b = self.b32.view(torch.float32)
        c, s = _fourier32(v.detach(), b, dt)
        if v.requires_grad:  # d/dx (cos, sin)(2π B x) = 2π·(−sin, cos)·(B dx), the formula's derivative
            w = float(2 * np.pi) * ((v - v.detach()).unsqueeze(-2) * b).sum(-1)
            c, s = c - s * w, s + c * w
        return torch.cat([c, s], dim=-1).reshape(*x.shape[:-1], 2 * m)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x, None)

    def features(self, x: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
        """The features in ``dtype`` (None: :meth:`forward`'s, x's own or float32), each value rounded once.

        What :meth:`forward` computes and :func:`posenc.torch.fourier_features` returns.
        """
        x = check_input(x, "x", self.B.device, "posenc.fourier_features")
        m, d = self.B.shape
        x = x.reshape(1) if x.ndim == 0 else x  # a scalar: one point of one coordinate, as the NumPy function
        if x.shape[-1] != d:
            raise PosEncError(f"x's last axis must hold B's d = {d} coordinates, got shape {tuple(x.shape)}")
        if host_eager(self.B):
            check_matrix(self.B.detach().numpy())  # B as it is now (a buffer can be written in place)
        _check_x(x, 0.0, "x")
        dt = _out_dtype(x) if dtype is None else dtype
        if not host_eager(x) and self._b_is_f32 and x.dtype in _EXACT_IN_F32 and dt != torch.float64:
            return self._features32(x, m, d, dt)
        x64 = x.reshape(-1, 1, d).to(torch.float64)
        plain = (x64 * self.B).sum(-1)  # the differentiable B·x; its value comes from the double-double below
        hi, lo = dot2_turns(self.B.unsqueeze(0), x64.detach(), torch.round)  # B·x mod 1, as the NumPy function
        q, f, g = turns_core(hi.reshape(-1), lo.reshape(-1))  # its quarter turns and the rest, exactly
        s, c = exact_sincos(plain.reshape(-1), self.angles, f, g, quarter=q)
        out = torch.cat([c.reshape(-1, m), s.reshape(-1, m)], dim=-1) + 0.0  # an exact zero is +0
        return round_once(out, dt).reshape(*x.shape[:-1], 2 * m)


def _device(x: Any) -> torch.device:
    return x.device if isinstance(x, torch.Tensor) else torch.device("cpu")


class TorchFields:
    """The :class:`~posenc.fields.backend.FieldBackend` primitives over torch tensors, on x's device.

    x is a real tensor on any device (or an array-like,
    :func:`~posenc.torch._inputs.as_tensor`); the rows are the modules'
    (:class:`NeRFEncoding` of the plan, :class:`FourierFeatures` holding B,
    which is torch's checked B: float64, with its float32 bits), on x's device.
    """

    name = "torch"

    def field_dtype(self, dtype: Any) -> torch.dtype:
        return check_float(dtype)

    def field_plan(self, preset: FieldConvention, n_freqs: Any) -> FieldPlan:
        return preset.plan(n_freqs)

    def check_nerf(self, x: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> None:
        shape = shape_of(x)
        if shape is not None:  # a ragged x: the points' check names it
            lead, d = (shape[:-1], shape[-1]) if shape else ((), 1)
            width = d * (2 * len(plan.ladder) + int(include_input))
            check_device_size((*lead, width), dtype, "field encoding", _device(x), 0)

    def nerf_points(self, x: Any) -> torch.Tensor:
        return as_tensor(x, "x")

    def nerf_rows(self, points: torch.Tensor, plan: FieldPlan, include_input: bool, dtype: Any) -> torch.Tensor:
        if include_input and dtype == torch.float16 and points.numel() and not points.is_meta:
            check_values(points, "x")
            check_raw(float(points.detach().abs().max()), np.dtype(np.float16), "x")
        return NeRFEncoding.of_plan(plan, include_input).to(points.device).encode(points, dtype)

    def check_fourier(self, x: Any, b: Any, dtype: Any) -> None:
        xs, bs = shape_of(x), shape_of(b)
        if xs is not None and bs is not None and len(bs) == 2:  # else the module's check names B
            check_device_size((*(xs[:-1] if xs else ()), 2 * bs[0]), dtype, "Fourier features", _device(x), 0)

    def fourier_points(self, x: Any) -> torch.Tensor:
        return as_tensor(x, "x")

    def fourier_matrix(self, b: Any, points: torch.Tensor) -> FourierFeatures:
        return FourierFeatures(b)  # x's d is checked against it by its features()

    def fourier_rows(self, points: torch.Tensor, matrix: FourierFeatures, dtype: Any) -> torch.Tensor:
        return matrix.to(points.device).features(points, dtype)


#: the torch primitives (no state: one is enough)
TORCH_FIELDS = TorchFields()
