"""The transformers row of the benchmark: bookkeeping and what it decodes (never its timings)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from posenc.bench.hf_rows import POSITION, _Decoder, _model, producers
from posenc.hf.rotary import PatchedRotary


def test_decode_row_is_timed_beside_stock():
    (produce,) = producers(quick=True)
    rows = produce(1)
    assert [r.method for r in rows] == ["floor: stock transformers", "posenc.hf.patch"]
    assert rows[0].ratio == 1.0 and rows[1].ratio == rows[1].median_ms / rows[0].median_ms
    assert all("10^6" in r.operation for r in rows)


def test_the_patched_decoder_holds_its_rows_where_it_decodes():
    import posenc.hf

    step = _Decoder(posenc.hf.patch(_model(64, 2, 1)), POSITION)
    for _ in range(3):
        step()
    rotary = next(m for m in step.model.modules() if isinstance(m, PatchedRotary))
    held = rotary.rotary["all_layers"].cache.held()
    assert held[0] <= POSITION and step.position <= held[1]  # a window at 10^6, not rows computed one by one
