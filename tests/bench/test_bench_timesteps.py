"""The timestep rows of posenc bench: posenc's Timesteps beside diffusers', exact where diffusers is not."""

from __future__ import annotations

from posenc.bench.timestep_rows import producers


def test_timestep_rows_time_both_modules_and_measure_their_errors():
    (produce,) = producers(quick=True)
    rows = {r.method: r for r in produce(2)}
    assert set(rows) == {"floor: empty+fill", "posenc Timesteps", "diffusers Timesteps", "posenc Timesteps / diffusers"}
    ours, theirs = rows["posenc Timesteps"], rows["diffusers Timesteps"]
    both = rows["posenc Timesteps / diffusers"]  # posenc's median over diffusers', diffusers' as its floor
    assert (both.median_ms, both.floor_ms) == (ours.median_ms, theirs.median_ms)
    assert both.ratio == ours.median_ms / theirs.median_ms
    assert ours.median_ms > 0 and theirs.median_ms > 0 and ours.ratio > 0
    assert ours.max_ulp is not None and ours.max_ulp <= 1  # rounded once from the exact value
    assert theirs.max_abs is not None and ours.max_abs is not None and theirs.max_abs > 10 * ours.max_abs


def test_the_full_run_times_whole_steps_too():
    ops = [produce(1) for produce in producers()]
    names = [rows[0].operation for rows in ops]
    assert names == ["timesteps [64]->[64,320] f32", "timesteps [64]->[64,320] f32 int t",
                     "timesteps [4096]->[4096,256] f32", "timesteps [4096]->[4096,256] f32 int t",
                     "timesteps [4096]->[4096,256] f32 scale=1000"]
    for rows in ops:
        ours = next(r for r in rows if r.method == "posenc Timesteps")
        assert ours.max_ulp is not None and ours.max_ulp <= 1
