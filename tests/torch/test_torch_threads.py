"""Many threads share one module, or the NumPy API: every output is the single-threaded one, bit for bit.

Reported (issue 10): two to four threads calling one module with offsets that
make the cache grow got outputs wrong by up to 1.99, spurious "length must be
>= 0" errors, and a module that stayed corrupted afterwards. Here 4 threads
run random offsets, lengths and scattered positions against one
``SinusoidalPositionalEncoding``, one ``RotaryEmbedding`` and ``posenc.table``
at once, with the interpreter switching threads as often as it can; each
round starts from empty caches, so they grow (and compute far rows directly)
while other threads read them.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np
import torch

import posenc
from posenc.torch import RotaryEmbedding, SinusoidalPositionalEncoding

THREADS = 4
ROUNDS = 6
CALLS = 24  # per thread per round
D = 32  # d_model of the sinusoid, head_dim of RoPE

Job = tuple[str, dict[str, Any]]


def _job(rng: np.random.Generator) -> Job:
    kind = ("sinusoidal", "rope", "table")[int(rng.integers(3))]
    s = int(rng.integers(1, 200))
    if rng.random() < 0.25:  # scattered positions [b, s], one far from everything else
        pos = rng.integers(-3000, 40000, size=(2, s))
        pos[0, 0] = int(rng.integers(0, 2**31 - 1))
        return kind, {"positions": pos, "s": s}
    return kind, {"offset": int(rng.integers(-3000, 40000)), "s": s}


def _inputs(job: Job, seed: int) -> dict[str, torch.Tensor]:
    kind, spec = job
    g = torch.Generator().manual_seed(seed)
    s = spec["s"]
    b = 2 if "positions" in spec else 1
    if kind == "sinusoidal":
        return {"x": torch.randn(b, s, D, generator=g)}
    return {"q": torch.randn(b, 2, s, D, generator=g), "k": torch.randn(b, 1, s, D, generator=g)}


def _expected(job: Job, inp: dict[str, torch.Tensor]) -> list[np.ndarray]:
    """The single-threaded value from the NumPy core (the modules equal it bit for bit)."""
    kind, spec = job
    s = spec["s"]
    pos = spec["positions"] if "positions" in spec else np.arange(spec["offset"], spec["offset"] + s)
    if kind == "table":
        return [posenc.table(s, D, start=spec["offset"])] if "offset" in spec else [posenc.encode(pos, D)]
    if kind == "sinusoidal":
        return [inp["x"].numpy() + posenc.encode(pos, D)]
    p = pos[:, None, :] if pos.ndim == 2 else pos
    return [posenc.apply_rope(inp[n].numpy(), p, base=1e4) for n in ("q", "k")]


def _call(job: Job, inp: dict[str, torch.Tensor], pe: Any, rope: Any) -> list[np.ndarray]:
    kind, spec = job
    where = {"positions": torch.from_numpy(spec["positions"])} if "positions" in spec else {"offset": spec["offset"]}
    if kind == "table":
        if "offset" in spec:
            return [posenc.table(spec["s"], D, start=spec["offset"])]
        return [posenc.encode(spec["positions"], D)]
    if kind == "sinusoidal":
        return [pe(inp["x"], **where).numpy()]
    return [t.numpy() for t in rope(inp["q"], inp["k"], **where)]


def _check(job: Job, got: list[np.ndarray], want: list[np.ndarray], out: list[str]) -> None:
    for g, w in zip(got, want, strict=True):
        if not np.array_equal(g, w):
            out.append(f"{job[0]} {job[1].get('offset')}: max |diff| {np.abs(g - w).max()}")


def _round(rng: np.random.Generator, r: int, errors: list[str], mismatches: list[str]) -> int:
    """One round: fresh modules, THREADS threads released at once; returns the calls made."""
    jobs = [[_job(rng) for _ in range(CALLS)] for _ in range(THREADS)]
    inputs = [[_inputs(j, 1000 * r + 10 * t + i) for i, j in enumerate(js)] for t, js in enumerate(jobs)]
    want = [[_expected(j, inp) for j, inp in zip(js, ins, strict=True)] for js, ins in zip(jobs, inputs, strict=True)]
    pe = SinusoidalPositionalEncoding(D, max_len=0)
    rope = RotaryEmbedding(D, max_len=0)
    gate = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        gate.wait()
        for job, inp, w in zip(jobs[t], inputs[t], want[t], strict=True):
            try:
                got = _call(job, inp, pe, rope)
            except Exception as exc:  # every failure is counted, none may happen
                errors.append(f"{job[0]} {job[1].get('offset')}: {exc!r}")
                continue
            _check(job, got, w, mismatches)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # afterwards, single-threaded calls still see exact rows
    for job in jobs[0][:4]:
        inp = _inputs(job, 7)
        _check(job, _call(job, inp, pe, rope), _expected(job, inp), mismatches)
    return THREADS * CALLS


def test_four_threads_share_modules_and_table_bit_for_bit():
    rng = np.random.default_rng(2024)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    errors: list[str] = []
    mismatches: list[str] = []
    try:
        calls = sum(_round(rng, r, errors, mismatches) for r in range(ROUNDS))
    finally:
        sys.setswitchinterval(old_interval)
    assert calls == THREADS * CALLS * ROUNDS == 576
    assert (errors, mismatches) == ([], []), (
        f"of {calls} calls, {len(errors)} raised ({errors[:2]}) and {len(mismatches)} were wrong ({mismatches[:2]})"
    )
