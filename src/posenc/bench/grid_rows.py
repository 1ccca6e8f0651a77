"""The grid rows of ``posenc bench``: n-D sinusoid tables and multi-axis RoPE cos/sin against their floors.

- A 2-D sine–cosine table for an h×w grid at d channels (issue 12's target:
  64×64 at d = 1024): posenc's default and MAE preset against writing the
  output, beside MAE's own recipe (float64, then cast) and big_vision's
  (float32 throughout).
- M-RoPE cos/sin for a multimodal sequence (text, one video grid, text; 32k
  tokens at head_dim 128): posenc with Qwen2-VL's contiguous and Qwen3-VL's
  interleaved sections against writing the two outputs, beside plain 1-D
  RoPE cos/sin of as many tokens and the float32 recipe of transformers'
  rotary modules.

Accuracy is the largest float32 ulp distance from posenc's exact values on
every row (these outputs are small enough to check whole).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..rope.cos_sin import rope_cos_sin
from ..rope.frequencies import rope_frequencies
from ..rope.multimodal import Text, VisionGrid
from ..rope.multimodal import mrope_positions as multimodal_positions
from ..sinusoidal.grid import encode_nd, grid
from .measure import time_in_groups, ulp_gap
from .report import Row

__all__ = ["MIN_REPEATS", "mrope_positions", "producers"]

#: Repetitions of these sub-millisecond rows unless asked otherwise: a median of 7 moves with every hiccup.
MIN_REPEATS = 21


def _grid_rows(h: int, w: int, d: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        op = f"grid {h}x{w} d{d} f32"
        coords = grid(h, w)

        def floor() -> None:
            np.empty((h * w, d), dtype=np.float32).fill(1.0)

        ours: dict[str, Callable[[], Any]] = {
            "posenc encode_nd (axial)": lambda: encode_nd(coords, d),
            "posenc encode_nd mae": lambda: encode_nd(coords, d, convention="mae"),
        }
        theirs: dict[str, Callable[[], Any]] = {
            "MAE f64 then cast": lambda: _mae_recipe(h, w, d),
            "big_vision f32": lambda: _big_vision_recipe(h, w, d),
        }
        ms, floor_of = time_in_groups(("floor: fill", floor), ours, theirs, repeats=repeats)
        fns = {**ours, **theirs}
        exact = {"mae": encode_nd(coords, d, convention="mae"), "big_vision": encode_nd(coords, d,
                                                                                       convention="big_vision"),
                 "axial": encode_nd(coords, d)}
        refs = {"posenc encode_nd (axial)": "axial", "posenc encode_nd mae": "mae", "MAE f64 then cast": "mae",
                "big_vision f32": "big_vision"}
        rows = [Row(op, "floor: fill", ms["floor: fill"], 1.0, floor_ms=floor_of["floor: fill"])]
        for name, key in refs.items():
            got = np.asarray(fns[name]())
            err = float(np.max(np.abs(got.astype(np.float64) - exact[key].astype(np.float64))))
            f_ms = floor_of[name]
            rows.append(Row(op, name, ms[name], ms[name] / f_ms, ulp_gap(got, exact[key]), None, err, f_ms))
        return rows

    return produce


def _mae_recipe(h: int, w: int, d: int) -> np.ndarray:
    # MAE's get_2d_sincos_pos_embed: float64 (np.float), column first, [sin | cos] per half; the model casts
    gw, gh = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    omega = 1.0 / 10000.0 ** (np.arange(d // 4, dtype=np.float64) / (d / 4))
    halves = []
    for g in (gw, gh):
        ang = np.outer(g.reshape(-1), omega)
        halves += [np.sin(ang), np.cos(ang)]
    return np.concatenate(halves, axis=1).astype(np.float32)


def _big_vision_recipe(h: int, w: int, d: int) -> np.ndarray:
    # big_vision's posemb_sincos_2d in float32: ω = T^(-k/(d/4 - 1)), [sin x, cos x, sin y, cos y]
    y, x = np.mgrid[:h, :w]
    omega = np.float32(1.0) / np.float32(10000.0) ** (np.arange(d // 4, dtype=np.float32) / np.float32(d // 4 - 1))
    ax = np.outer(x.reshape(-1).astype(np.float32), omega)
    ay = np.outer(y.reshape(-1).astype(np.float32), omega)
    return np.concatenate([np.sin(ax), np.cos(ax), np.sin(ay), np.cos(ay)], axis=1)


def mrope_positions(text_before: int, grid_thw: tuple[int, int, int], text_after: int) -> np.ndarray:
    """(t, h, w) positions ``[s, 3]`` of text, one video/image grid (merged), text: :func:`posenc.mrope_positions`.

    >>> mrope_positions(2, (1, 2, 2), 1).tolist()
    [[0, 0, 0], [1, 1, 1], [2, 2, 2], [2, 2, 3], [2, 3, 2], [2, 3, 3], [4, 4, 4]]
    """
    return multimodal_positions([Text(text_before), VisionGrid(*grid_thw), Text(text_after)])[0]


def _mrope_rows(text: int, thw: tuple[int, int, int], head_dim: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        pos = mrope_positions(text, thw, text)
        s, n = pos.shape[0], head_dim // 2
        op = f"M-RoPE cos,sin {s} tok h_d {head_dim} f32"
        # Qwen2-VL's and Qwen3-VL's sections, scaled to head_dim
        qwen2: dict[str, Any] = {"sections": tuple(v * head_dim // 128 for v in (16, 24, 24)), "base": 1e6}
        qwen3: dict[str, Any] = {"sections": tuple(v * head_dim // 128 for v in (24, 20, 20)),
                                 "section_layout": "interleaved", "base": 5e6}

        def floor() -> None:
            c = np.empty((s, n), dtype=np.float32)
            si = np.empty((s, n), dtype=np.float32)
            c.fill(1.0)
            si.fill(1.0)

        tokens = np.arange(s)
        ours: dict[str, Callable[[], Any]] = {
            "posenc Qwen2-VL contiguous": lambda: rope_cos_sin(pos, head_dim, **qwen2),
            "posenc Qwen3-VL interleaved": lambda: rope_cos_sin(pos, head_dim, **qwen3),
            "posenc 1-D, s text tokens": lambda: rope_cos_sin(tokens, head_dim, base=1e6),
        }
        theirs: dict[str, Callable[[], Any]] = {"transformers f32 recipe": lambda: _hf_recipe(pos, head_dim, qwen2)}
        fl = "floor: fill cos, sin"
        ms, floor_of = time_in_groups((fl, floor), ours, theirs, repeats=repeats)
        fns = {**ours, **theirs}
        exact2 = np.concatenate(rope_cos_sin(pos, head_dim, **qwen2), axis=1)
        rows = [Row(op, fl, ms[fl], 1.0, floor_ms=floor_of[fl])]
        one_d = "posenc 1-D, s text tokens"  # the 1-D table of the same size, for scale (its accuracy: test_rope)
        rows.append(Row(op, one_d, ms[one_d], ms[one_d] / floor_of[one_d], floor_ms=floor_of[one_d]))
        for name in ("posenc Qwen2-VL contiguous", "posenc Qwen3-VL interleaved", "transformers f32 recipe"):
            ref = exact2 if name != "posenc Qwen3-VL interleaved" else np.concatenate(
                rope_cos_sin(pos, head_dim, **qwen3), axis=1)
            got = np.concatenate(fns[name](), axis=1)
            err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            f_ms = floor_of[name]
            rows.append(Row(op, name, ms[name], ms[name] / f_ms, ulp_gap(got, ref), None, err, f_ms))
        return rows

    return produce


def _hf_recipe(pos: np.ndarray, head_dim: int, kw: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    # Qwen2VLRotaryEmbedding: float32 inv_freq and angles, cos/sin, then the sections recomposed (contiguous)
    inv = (1.0 / (np.float32(kw["base"]) ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))).astype(
        np.float32)
    ang = pos.T.astype(np.float32)[..., None] * inv  # [3, s, n]
    cos, sin = np.cos(ang), np.sin(ang)
    axes = rope_frequencies(head_dim, **kw).pair_axes
    cols = np.arange(head_dim // 2)
    return cos[axes, :, cols].T, sin[axes, :, cols].T


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``)."""
    if quick:
        return [_grid_rows(32, 32, 256), _mrope_rows(256, (2, 16, 28), 64)]
    return [_grid_rows(64, 64, 1024), _mrope_rows(2048, (4, 64, 112), 128)]
