"""The timestep rows of posenc bench: posenc's Timesteps beside diffusers', exact where diffusers is not."""

from __future__ import annotations

from posenc.bench.timestep_rows import producers


def test_timestep_rows_time_both_modules_and_measure_their_errors():
    (produce,) = producers(quick=True)
    rows = {r.method: r for r in produce(2)}
    assert set(rows) == {"floor: empty+fill", "posenc Timesteps", "diffusers Timesteps"}
    ours, theirs = rows["posenc Timesteps"], rows["diffusers Timesteps"]
    assert ours.median_ms > 0 and theirs.median_ms > 0 and ours.ratio > 0
    assert ours.max_ulp is not None and ours.max_ulp <= 1  # rounded once from the exact value
    assert theirs.max_abs is not None and ours.max_abs is not None and theirs.max_abs > 10 * ours.max_abs
