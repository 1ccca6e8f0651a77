"""posenc.hf.rotary: the rows a patched transformers rotary module holds and returns (issue 31)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hf"))
from families import build  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402


def test_sparse_position_ids_are_computed_not_held_over_their_span():
    """position_ids [[0, 10**7]] used to move the window over the whole span (2·10^7 rows, 1.3 GB) and hold it."""
    rotary = posenc.hf.patch(build("llama2")).model.rotary_emb
    positions = torch.tensor([[0, 5, 10**7]])
    cos, sin = rotary(torch.zeros(1, 3, 8), positions)
    start, stop = rotary.rotary["all_layers"].cache.held()
    assert stop - start <= 4096 + 256  # a decode's window at most, never the span
    want_cos, want_sin = posenc.rope_cos_sin(positions[0].numpy(), 16, base=10000.0, dtype="float32")
    assert np.array_equal(cos[0, :, :8].numpy(), want_cos) and np.array_equal(sin[0, :, 8:].numpy(), want_sin)
    # a decode step far out is still followed: the window moves there and holds the steps after it
    rotary(torch.zeros(1, 1, 8), torch.tensor([[10**6]]))
    start, stop = rotary.rotary["all_layers"].cache.held()
    assert start <= 10**6 + 1 < stop
