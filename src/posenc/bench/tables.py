"""The NumPy rows of ``posenc bench``: posenc's tables against the forms people use today.

Every operation is timed side by side with its *floor* — the cost of merely
writing the output (``np.empty(shape, np.float32).fill(1.0)``) or of copying
the inputs (``q.clone(); k.clone()``) — in the same run, interleaved
repetition by repetition, and reported as the ratio of medians. Shared,
noisy machines change the milliseconds, much less the ratios.

Accuracy is measured on sampled rows against posenc's exact path, in float32
ulps.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..exact import fill_range, geometric_ladder, seed_ladder
from ..sinusoidal.encoding import encode
from .measure import peak_extra, time_in_groups, time_side_by_side, ulp_gap
from .report import Report, Row, machine_line

__all__ = ["run"]

TABLE_SHAPES = ((65536, 1024), (4096, 512), (262144, 128))
QUICK_TABLE_SHAPES = ((4096, 512), (16384, 256))


def _fill_floor(n: int, d: int) -> None:
    np.empty((n, d), dtype=np.float32).fill(1.0)


def _posenc_table(n: int, d: int, engine: str) -> np.ndarray:
    out = np.empty((n, d), dtype=np.float32)
    fill_range(0, n, seed_ladder(d, 10000.0), out, "interleaved", engine=engine)
    return out


def _numpy_f64(n: int, d: int) -> np.ndarray:
    # the usual "accurate" recipe: float64 angles, then cast
    w = 10000.0 ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(n, dtype=np.float64)[:, None] * w
    out = np.empty((n, d), dtype=np.float32)
    out[:, 0::2] = np.sin(ang)
    out[:, 1::2] = np.cos(ang)
    return out


def _torch_baselines(n: int, d: int) -> dict[str, Callable[[], np.ndarray]]:
    try:
        import torch
    except ImportError:
        return {}

    def tutorial() -> np.ndarray:
        # the PyTorch tutorial / Annotated Transformer formula, float32 throughout
        pe = torch.zeros(n, d)
        position = torch.arange(0, n).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        return pe.numpy()

    def fairseq() -> np.ndarray:
        # fairseq SinusoidalPositionalEmbedding.get_embedding, float32, [sin | cos]
        half = d // 2
        scale = math.log(10000) / (half - 1)
        inv = torch.exp(torch.arange(half, dtype=torch.float) * -scale)
        ang = torch.arange(n, dtype=torch.float).unsqueeze(1) * inv.unsqueeze(0)
        return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1).numpy()

    return {"torch tutorial f32": tutorial, "fairseq f32": fairseq}


def _fairseq_exact_rows(rows: np.ndarray, d: int) -> np.ndarray:
    half = d // 2
    lad = geometric_ladder(half, 10000.0, Fraction(half - 1))
    out = np.empty((rows.shape[0], d), dtype=np.float32)
    from ..exact import fill_sincos

    fill_sincos(rows.astype(np.float64), lad, out[:, :half], out[:, half:])
    return out


def _table_rows(n: int, d: int, repeats: int) -> list[Row]:
    op = f"table {n}x{d} f32"
    floor_fn = functools.partial(_fill_floor, n, d)
    ours: dict[str, Callable[[], Any]] = {
        "posenc": lambda: _posenc_table(n, d, "auto"),
        "posenc (NumPy only)": lambda: _posenc_table(n, d, "numpy"),
    }
    theirs: dict[str, Callable[[], Any]] = {"numpy f64 then cast": lambda: _numpy_f64(n, d)}
    theirs.update(_torch_baselines(n, d))
    ms, floor_of = time_in_groups(("floor: fill", floor_fn), ours, theirs, repeats=repeats)
    ratio = {k: ms[k] / floor_of[k] for k in ms}
    fns: dict[str, Callable[[], Any]] = {"floor: fill": floor_fn, **ours, **theirs}
    rng = np.random.default_rng(0)
    sample = np.unique(np.concatenate([rng.integers(0, n, 48), [0, n - 1]]))
    exact = encode(sample, d)
    fair_exact = _fairseq_exact_rows(sample, d) if "fairseq f32" in fns else None
    rows = [Row(op, "floor: fill", ms["floor: fill"], 1.0, floor_ms=floor_of["floor: fill"])]
    for name, f in fns.items():
        if name == "floor: fill":
            continue
        got = np.asarray(f())[sample]
        ref = fair_exact if name == "fairseq f32" and fair_exact is not None else exact
        extra = peak_extra(lambda: _posenc_table(n, d, "auto")) if name == "posenc" else None
        err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
        rows.append(Row(op, name, ms[name], ratio[name], ulp_gap(got, ref), extra, err, floor_of[name]))
    return rows


def _scaling(quick: bool, repeats: int) -> tuple[tuple[int, int, float], ...]:
    shapes = ((2048, 256), (8192, 256), (32768, 256)) if quick else (
        (4096, 256), (16384, 256), (65536, 256), (65536, 1024), (262144, 512))
    out = []
    for n, d in shapes:
        ms = time_side_by_side({"t": functools.partial(_posenc_table, n, d, "auto")}, repeats)["t"]
        out.append((n, d, ms * 1e6 / (n * d)))
    return tuple(out)


def run(
    *,
    quick: bool = False,
    repeats: int | None = None,
    shapes: tuple[tuple[int, int], ...] | None = None,
    scaling: bool = True,
    extra: list[Callable[[int], list[Row]]] | None = None,
    grids: bool = True,
    tables: bool = True,
) -> Report:
    """Run the benchmark.

    Args:
        quick: small shapes and few repetitions (seconds, not minutes).
        repeats: repetitions per method (default 3 quick, 7 full).
        shapes: table shapes ``(N, d)`` to time instead of the defaults.
        scaling: also time tables of growing size (the linearity curve).
        extra: more row producers ``f(repeats) -> [Row]`` (the torch
            benchmarks register theirs here).
        grids: also time the grid rows (:mod:`posenc.bench.grid_rows`: a 2-D
            sinusoid table and M-RoPE cos/sin).
        tables: time the NumPy table rows (False: only the grids and ``extra``).

    Returns:
        A :class:`Report`.
    """
    reps = repeats if repeats is not None else (3 if quick else 7)
    rows: list[Row] = []
    for n, d in (shapes or (QUICK_TABLE_SHAPES if quick else TABLE_SHAPES)) if tables else ():
        rows.extend(_table_rows(n, d, reps))
    if grids:
        from .grid_rows import MIN_REPEATS
        from .grid_rows import producers as grid_producers

        for producer in grid_producers(quick=quick):
            rows.extend(producer(repeats if repeats is not None else max(reps, MIN_REPEATS)))
    for producer in extra or []:
        rows.extend(producer(reps))
    return Report(machine_line(), tuple(rows), _scaling(quick, reps) if scaling else ())


