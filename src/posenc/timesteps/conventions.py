"""Presets for the diffusion timestep embedding: each framework's formula, with the file it was read from.

Every preset resolves to one :class:`TimestepPlan`: frequencies ω_k (held to
~160 bits by :mod:`posenc.exact`), which of sin and cos comes first, and the
channel count. The angle is t·ω_k evaluated exactly (no float32 product, no
float32 ``exp``), so each value is within 1 float32 ulp of the formula.

The presets, and the checkpoints that use them:

- ``"diffusers"`` / ``"ddpm"``: diffusers' ``get_timestep_embedding``
  (huggingface/diffusers ``src/diffusers/models/embeddings.py``, read at
  0.42.1) at its defaults, which are Ho et al.'s DDPM code
  (hojonathanho/diffusion ``diffusion_tf/nn.py``, ``get_timestep_embedding``,
  read at c461299): ω_k = 10000^(−k/(half − 1)), ``[sin | cos]``. diffusers'
  ``Timesteps(…)`` modules pick their own arguments: Stable Diffusion 1/2 and
  SDXL's ``UNet2DConditionModel`` configs set ``flip_sin_to_cos=True,
  freq_shift=0``; so do SD3, PixArt, Sana, HunyuanVideo, Wan and Flux
  (``Timesteps(256, flip_sin_to_cos=True, downscale_freq_shift=0)`` in
  ``embeddings.py`` and ``transformers/*.py``); AuraFlow and Qwen-Image add
  ``scale=1000``.
- ``"guided-diffusion"``: OpenAI's ADM (openai/guided-diffusion
  ``guided_diffusion/nn.py``, ``timestep_embedding``, read at aca3097),
  copied by DiT (facebookresearch/DiT ``models.py``) and by LDM/SGM
  (CompVis/stable-diffusion ``ldm/modules/diffusionmodules/util.py``):
  ω_k = 10000^(−k/half), ``[cos | sin]``. Equal to
  ``Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0)``.
- ``"flux"``: Black Forest Labs' Flux (black-forest-labs/flux
  ``src/flux/modules/layers.py``, ``timestep_embedding``, read at 0130c27):
  ``time_factor · t`` (1000 · t, t in [0, 1]) then guided-diffusion's formula.

**The t·1000 product.** BFL's code (``t = time_factor * t``) and diffusers'
Flux transformer (``timestep.to(dtype) * 1000``) form ``1000·t`` in t's own
dtype, so in a bf16 pipeline t = 0.123 becomes 123.0, not 123.046875: the
fastest channel then turns by 0.047 rad less than the formula says. posenc
evaluates the exact product by default (``Flux()``: the formula at the t you
give), and offers the checkpoint's rounding as ``Flux(time_dtype="bfloat16")``
(or ``"float16"``, ``"float32"``, ``"float64"``, or ``"input"`` for t's own
dtype): t is rounded to that dtype, then multiplied as torch multiplies a
tensor by a Python float (:func:`reference_times`): in float64 for float64,
else in float32 (torch's "opmath" for bfloat16, float16 and float32) with
the factor rounded to float32, the product rounded to float32 and then to
the dtype. Integer steps with ``"input"`` take torch's promotion of an
integer tensor times a float, to float32. With a factor that float32 holds
exactly (1000) and t in bfloat16 or float16 the product is exact in float32,
so this is one rounding; with 0.1, 1/3 or 999.9 it is the reference's two.

Add a convention with :func:`register` (a name and a preset, or a zero-argument
factory of one); :func:`get` resolves names.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..errors import MAX_BASE, PosEncError, check_base, check_channels, check_real, show_value
from ..exact import Ladder, geometric_ladder
from ..registry import Registry, checked_results, guarded

__all__ = [
    "CONVENTIONS",
    "DDPM",
    "Diffusers",
    "Flux",
    "GuidedDiffusion",
    "TimestepConvention",
    "TimestepPlan",
    "get",
    "reference_times",
    "register",
    "round_to",
]


@dataclass(frozen=True, eq=False)
class TimestepPlan:
    """What a timestep preset resolves to for one channel count.

    Channels: ``[first | second]`` of ``len(ladder)`` each (sin then cos, or
    cos then sin when ``cos_first``), then one zero channel when ``dim`` is odd.

    Attributes:
        ladder: ω_k, the time factor and any scale folded in exactly.
        cos_first: True for ``[cos | sin]``.
        dim: output channels.
    """

    ladder: Ladder
    cos_first: bool
    dim: int


@checked_results(plan=TimestepPlan)  # a user's plan() returning junk: a PosEncError naming the preset, at the call
class TimestepConvention:
    """Base of the timestep presets: frozen dataclasses that implement :meth:`plan` (and :meth:`times`)."""

    name: ClassVar[str] = ""

    def plan(self, dim: Any) -> TimestepPlan:
        """Validate ``dim`` for this preset and return its :class:`TimestepPlan`."""
        raise NotImplementedError

    def times(self, t: np.ndarray, given: np.dtype) -> tuple[np.ndarray, bool]:
        """The float64 times the ladder multiplies, and whether the time factor is still in the ladder.

        ``given`` is t's own dtype (for ``time_dtype="input"``). The default: t
        unchanged, any factor exact inside the ladder.
        """
        return t, True


def preset_times(preset: TimestepConvention, t: np.ndarray, given: np.dtype) -> np.ndarray:
    """``preset.times(t, given)``'s times, checked (a user's preset too): float64 of t's shape, finite where t is.

    Args:
        preset: a timestep preset.
        t: float64 ``[n]`` times, checked by the caller.
        given: t's own dtype (for ``time_dtype="input"``).

    Raises:
        PosEncError: ``times`` raised, or returned anything but (an array of
            t's shape with real values, a bool), or a non-finite time for a
            finite t; naming the preset.

    >>> preset_times(Diffusers(), np.array([0.5]), np.dtype(np.float64)).tolist()
    [0.5]
    """
    who = f"{show_value(preset)}.times(...)"
    out = guarded(who, preset.times, t, given)
    times = out[0] if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], bool) else None
    if not isinstance(times, np.ndarray) or times.shape != t.shape or times.dtype.kind not in "iuf":
        raise PosEncError(f"{who} returned {show_value(out)}; expected (times, exact): a real array of t's shape "
                          f"{t.shape} and a bool")
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(times.astype(np.float64)) & np.isfinite(t)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise PosEncError(f"{who} returned the non-finite time {float(times[k])!r} for t={float(t[k])!r}")
    return times.astype(np.float64, copy=False)


def _ladder(dim: int, max_period: float, shift: Fraction, scale: Fraction, what: str) -> Ladder:
    half = dim // 2
    den = Fraction(half) - shift
    if half and den <= 0:
        raise PosEncError(
            f"{what}: half - downscale_freq_shift = {dim} // 2 - {float(shift):g} = {float(den):g}; the exponent "
            f"divides by it, so it must be > 0 (diffusers returns NaN here): use dim >= "
            f"{2 * (int(shift) + 1)} or a smaller downscale_freq_shift"
        )
    try:
        return geometric_ladder(half, max_period, den if half else Fraction(1), scale)
    except PosEncError as exc:  # a frequency the exact path cannot hold: say which settings made it
        raise PosEncError(f"{what}: its scale, max_period and downscale_freq_shift give a frequency outside the "
                          f"exact range ({exc})") from None


def _period(value: Any) -> float:
    p = check_base(value, "max_period")
    if p > MAX_BASE:  # pragma: no cover - check_base already bounds it
        raise PosEncError(f"max_period must be <= 2**950, got {show_value(value)}")
    return p


def _positive(value: Any, name: str) -> float:
    v = check_real(value, name)
    if v <= 0:
        raise PosEncError(f"{name} must be > 0 (it multiplies every frequency), got {show_value(value)}")
    return v


@dataclass(frozen=True)
class Diffusers(TimestepConvention):
    """diffusers' ``get_timestep_embedding`` (and its ``Timesteps`` module).

    Source: huggingface/diffusers ``src/diffusers/models/embeddings.py``
    (read at 0.42.1). With half = dim // 2,

        ω_k = max_period^(−k / (half − downscale_freq_shift)),   k = 0 … half−1,

    the angle is scale·t·ω_k, the channels ``[sin | cos]`` (``[cos | sin]``
    when ``flip_sin_to_cos``), and an odd dim ends with one zero channel.
    With the shift of 1 the last frequency is exactly 1/max_period.
    """

    name: ClassVar[str] = "diffusers"

    flip_sin_to_cos: bool = False  # True: [cos | sin] (Stable Diffusion, SDXL, SD3, Flux, Wan…)
    downscale_freq_shift: float = 1.0  # the exponent divides by half - shift; DDPM's 1, guided-diffusion's 0
    scale: float = 1.0  # multiplies the angle (AuraFlow and Qwen-Image: 1000)
    max_period: float = 10000.0  # the slowest period, 2π·max_period at the shift of 0

    def __post_init__(self) -> None:
        if not isinstance(self.flip_sin_to_cos, (bool, np.bool_)):
            raise PosEncError(f"flip_sin_to_cos must be True or False, got {show_value(self.flip_sin_to_cos)}")
        object.__setattr__(self, "flip_sin_to_cos", bool(self.flip_sin_to_cos))
        object.__setattr__(self, "downscale_freq_shift",
                           check_real(self.downscale_freq_shift, "downscale_freq_shift"))
        object.__setattr__(self, "scale", _positive(self.scale, "scale"))
        object.__setattr__(self, "max_period", _period(self.max_period))

    def plan(self, dim: Any) -> TimestepPlan:
        d = check_channels(dim, "dim")
        lad = _ladder(d, self.max_period, Fraction(self.downscale_freq_shift), Fraction(self.scale), repr(self))
        return TimestepPlan(lad, self.flip_sin_to_cos, d)


@dataclass(frozen=True)
class DDPM(Diffusers):
    """Ho et al.'s DDPM: ω_k = 10000^(−k/(half − 1)), ``[sin | cos]``, zero pad for odd dim.

    Source: hojonathanho/diffusion ``diffusion_tf/nn.py``
    (``get_timestep_embedding``, read at c461299); diffusers' defaults
    reproduce it. Used by the DDPM CIFAR-10/LSUN/CelebA-HQ checkpoints
    (``google/ddpm-*`` in diffusers, ``UNet2DModel`` with ``freq_shift=1``,
    ``flip_sin_to_cos=False``).
    """

    name: ClassVar[str] = "ddpm"


@dataclass(frozen=True)
class GuidedDiffusion(TimestepConvention):
    """OpenAI's guided-diffusion (ADM), DiT and LDM/SGM: ω_k = max_period^(−k/half), ``[cos | sin]``.

    Source: openai/guided-diffusion ``guided_diffusion/nn.py``
    (``timestep_embedding``, read at aca3097); the same function is in
    facebookresearch/DiT ``models.py`` (``TimestepEmbedder``) and in
    CompVis/stable-diffusion and Stability-AI/generative-models
    (``sgm/modules/diffusionmodules/util.py``). An odd dim ends with one zero
    channel.
    """

    name: ClassVar[str] = "guided-diffusion"

    max_period: float = 10000.0  # the slowest period is 2π·max_period

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_period", _period(self.max_period))

    def plan(self, dim: Any) -> TimestepPlan:
        d = check_channels(dim, "dim")
        return TimestepPlan(_ladder(d, self.max_period, Fraction(0), Fraction(1), repr(self)), True, d)


#: dtype name -> (significand bits, smallest normal exponent, largest finite value) for :func:`round_to`.
_FORMATS = {
    "float64": (53, -1022, float(np.finfo(np.float64).max)),
    "float32": (24, -126, float(np.finfo(np.float32).max)),
    "float16": (11, -14, 65504.0),
    "bfloat16": (8, -126, float.fromhex("0x1.fep127")),
}


def round_to(x: np.ndarray, dtype: str, lo: np.ndarray | None = None, *, what: str = "time_factor·t") -> np.ndarray:
    """``x + lo`` (float64, ``lo`` its exact remainder or None) rounded once to nearest-even in ``dtype``.

    Done on the significand with ``rint`` (ties to even), so it needs no
    bfloat16 support in NumPy and never rounds twice. Returned as float64.

    >>> round_to(np.array([123.046875]), "bfloat16").tolist()
    [123.0]
    >>> bool(round_to(np.array([0.1]), "float32")[0] == np.float32(0.1))
    True
    """
    bits, emin, biggest = _FORMATS[dtype]
    e = np.frexp(x)[1]
    e = np.maximum(e, emin + 1)  # below the normal range the format keeps fewer bits (subnormals)
    s = np.ldexp(x, bits - e)  # the significand as an integer plus a fraction, exactly
    r = np.rint(s)
    if lo is not None:  # a tie of x alone is broken by its remainder
        tie = np.abs(s - np.trunc(s)) == 0.5
        r = np.where(tie & (lo > 0), np.ceil(s), np.where(tie & (lo < 0), np.floor(s), r))
    out = np.ldexp(r, e - bits)
    if out.size and not np.all(np.abs(out) <= biggest):
        bad = x[np.abs(out) > biggest].flat[0]
        raise PosEncError(f"{what} = {float(bad):.6g} overflows {dtype} (largest {biggest:.6g}): "
                          "the reference would embed inf; give a smaller t or time_dtype=None")
    return out


_TIME_DTYPES = (None, "input", *_FORMATS)


@dataclass(frozen=True)
class Flux(TimestepConvention):
    """Black Forest Labs' Flux: ``time_factor · t``, then guided-diffusion's ``[cos | sin]`` formula.

    Source: black-forest-labs/flux ``src/flux/modules/layers.py``
    (``timestep_embedding``, read at 0130c27), used by FLUX.1 [dev] and
    [schnell] for the timestep and the guidance embedding (diffusers:
    ``Timesteps(256, True, 0)`` fed ``timestep * 1000``).

    ``time_dtype=None`` (default) folds the factor into the frequencies
    exactly; a dtype name rounds t, then ``time_factor · t``, to it first, as
    the reference does in a pipeline of that dtype (see the module's note).
    """

    name: ClassVar[str] = "flux"

    time_factor: float = 1000.0  # t in [0, 1] becomes 0 … 1000 before the sinusoid
    max_period: float = 10000.0  # as in guided-diffusion
    time_dtype: str | None = None  # None: exact product; "bfloat16", "float16", "float32", "float64", "input"

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_factor", _positive(self.time_factor, "time_factor"))
        object.__setattr__(self, "max_period", _period(self.max_period))
        if not (self.time_dtype is None or isinstance(self.time_dtype, str)) or self.time_dtype not in _TIME_DTYPES:
            names = ", ".join(repr(n) for n in _TIME_DTYPES)
            raise PosEncError(f"time_dtype must be one of {names}, got {show_value(self.time_dtype)}")

    def plan(self, dim: Any) -> TimestepPlan:
        d = check_channels(dim, "dim")
        scale = Fraction(self.time_factor) if self.time_dtype is None else Fraction(1)
        return TimestepPlan(_ladder(d, self.max_period, Fraction(0), scale, repr(self)), True, d)

    def time_format(self, given: str) -> str:
        """The dtype name ``time_factor · t`` is formed in, for t of dtype ``given`` (a NumPy or torch name).

        >>> Flux(time_dtype="input").time_format("int64"), Flux(time_dtype="bfloat16").time_format("float64")
        ('float32', 'bfloat16')
        """
        if self.time_dtype != "input":
            return str(self.time_dtype)
        # an integer tensor times a Python float is promoted to torch's default dtype, float32
        return given if given in _FORMATS else "float32"

    def times(self, t: np.ndarray, given: np.dtype) -> tuple[np.ndarray, bool]:
        if self.time_dtype is None:
            return t, True
        return reference_times(t, self.time_format(given.name), self.time_factor), False


def reference_times(t: np.ndarray, name: str, factor: float) -> np.ndarray:
    """``factor · t`` as torch forms it for t in dtype ``name``: float64 ``t`` in, the product's value out.

    t is rounded to ``name``; torch multiplies a tensor by a Python float in
    the dtype's "opmath" (float64 for float64; float32 for float32,
    float16 and bfloat16) with the scalar rounded to it, and rounds the
    product back to the tensor's dtype: ``float32(factor)·t`` rounded to
    float32, then to ``name``. In float64 the products of t (at most 24
    bits) and float32(factor) (24 bits) are exact, so each rounding is
    done once by :func:`round_to`. (Measured against ``torch.Tensor.__mul__``
    on 200 000 t per dtype for 0.1, 1/3, 999.9 and 1000: the same bits;
    tests/timesteps/test_flux_reference.py.)

    Raises:
        PosEncError: where the product (or the factor in float32) overflows ``name``.

    >>> reference_times(np.array([0.3]), "float32", 0.1).tolist() == [float(np.float32(0.3) * np.float32(0.1))]
    True
    """
    tr = round_to(t, name)
    if name == "float64":
        with np.errstate(over="ignore"):
            return round_to(tr * factor, name)  # one IEEE multiply; an overflow is named by round_to
    f32 = float(round_to(np.array([factor]), "float32", what="time_factor")[0])
    p = round_to(tr * f32, "float32")  # exact in float64 (<= 48 bits), rounded once as torch's float32 multiply
    return p if name == "float32" else round_to(p, name)


#: name -> zero-argument factory of each preset; :func:`register` adds to it.
CONVENTIONS: Registry[TimestepConvention] = Registry("a posenc.timesteps preset", TimestepConvention,
    {c.name: c for c in (Diffusers, DDPM, GuidedDiffusion, Flux)})


def register(name: Any, preset: Any) -> None:
    """Make ``timestep_embedding(..., convention=name)`` mean ``preset`` (a preset, or a zero-argument factory of one).

    >>> register("sd-unet", Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0))
    >>> get("sd-unet").downscale_freq_shift
    0.0
    """
    CONVENTIONS.register(name, preset)


def get(convention: Any) -> TimestepConvention:
    """A preset by name (at its defaults), or the given preset unchanged.

    >>> get("guided-diffusion")
    GuidedDiffusion(max_period=10000.0)
    """
    return CONVENTIONS.get(convention, "convention")
