"""Worked cases for grids (n-D sinusoids and multi-axis RoPE), in the seed's style, computed live.

The seed works its cases on a tiny model, d_model = 4 with ω = (1, 0.01). On
a 2-D grid the same tiny model sits on each axis: d_model = 8, each axis
4 channels, ω = (1, 0.01) per axis (posenc's axial default). Each case
prints its figures worked by hand beside the values posenc computes, and its
claims as checks run against the library; ``posenc examples`` shows them
after the seed's A–H.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..rope.cos_sin import rope_cos_sin
from ..sinusoidal.conventions_nd import NdConventionName
from ..sinusoidal.encoding import encode
from ..sinusoidal.grid import encode_nd
from ..sinusoidal.grid_analysis import grid_report
from ..sinusoidal.shift import shift
from ..support.layout import pair_permutation
from .claims import Case, CaseSet, Printed, check

__all__ = ["GRID_CELLS", "grid_case", "grid_cases"]

D = 8  # the seed's tiny model on each of two axes: 4 channels, ω = (1, 0.01) per axis


def pe(i: float, j: float, convention: NdConventionName | None = None) -> np.ndarray:
    """The tiny grid model's encoding of patch (row i, column j), float64."""
    return encode_nd([i, j], D, convention=convention, dtype=np.float64)


def _corner() -> Case:
    e = pe(0, 0)
    mae, bv = pe(0, 0, "mae"), pe(0, 0, "big_vision")
    return Case(
        "N1", 1, "The corner patch (0, 0)", "every axis at 0: a fixed pattern, laid out per convention",
        tuple(Printed(f"PE(0, 0)[{j}]", t, float(e[j])) for j, t in enumerate("01010101")),
        (
            check("PE(0, 0) is the seed's PE(0) = [0, 1, 0, 1] once per axis", np.array_equal(e, np.tile(encode(0, 4,
                  dtype=np.float64), 2)), f"PE(0, 0) = {e.tolist()}"),
            check("not all zeros: |PE(0, 0)|² = d/2 = 4 (each pair has sin² + cos² = 1)", float(e @ e) == 4.0,
                  f"|PE(0, 0)|² = {float(e @ e):g}"),
            check("MAE's and big_vision's corner is the same sin 0, cos 0 in halves: [0 0 1 1 | 0 0 1 1]",
                  np.array_equal(mae, [0, 0, 1, 1, 0, 0, 1, 1]) and np.array_equal(bv, mae),
                  f"MAE(0, 0) = {mae.tolist()}"),
        ),
    )


def _fast_and_slow() -> Case:
    axial = grid_report((64, 64), 256)
    mae = grid_report((64, 64), 256, convention="mae")
    bv = grid_report((64, 64), 256, convention="big_vision")
    rows, cols = axial.axes
    return Case(
        "N2", 2, "Fastest and slowest channel per axis (64×64 grid, d_model 256)",
        "each axis has its own ladder over d/2 channels: the seed's Ex 2, 3, 7 per axis",
        (
            Printed("λ of the fastest pair (ω = 1), each axis", "6.2832", float(rows.wavelengths[0])),
            Printed("its turns over the 64 positions of an axis, 64/2π", "10.19", float(rows.loops[0])),
            Printed("λ_max = 2π·10000^(126/128), each axis", "54410", rows.max_wavelength),
            Printed("big_vision's λ_max = 2π·10000 (denominator d/4 − 1)", "62832", bv.axes[0].max_wavelength),
        ),
        (
            check("rows and columns have the same ladder, 64 pairs each", np.array_equal(rows.omega, cols.omega)
                  and len(rows.omega) == 64, f"channels {rows.channels[0]}–{rows.channels[-1]} and "
                  f"{cols.channels[0]}–{cols.channels[-1]}"),
            check("the fastest pair wraps about 10 times over an axis, the slowest not once",
                  bool(rows.loops[0] > 10 and not rows.wraps and not cols.wraps),
                  f"{rows.loops[0]:.2f} and {rows.loops[-1]:.5f} turns"),
            check("MAE's ladder 10000^(-k/(d/4)) is the axial one; only the layout and axis order differ",
                  np.array_equal(mae.axes[0].omega, rows.omega), f"ω_63 = {mae.axes[0].omega[-1]:.6g}"),
            check("big_vision's slowest frequency is exactly 1/10000", float(bv.axes[0].omega[-1]) == 1e-4,
                  f"ω_63 = {bv.axes[0].omega[-1]:g}"),
        ),
    )


def _alias_one_axis() -> Case:
    two_pi = 2 * math.pi
    p, q = pe(0, 3), pe(two_pi, 3)
    diff = np.abs(p - q)
    return Case(
        "N3", 3, "Aliasing on one axis only: patches (0, 3) and (2π, 3)",
        "the same column, rows a fast wavelength apart: the row's slow pair still tells them apart",
        (
            Printed("slow angle of row 2π, 0.01·2π", "0.06283", 0.01 * two_pi),
            Printed("PE(2π, 3)[2] = sin(0.06283)", "0.06279", float(q[2])),
            Printed("PE(2π, 3)[3] = cos(0.06283)", "0.99803", float(q[3])),
        ),
        (
            check("the column channels 4–7 coincide exactly (the same column 3)", np.array_equal(p[4:], q[4:]),
                  f"|Δ| = {diff[4:].max():g}"),
            check("the row's fast pair (channels 0, 1) coincides at rows 0 and 2π", bool(diff[:2].max() < 1e-9),
                  f"|Δ| = {diff[:2].max():.1e}"),
            check("the row's slow pair (channels 2, 3) differs, so the patches' vectors differ",
                  bool(diff[2] > 0.06 and np.linalg.norm(p - q) > 0.06), f"|PE(0, 3) − PE(2π, 3)| = "
                  f"{np.linalg.norm(p - q):.5f}"),
        ),
    )


def _shift_one_axis() -> Case:
    p, q = pe(3, 5), pe(3, 10)
    moved = shift(p[4:], 5)
    return Case(
        "N4", 4, "A shift along one axis: (3, 5) → (3, 10)",
        "T_5 turns only the column's pairs; the row's channels do not move",
        (
            Printed("column 5's slow pair: sin(0.05)", "0.049979", float(p[6])),
            Printed("cos(0.05)", "0.998750", float(p[7])),
            Printed("φ = ω_1·k = 0.01·5", "0.05", 0.01 * 5),
            Printed("after T_5: sin(0.10)", "0.099833", float(moved[2])),
        ),
        (
            check("the row channels 0–3 are the same bits", np.array_equal(p[:4], q[:4]), f"PE_row = "
                  f"{np.round(p[:4], 5).tolist()}"),
            check("T_5 on the column channels maps column 5 onto column 10", np.allclose(moved, q[4:], rtol=0,
                  atol=4e-16), f"max |Δ| = {np.max(np.abs(moved - q[4:])):.1e}"),
            check("the same T_5 on the row channels would move the row instead: (3, 5) → (8, 5)",
                  np.allclose(shift(p[:4], 5), pe(8, 5)[:4], rtol=0, atol=4e-16),
                  "the shift is diag(I, T_5): one block per axis"),
        ),
    )


def _mae_width_first() -> Case:
    m = pe(0, 1, "mae")
    w_chans = grid_report((2, 2), D, convention="mae").axes[1].channels
    perm = pair_permutation(4, "interleaved", "split")
    swapped = all(np.array_equal(pe(i, j, "mae"), np.roll(pe(j, i, "mae"), 4)) for i, j in ((0, 1), (2, 7), (5, 3)))
    relaid = all(np.array_equal(pe(i, j, "mae"), np.concatenate([pe(i, j)[4:][perm], pe(i, j)[:4][perm]]))
                 for i, j in ((0, 1), (2, 7), (5, 3)))
    return Case(
        "N5", 5, "Why MAE's first half is the width", "meshgrid(grid_w, grid_h) puts w in grid[0], encoded first",
        (
            Printed("MAE(row 0, col 1)[0] = sin(1), the column", "0.8415", float(m[0])),
            Printed("MAE(row 0, col 1)[1] = sin(0.01)", "0.0100", float(m[1])),
            Printed("MAE(row 0, col 1)[2] = cos(1)", "0.5403", float(m[2])),
            Printed("MAE(row 0, col 1)[4] = sin(0), the row", "0", float(m[4])),
        ),
        (
            check("channels 0–3 encode the column w (its code calls them emb_h)", w_chans == (0, 1, 2, 3),
                  f"column channels {w_chans}"),
            check("transposing a patch swaps MAE's halves: MAE(i, j) = roll(MAE(j, i), d/2)", swapped,
                  "(0, 1), (2, 7), (5, 3)"),
            check("MAE = posenc's axial default with the halves swapped and each half [sin | cos]", relaid,
                  "a fixed permutation: a checkpoint needs its own"),
        ),
    )


def _text_token_mrope() -> Case:
    sec = (2, 1, 1)  # head_dim 8: pairs 0, 1 turn with t, pair 2 with h, pair 3 with w
    c_text, s_text = rope_cos_sin([[3, 3, 3]], 8, sections=sec, dtype=np.float64)
    c_1d, s_1d = rope_cos_sin([3], 8, dtype=np.float64)
    c_img, _ = rope_cos_sin([[3, 0, 5]], 8, sections=sec, dtype=np.float64)
    inter = rope_cos_sin([[3, 3, 3]], 8, sections=(2, 1, 1), section_layout="interleaved", dtype=np.float64)
    return Case(
        "N6", 6, "A text token in M-RoPE is plain RoPE (head_dim 8, sections t, h, w = 2, 1, 1)",
        "text sits at (p, p, p): every pair turns with the same position",
        (
            Printed("text token 3: cos(3·ω_0) = cos 3", "-0.98999", float(c_text[0, 0])),
            Printed("cos(3·ω_1) = cos 0.3", "0.95534", float(c_text[0, 1])),
            Printed("pair 2 (h): cos 0.03", "0.99955", float(c_text[0, 2])),
            Printed("pair 3 (w): cos 0.003", "0.999996", float(c_text[0, 3])),
            Printed("image token (3, 0, 5), pair 3 (w = 5): cos 0.005", "0.999988", float(c_img[0, 3])),
        ),
        (
            check("(3, 3, 3) is 1-D RoPE at 3, bit for bit", np.array_equal(c_text, c_1d) and np.array_equal(
                  s_text, s_1d), f"cos = {np.round(c_text[0], 6).tolist()}"),
            check("so are Qwen3-VL's interleaved sections", np.array_equal(inter[0], c_1d) and np.array_equal(
                  inter[1], s_1d), "pairs 0, 3 turn with t, 1 with h, 2 with w"),
            check("an image token (3, 0, 5) keeps the t pairs and moves only h and w",
                  np.array_equal(c_img[0, :2], c_1d[0, :2]) and c_img[0, 2] == 1.0 and c_img[0, 3] != c_1d[0, 3],
                  f"cos = {np.round(c_img[0], 6).tolist()}"),
        ),
    )


_BUILDERS: dict[str, Callable[[], Case]] = {
    "N1": _corner, "N2": _fast_and_slow, "N3": _alias_one_axis,
    "N4": _shift_one_axis, "N5": _mae_width_first, "N6": _text_token_mrope,
}

#: The grid cases, in order.
_SET = CaseSet("grid cell", _BUILDERS)
GRID_CELLS: tuple[str, ...] = _SET.cells


def grid_case(cell: str) -> Case:
    """Compute one grid case (``"N1"`` … ``"N6"``, case-insensitive).

    >>> c = grid_case("n6")
    >>> c.title.split(" (")[0], c.passed
    ('A text token in M-RoPE is plain RoPE', True)
    """
    return _SET.case(cell)



def grid_cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """Compute the grid cases (all six by default), validating every name first."""
    return _SET.cases(cells)
