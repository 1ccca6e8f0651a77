"""``posenc bench``: the speed of posenc against the naive forms, as ratios to the floor."""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from ..bench import format_markdown, format_report, run
from ..errors import PosEncError, check_d_model, show_value
from ..support.memory import check_size
from ._base import CommandError, command, emit_json, integer, integers

MAX_REPEATS = 1000  # a median of 1000 is as steady as it gets; more only runs longer
#: the groups of rows --only picks from: NumPy tables, grids, and each library's rows
GROUPS = ("tables", "grids", "torch", "timesteps", "hf", "jax", "vllm")


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="small shapes, few repetitions (seconds)")
    p.add_argument("--repeats", type=integer, default=None, metavar="N",
                   help="repetitions per method (default 3 with --quick, else 7)")
    p.add_argument("--shape", type=_shape, action="append", default=None, metavar="NxD",
                   help="time tables of this shape instead of the defaults (repeatable)")
    p.add_argument("--no-scaling", action="store_true", help="skip the time-against-size curve")
    p.add_argument("--only", choices=GROUPS, action="append", default=None, metavar="GROUP",
                   help=f"time only these groups of rows (repeatable; one of {', '.join(GROUPS)}), "
                        "without the scaling curve")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the rows as JSON")
    out.add_argument("--markdown", action="store_true",
                     help="print the rows as a Markdown table (the docs' benchmarks page)")


def _shape(text: str) -> tuple[int, int]:
    try:
        n, d = integers(text, "x")  # each side read as every count is (1e3x8); shown as typed below
    except (argparse.ArgumentTypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected a shape NxD such as 4096x512, got {show_value(text)}") from None
    if n < 1 or d < 2 or d % 2:
        raise argparse.ArgumentTypeError(f"expected N >= 1 and an even D >= 2, got {show_value(text)}")
    try:  # the widest encoding posenc builds, and a table this machine can hold (twice: posenc and the floor)
        check_d_model(d, "D")
        check_size((2 * n, d), np.float32, f"a {text} table")
    except PosEncError as exc:
        raise argparse.ArgumentTypeError(f"--shape {text}: {exc}") from None
    return int(n), int(d)


@command("bench", "time posenc against the usual formulas, side by side with the cost of writing the output", _setup)
def bench(args: argparse.Namespace) -> int:
    if args.repeats is not None and not 1 <= args.repeats <= MAX_REPEATS:
        raise CommandError(f"--repeats must be from 1 to {MAX_REPEATS}, got {show_value(args.repeats)}")
    only = set(args.only or GROUPS)
    extra = []
    try:
        from ..bench import timestep_rows, torch_rows

        extra += torch_rows.producers(quick=args.quick) if "torch" in only else []
        extra += timestep_rows.producers(quick=args.quick) if "timesteps" in only else []
        from ..bench.hf_rows import producers as hf_producers

        extra += hf_producers(quick=args.quick) if "hf" in only else []  # none without transformers
    except ImportError:
        pass  # no torch: the NumPy rows alone
    try:
        from ..bench.jax_rows import producers as jax_producers

        extra += jax_producers(quick=args.quick) if "jax" in only else []
    except ImportError:
        pass  # no jax: no JAX rows
    from ..bench.vllm_rows import producers as vllm_producers

    extra += vllm_producers(quick=args.quick) if "vllm" in only else []  # none without vllm
    shapes = tuple(args.shape) if args.shape else None
    scaling = not args.no_scaling and args.only is None
    report = run(quick=args.quick, repeats=args.repeats, shapes=shapes, scaling=scaling, extra=extra,
                 grids="grids" in only, tables="tables" in only)
    if args.json:
        emit_json(dataclasses.asdict(report))
    elif args.markdown:
        print(f"Machine: {report.machine}.\n")
        print(format_markdown(report))
    else:
        print(format_report(report))
    return 0
