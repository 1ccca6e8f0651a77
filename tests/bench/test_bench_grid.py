"""The grid rows of the benchmark: every method present, posenc exact, the baselines' errors measured."""

from __future__ import annotations

import numpy as np

from posenc.bench import run
from posenc.bench.grid_rows import mrope_positions, producers


def test_grid_rows_are_exact_and_complete():
    rows = [r for p in producers(quick=True) for r in p(1)]
    by = {(r.operation.split()[0], r.method): r for r in rows}
    for key in [("grid", "posenc encode_nd (axial)"), ("grid", "posenc encode_nd mae"),
                ("M-RoPE", "posenc Qwen2-VL contiguous"), ("M-RoPE", "posenc Qwen3-VL interleaved")]:
        assert by[key].max_ulp == 0 and by[key].max_abs == 0.0
    assert by[("grid", "floor: fill")].ratio == 1.0
    # the float32 recipes are measurably off; MAE's float64 recipe is within an ulp
    assert by[("grid", "big_vision f32")].max_abs > 0
    assert by[("M-RoPE", "transformers f32 recipe")].max_abs > 0
    assert by[("grid", "MAE f64 then cast")].max_ulp <= 1
    assert all(r.median_ms > 0 for r in rows)


def test_run_includes_the_grid_rows_unless_asked_not_to():
    ops = {r.operation.split()[0] for r in run(shapes=((64, 8),), repeats=1, scaling=False, quick=True).rows}
    assert {"table", "grid", "M-RoPE"} <= ops
    ops = {r.operation.split()[0] for r in run(shapes=((64, 8),), repeats=1, scaling=False, grids=False).rows}
    assert ops == {"table"}


def test_mrope_positions_follow_get_rope_index():
    pos = mrope_positions(3, (2, 2, 3), 2)
    assert pos.shape == (3 + 12 + 2, 3)
    assert pos[:3].tolist() == [[0, 0, 0], [1, 1, 1], [2, 2, 2]]
    assert pos[3].tolist() == [3, 3, 3] and pos[14].tolist() == [4, 4, 5]
    assert pos[15:].tolist() == [[6, 6, 6], [7, 7, 7]]  # max so far (5) + 1
    assert np.all(np.diff(pos[3:15, 2]) != 0)
