"""A benchmark run and its table: the rows, the machine, the text a reader checks."""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field

import numpy as np

from ..support.concurrency import default_threads

__all__ = ["Report", "Row", "format_markdown", "format_report", "machine_line"]


@dataclass(frozen=True)
class Row:
    """One measured line of the benchmark table.

    Attributes:
        operation: what is computed, e.g. ``"table 65536x1024 f32"``.
        method: who computes it (``"floor: fill"``, ``"posenc"``, ``"torch tutorial f32"`` …).
        median_ms: median wall time over the repetitions.
        ratio: ``median_ms`` over ``floor_ms``.
        max_ulp: largest float32 ulp error on sampled rows, or None (floors).
            Near zero crossings a wrong value can be billions of ulps away.
        max_abs: largest absolute error on the same rows, or None.
        extra_memory: peak extra memory as a fraction of the output, or None.
        floor_ms: the median of the floor this row was timed beside (its own group's: the
            naive formulas run in a group of their own, beside a floor of their own).
    """

    operation: str
    method: str
    median_ms: float
    ratio: float
    max_ulp: float | None = None
    extra_memory: float | None = None
    max_abs: float | None = None
    floor_ms: float | None = None


@dataclass(frozen=True)
class Report:
    """A benchmark run: the machine it ran on and its rows."""

    machine: str
    rows: tuple[Row, ...]
    scaling: tuple[tuple[int, int, float], ...] = field(default=())  # (N, d, ns per value)


def machine_line() -> str:
    """CPU model, usable CPUs, NumPy/torch/numba versions and thread counts."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    parts = [cpu, f"{default_threads()} CPUs", f"numpy {np.__version__}"]
    try:
        import torch

        parts.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    except ImportError:
        parts.append("torch not installed")
    try:
        import numba

        parts.append(f"numba {numba.__version__} ({numba.get_num_threads()} threads)")
    except ImportError:
        parts.append("numba not installed (NumPy path)")
    return ", ".join(parts)


def _ms(x: float) -> str:
    """Milliseconds to 0.01, or to 4 significant digits below 1 ms: enough to redo each ratio."""
    return f"{x:.2f}" if x >= 1 else f"{x:.4g}"


def format_report(report: Report) -> str:
    """The report as an aligned text table; each ratio beside the floor it divides by.

    >>> print(format_report(Report("cpu", (Row("t", "posenc", 0.03, 1.5, 0.0, None, 0.0, 0.02),))))
    machine: cpu
    <BLANKLINE>
    operation  method  median ms  floor ms  x floor  max ulp  max abs err  extra mem
    ---------  ------  ---------  --------  -------  -------  -----------  ---------
    t          posenc       0.03      0.02     1.50        0      0.0e+00          -
    """
    head = ("operation", "method", "median ms", "floor ms", "x floor", "max ulp", "max abs err", "extra mem")
    body = [
        (
            r.operation,
            r.method,
            _ms(r.median_ms),
            "-" if r.floor_ms is None else _ms(r.floor_ms),
            f"{r.ratio:.2f}",
            "-" if r.max_ulp is None else f"{r.max_ulp:.0f}",
            "-" if r.max_abs is None else f"{r.max_abs:.1e}",
            "-" if r.extra_memory is None else f"{100 * r.extra_memory:.1f}%",
        )
        for r in report.rows
    ]
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    lines = [f"machine: {report.machine}", ""]
    for j, cells in enumerate((head, *body)):
        padded = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        lines.append("  ".join(padded))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    if report.scaling:
        lines += ["", "posenc table time against size (linear in N·d means a flat ns/value):"]
        lines += [f"  {n:>7} x {d:<5} {n * d:>11,} values  {ns:6.2f} ns/value" for n, d, ns in report.scaling]
    return "\n".join(lines)


def format_markdown(report: Report) -> str:
    """The report as a Markdown table (docs/generated/bench.md, the site's benchmarks page), posenc's ratios in bold.

    >>> rows = (Row("t", "floor: fill", 0.02, 1.0, floor_ms=0.02), Row("t", "posenc", 0.03, 1.5, 0.0, None, 0.0, 0.02))
    >>> print(format_markdown(Report("cpu", rows)))
    | operation | method | median ms | floor ms | × floor | max ulp | max abs err | extra mem |
    |---|---|---:|---:|---:|---:|---:|---:|
    | t | floor: fill | 0.02 | 0.02 | 1.00 |  |  |  |
    |  | **posenc** | 0.03 | 0.02 | **1.50** | 0 | 0 |  |
    """
    lines = ["| operation | method | median ms | floor ms | × floor | max ulp | max abs err | extra mem |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    last = None
    for r in report.rows:
        ours = r.method.startswith("posenc") and "NumPy only" not in r.method
        ratio = f"{r.ratio:.2f}"
        method = r.method.replace("|", "\\|")  # a pipe in a name would end its cell
        cells = (
            "" if r.operation == last else re.sub(r"(\d)x(\d)", "\\1×\\2", r.operation).replace("|", "\\|"),
            f"**{method}**" if ours else method,
            _ms(r.median_ms),
            "" if r.floor_ms is None else _ms(r.floor_ms),
            f"**{ratio}**" if ours else ratio,
            "" if r.max_ulp is None else f"{r.max_ulp:.0f}",
            "" if r.max_abs is None else ("0" if r.max_abs == 0 else f"{r.max_abs:.1e}"),
            "" if r.extra_memory is None else f"{100 * r.extra_memory:.1f}%",
        )
        lines.append("| " + " | ".join(cells) + " |")
        last = r.operation
    if report.scaling:
        shapes = ", ".join(f"{n}×{d}" for n, d, _ in report.scaling)
        times = ", ".join(f"{ns:.2f}" for _, _, ns in report.scaling)
        lines += ["", f"posenc's table time per value at {shapes}: {times} ns."]
    return "\n".join(lines)
