"""The torch rows of posenc bench: RoPE at real positions (EVA-02, DINOv3) beside each model's float32 formula."""

from __future__ import annotations

import pytest

from posenc.bench.torch_rows import _rope_real, producers


@pytest.mark.parametrize("model", ["eva02", "dinov3"])
def test_real_position_rope_rows_time_posenc_and_the_model_formula_side_by_side(model):
    rows = _rope_real(model, 4, 2)(2)
    by = {r.method: r for r in rows}
    formula = f"{model} f32 formula ({'timm' if model == 'eva02' else 'dinov3'})"
    both = "posenc RotaryEmbedding / formula"
    assert set(by) == {"floor: q.clone(); k.clone()", "posenc RotaryEmbedding", formula, both}
    assert len({r.operation for r in rows}) == 1 and f"{model} real positions" in rows[0].operation
    floor = by["floor: q.clone(); k.clone()"]
    for r in rows:
        if r.method != both:
            assert r.median_ms > 0 and r.floor_ms == floor.median_ms
            assert r.ratio == pytest.approx(r.median_ms / floor.median_ms)
    # posenc's median over the formula's from the same run, the formula's as its floor
    assert by[both].median_ms == by["posenc RotaryEmbedding"].median_ms
    assert by[both].floor_ms == by[formula].median_ms
    assert by[both].ratio == pytest.approx(by[both].median_ms / by[formula].median_ms)
    # both compute the model's rotation: the formula written from its source is right to float32 rounding
    # (a wrong band order or layout would be off by O(1)), posenc to the rotation's own rounding
    ours, theirs = by["posenc RotaryEmbedding"].max_abs, by[formula].max_abs
    assert ours is not None and theirs is not None
    assert ours < 1e-5 and theirs < 1e-4


def test_the_quick_and_full_benches_carry_both_real_position_rows():
    for quick in (True, False):
        real = [p for p in producers(quick=quick) if p.__qualname__.startswith("_rope_real.")]
        assert len(real) == 2
