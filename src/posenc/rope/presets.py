"""Vision and video RoPE presets: each model's axes, ladders and pair layout as a :class:`RopeConfig`.

Each preset is the multi-axis RoPE a model family builds, read from its
source; use it as ``apply_rope(x, coords, spec=cfg)``
(``coords [..., s, n_axes]``, fractional coordinates welcome) or with
:class:`posenc.torch.RotaryEmbedding`'s functional twin. The coordinates are
the model's own (grid indices, or the scaled ones EVA-02 and CogVideoX use);
the preset fixes everything else.

- ``"flux"``: diffusers ``transformers/transformer_flux.py`` ``FluxPosEmbed``
  (``theta=10000, axes_dim=[16, 56, 56]``, read at 0.42.1; from BFL's
  ``EmbedND``): ids (0, h, w) for image tokens, zeros for text; each axis its
  own ladder θ^(−2j/d_a), pairs interleaved, axes one after another.
- ``"wan"``: diffusers ``transformers/transformer_wan.py`` ``WanRotaryPosEmbed``:
  h and w get 2·(head_dim // 6) channels each, t the rest (44, 42, 42 at 128),
  coordinates (frame, row, column) of the patch grid; interleaved.
- ``"cogvideox"``: diffusers ``embeddings.py`` ``get_3d_rotary_pos_embed``:
  t gets head_dim/4 channels, h and w 3·head_dim/8 each (16, 24, 24 at 64);
  interleaved; its ``grid_type="linspace"`` coordinates are fractional.
- ``"eva02"``: timm ``timm/layers/pos_embed_sincos.py`` ``RotaryEmbeddingCat``
  (``freq_bands(dim // 4, temperature=10000, step=1)``, ``build_rotary_pos_embed``
  with ``repeat_interleave``): bands θ^(−k/(head_dim/4)) per axis (h, w),
  interleaved; with ``ref_feat_shape`` the coordinate of row i is
  i·ref/feat (see :func:`eva02_coords`).
- ``"dinov3"``: facebookresearch/dinov3 ``dinov3/layers/rope_position_encoding.py``
  (``RopePositionEmbedding``, ``base=100``, ``normalize_coords="separate"``):
  periods base^(2j/(D/2)), j < D/4, per axis (h, w); the angle is 2π·c/period
  with c = 2·(i + 0.5)/H − 1 in [−1, 1]; half-split (``rope_rotate_half``).
  The 2π goes into the coordinates (:func:`dinov3_coords`), rounded once to
  float64: 2**-53 of an angle below 2π, far under a float32 ulp.
- ``"qwen2-vl-vision"``: transformers ``Qwen2VLVisionRotaryEmbedding``
  (``models/qwen2_vl/modeling_qwen2_vl.py``): head_dim 80, (h, w) with
  θ^(−2j/40) each, half-split (``rotate_half``).

>>> cfg = rope_preset("flux")
>>> cfg.sections, cfg.layout, cfg.ladder
((8, 28, 28), 'interleaved', 'per_axis')
>>> rope_preset("wan", head_dim=64).sections
(12, 10, 10)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import MAX_D_MODEL, PosEncError, check_base, check_int, check_positions, show_value
from ..registry import Call, Registry, returned
from ..support.memory import check_size
from ..support.vocabulary import PairLayout
from .spec import RopeConfig

__all__ = ["ROPE_PRESETS", "dinov3_coords", "eva02_coords", "rope_preset"]


def _axial(head_dim: int, pairs: tuple[int, ...], base: float, layout: PairLayout) -> RopeConfig:
    if min(pairs) < 1:
        raise PosEncError(f"head_dim={head_dim} leaves an axis no rotary pair (pairs per axis {pairs}): "
                          "use a wider head")
    return RopeConfig(head_dim=head_dim, rotary_dim=head_dim, base=base, scaling=None, max_position=None,
                      layout=layout, sections=pairs, section_layout="contiguous", ladder="per_axis")


def _even(head_dim: Any, name: str, multiple: int) -> int:
    d = check_int(head_dim, "head_dim", minimum=multiple, maximum=MAX_D_MODEL)
    if d % multiple:
        raise PosEncError(f"{name} needs head_dim divisible by {multiple}, got {show_value(head_dim)}")
    return d


def _flux(head_dim: Any = 128, base: Any = 10000.0) -> RopeConfig:
    d = _even(head_dim, "flux", 16)
    if d == 128:
        return _axial(d, (8, 28, 28), check_base(base), "interleaved")
    side = (d * 7 // 16) // 2  # Flux's 56/128 per spatial axis, kept at other widths
    return _axial(d, (d // 2 - 2 * side, side, side), check_base(base), "interleaved")


def _wan(head_dim: Any = 128, base: Any = 10000.0) -> RopeConfig:
    d = _even(head_dim, "wan", 2)
    hw = 2 * (d // 6)
    return _axial(d, ((d - 2 * hw) // 2, hw // 2, hw // 2), check_base(base), "interleaved")


def _cogvideox(head_dim: Any = 64, base: Any = 10000.0) -> RopeConfig:
    d = _even(head_dim, "cogvideox", 16)
    return _axial(d, (d // 8, d // 16 * 3, d // 16 * 3), check_base(base), "interleaved")


def _eva02(head_dim: Any = 64, base: Any = 10000.0) -> RopeConfig:
    d = _even(head_dim, "eva02", 4)
    return _axial(d, (d // 4, d // 4), check_base(base), "interleaved")


def _dinov3(head_dim: Any = 64, base: Any = 100.0) -> RopeConfig:
    d = _even(head_dim, "dinov3", 4)
    return _axial(d, (d // 4, d // 4), check_base(base), "half")


def _qwen2_vl_vision(head_dim: Any = 80, base: Any = 10000.0) -> RopeConfig:
    d = _even(head_dim, "qwen2-vl-vision", 4)
    return _axial(d, (d // 4, d // 4), check_base(base), "half")


#: name -> builder ``f(head_dim=..., base=...) -> RopeConfig``; :func:`rope_preset` resolves names.
#: A builder registered is checked to take both calls rope_preset makes (none, and both keywords).
ROPE_PRESETS: Registry[Callable[..., RopeConfig]] = Registry(
    "a RoPE preset builder", callable,
    {"flux": lambda: _flux, "wan": lambda: _wan, "cogvideox": lambda: _cogvideox, "eva02": lambda: _eva02,
     "dinov3": lambda: _dinov3, "qwen2-vl-vision": lambda: _qwen2_vl_vision},
    calls=(Call(), Call(keywords=("head_dim", "base"))))


def rope_preset(name: Any, **overrides: Any) -> RopeConfig:
    """A vision or video model's RoPE as a :class:`~posenc.RopeConfig`.

    Args:
        name: ``"flux"``, ``"wan"``, ``"cogvideox"``, ``"eva02"``, ``"dinov3"``, ``"qwen2-vl-vision"``.
        overrides: ``head_dim`` and ``base`` rebuild the preset at that width
            and θ (the axes' shares follow the model's rule); any other
            :class:`RopeConfig` field (``sections``, ``layout``…) replaces it.

    Raises:
        PosEncError: for an unknown name or field, a head_dim the preset
            cannot split, or an override the spec refuses (naming the
            override as passed: ``rope_preset("flux", sections=(1, 2))``).
    """
    if not isinstance(name, str) or name not in ROPE_PRESETS:
        names = ", ".join(repr(n) for n in ROPE_PRESETS)
        raise PosEncError(f"name must be one of {names}, got {show_value(name)}")
    sized = {k: overrides.pop(k) for k in ("head_dim", "base") if k in overrides}
    cfg = returned(ROPE_PRESETS.call(name, **sized), RopeConfig, f"the RoPE preset builder {name!r}")
    fields = dataclasses.fields(RopeConfig)
    settable = sorted(f.name for f in fields if f.init)
    for key in sorted(overrides):
        if key not in settable:
            if key in {f.name for f in fields}:  # multi_axis: init=False, so dataclasses.replace refuses it
                raise PosEncError(f"rope_preset({name!r}, {key}=...): {key} is derived from sections, section_layout "
                                  f"and ladder, so it cannot be set: set those; fields: {', '.join(settable)}")
            raise PosEncError(f"rope_preset({name!r}) has no field {key!r}; fields: {', '.join(settable)}")
    if not overrides:
        return cfg
    shown = ", ".join(f"{k}={show_value(v)}" for k, v in overrides.items())
    try:
        return dataclasses.replace(cfg, **overrides)
    except PosEncError as exc:  # the spec's own check: say which override it was
        raise PosEncError(f"rope_preset({name!r}, {shown}): {exc}") from None
    except Exception as exc:  # a raw error from a hostile value (its __eq__, __iter__) inside the spec's checks
        raise PosEncError(f"rope_preset({name!r}, {shown}): {type(exc).__name__}: {exc}") from exc


def eva02_coords(feat_shape: Sequence[int], ref_feat_shape: Sequence[int] | None = None) -> np.ndarray:
    """timm's EVA-02 coordinates of a ``feat_shape`` patch grid: ``[H·W, 2]`` (row, column), float64.

    timm ``build_fourier_pos_embed`` (``pos_embed_sincos.py``): ``t = arange(s)``
    per axis, scaled to ``t / feat · ref`` when ``ref_feat_shape`` is given
    (a 32×32 grid fine-tuned from 16×16 gets coordinates 0, 0.5, 1, …).

    >>> eva02_coords((2, 2), (4, 4)).tolist()
    [[0.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 2.0]]
    """
    feat = _sizes(feat_shape, "feat_shape")
    check_size((int(np.prod(feat, dtype=object)), len(feat)), np.float64, "coordinates")
    axes = [np.arange(s, dtype=np.float64) for s in feat]
    if ref_feat_shape is not None:
        ref = _sizes(ref_feat_shape, "ref_feat_shape")
        if len(ref) != len(feat):
            raise PosEncError(f"ref_feat_shape must have {len(feat)} sizes, got {show_value(list(ref_feat_shape))}")
        axes = [a / f * r for a, f, r in zip(axes, feat, ref, strict=True)]  # timm's order: divide, then multiply
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(feat))
    return check_positions(grid, "coordinates")


def dinov3_coords(h: Any, w: Any) -> np.ndarray:
    """DINOv3's patch coordinates times 2π: ``[H·W, 2]``, 2π·(2·(i + 0.5)/H − 1) per axis (row, column).

    ``normalize_coords="separate"`` (the released models'), no training-time
    shift, jitter or rescale.

    >>> (dinov3_coords(2, 1) / np.pi).round(6).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    hh, ww = (check_int(v, name, minimum=1, maximum=1 << 24) for v, name in ((h, "h"), (w, "w")))
    check_size((hh * ww, 2), np.float64, "coordinates")
    axes = [(2 * (np.arange(n, dtype=np.float64) + 0.5) / n - 1) * (2 * np.pi) for n in (hh, ww)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2)
    return check_positions(grid, "coordinates")


def _sizes(value: Any, name: str) -> list[int]:
    """A non-empty sequence of grid sizes >= 1 (at most 2**24 each: a grid, not a sequence)."""
    bad = isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) or (
        isinstance(value, np.ndarray) and value.ndim != 1)
    if bad or len(value) == 0:
        raise PosEncError(f"{name} must be a non-empty sequence of sizes, e.g. (16, 16), got {show_value(value)}")
    return [check_int(s, name, minimum=1, maximum=1 << 24) for s in value]
