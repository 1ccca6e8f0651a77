"""Sparse positions cost what they use: rows for the positions asked, never the range between them.

Issue 10 saw ``positions=[0, 2**31 - 2]`` and ``offset=10**9`` then
``offset=0`` ask for 238–512 GiB (MemoryError), and RoPE at ``[0, 3e7]``
allocate about 15 GB. Here the rise of the peak resident memory during each
call must stay a small multiple of the output (plus a few MiB of allocator
slack), and the values must be ``posenc.encode`` / ``apply_rope``'s. The
cases run in one fresh process (this file as a script), smallest output first.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

MIB = 1 << 20
SLACK = 24 * MIB  # allocator and page-granularity noise of one call
CASES = {
    # name: (module, how it is called, output bytes)
    "sinusoidal positions=[0, 2**31-2]": 2 * 512 * 4,
    "sinusoidal offset=10**9 then offset=0": 2 * 5 * 512 * 4,
    "rope positions=[0, 3e7]": 2 * 8 * 2 * 128 * 4,
    "sinusoidal 4096 positions scattered over [0, 2**31)": 4096 * 512 * 4,
}


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _run_cases() -> dict[str, dict[str, float]]:
    import torch

    import posenc
    from posenc.torch import RotaryEmbedding, SinusoidalPositionalEncoding

    pe = SinusoidalPositionalEncoding(512)
    rope = RotaryEmbedding(128, base=5e5)
    pe(torch.zeros(1, 1, 512), positions=torch.tensor([123456789]))  # load the far path before measuring
    rope(torch.zeros(1, 1, 1, 128), torch.zeros(1, 1, 1, 128), positions=torch.tensor([123456789]))
    return {name: _run_case(name, pe, rope, torch, posenc) for name in CASES}


def _run_case(name: str, pe: Any, rope: Any, torch: Any, posenc: Any) -> dict[str, float]:
    # inputs made and the reference computed outside the measured call
    if name.startswith("sinusoidal positions"):
        pos = np.array([0, 2**31 - 2])
        x = torch.zeros(2, 512)
        calls = [lambda: pe(x, positions=torch.from_numpy(pos))]
        want = [posenc.encode(pos, 512)]
    elif name.startswith("sinusoidal offset"):
        x = torch.zeros(5, 512)
        calls = [lambda: pe(x, offset=10**9), lambda: pe(x, offset=0)]
        want = [posenc.table(5, 512, start=off) for off in (10**9, 0)]
    elif name.startswith("rope"):
        q = torch.randn(1, 8, 2, 128)
        pos = np.array([0, 30_000_000])
        calls = [lambda: rope(q, q, positions=torch.from_numpy(pos))[0]]
        want = [posenc.apply_rope(q.numpy(), pos, base=5e5)]
    else:
        pos = np.random.default_rng(0).integers(0, 2**31, size=4096)
        x = torch.zeros(4096, 512)
        calls = [lambda: pe(x, positions=torch.from_numpy(pos))]
        want = [posenc.encode(pos, 512)]
    before = _peak()
    got = [call().numpy() for call in calls]
    rise = _peak() - before
    exact = all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    return {"rise": rise, "exact": exact, "rows_held": pe.cache.stop - pe.cache.start,
            "rope_rows_held": rope.cache.stop - rope.cache.start}


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, float]]:
    out = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name", list(CASES))
def test_sparse_positions_peak_memory_is_a_small_multiple_of_the_output(name, measured):
    result = measured[name]
    output = CASES[name]
    assert result["exact"]
    assert result["rows_held"] == result["rope_rows_held"] == 4096  # nothing spanned, nothing kept
    assert result["rise"] <= 3 * output + SLACK, f"peak rose {result['rise'] / MIB:.1f} MiB for {output / MIB:.3f} MiB"


if __name__ == "__main__":
    print(json.dumps(_run_cases()))
