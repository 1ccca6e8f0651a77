"""``posenc table``: rows of the encoding, to stdout or to a file, streamed in chunks.

Rows are computed ``CHUNK_BYTES`` at a time with :func:`posenc.table` and
written as they come, so a table larger than memory goes to disk (``.npy``
through a memory map) while holding one chunk.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

import posenc

from ..errors import check_length
from ._base import CommandError, add_output_options, channel_roles, command, emit_json, fixed, integer, model_options

__all__ = ["CHUNK_BYTES"]

#: Bytes of float64 rows computed at a time (tests shrink it to force many chunks).
CHUNK_BYTES = 1 << 24

_SUFFIXES = (".npy", ".csv", ".json")
_CSV_FORMAT = {"float16": "%.5g", "float32": "%.9g", "float64": "%.17g"}  # enough digits to read back every bit


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--length", type=integer, required=True, metavar="N", help="rows (positions)")
    p.add_argument("--start", type=integer, default=0, metavar="S", help="first position (default 0)")
    model_options(p, layout=True, dtype=True)
    p.add_argument("--out", metavar="FILE", help="write .npy, .csv or .json (streamed); stdout when absent")
    add_output_options(p)


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.stream = sys.stderr
        self.on = total > 0 and bool(getattr(self.stream, "isatty", lambda: False)())

    def update(self, done: int) -> None:
        if self.on:
            frac = done / self.total
            bar = "#" * int(30 * frac)
            self.stream.write(f"\rposenc table [{bar:<30}] {100 * frac:5.1f}%  {done:,} of {self.total:,} rows")
            self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\n")
            self.stream.flush()


def _chunks(args: argparse.Namespace, n: int) -> Iterator[tuple[int, np.ndarray]]:
    rows = max(1, CHUNK_BYTES // (8 * args.d_model))
    bar = _Progress(n)
    try:
        for a in range(0, n, rows):
            b = min(n, a + rows)
            yield a, posenc.table(b - a, args.d_model, start=args.start + a, base=args.base,
                                  layout=args.layout, dtype=args.dtype)
            bar.update(b)
    finally:
        bar.close()


def _columns(args: argparse.Namespace) -> list[str]:
    return [f"{fn}{i}" for i, fn in channel_roles(args.d_model, args.layout)]


def _write_npy(path: Path, args: argparse.Namespace, n: int) -> None:
    dt = np.dtype(args.dtype)
    if n == 0:  # a zero-length memory map cannot be opened
        np.save(path, np.empty((0, args.d_model), dtype=dt))
        return
    # the header and the full-size file first; then one chunk mapped at a time, flushed and
    # unmapped, so memory stays at one chunk however large the table
    head = np.lib.format.open_memmap(path, mode="w+", dtype=dt, shape=(n, args.d_model))
    offset = head.offset
    del head
    try:
        for a, chunk in _chunks(args, n):
            part = np.memmap(path, dtype=dt, mode="r+", offset=offset + a * args.d_model * dt.itemsize,
                             shape=chunk.shape)
            part[:] = chunk
            part.flush()
            del part
    except BaseException:
        _discard(path)
        raise


def _discard(path: Path) -> None:
    """Remove a half-written table: worse than none."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_csv(fh: IO[str], args: argparse.Namespace, n: int) -> None:
    fh.write(",".join(["position", *_columns(args)]) + "\n")
    fmt = ["%d"] + [_CSV_FORMAT[args.dtype]] * args.d_model
    for a, chunk in _chunks(args, n):
        pos = np.arange(args.start + a, args.start + a + len(chunk), dtype=np.float64)
        np.savetxt(fh, np.column_stack([pos, chunk.astype(np.float64)]), fmt=fmt, delimiter=",")


def _write_json(fh: IO[str], args: argparse.Namespace, n: int) -> None:
    head = {"start": args.start, "length": n, "d_model": args.d_model, "base": args.base, "layout": args.layout,
            "dtype": args.dtype, "columns": _columns(args)}
    fh.write(json.dumps(head)[:-1] + ', "table": [')
    first = True
    for _, chunk in _chunks(args, n):
        for row in chunk.astype(np.float64).tolist():
            fh.write(("\n" if first else ",\n") + json.dumps(row))
            first = False
    fh.write("\n]}\n")


def _write_text(fh: IO[str], args: argparse.Namespace, n: int) -> None:
    dg = args.digits
    width = max(dg + 3, *(len(c) for c in _columns(args)))
    pw = max(len("pos"), len(str(args.start)), len(str(args.start + max(n - 1, 0))))
    fh.write(f"{'pos':>{pw}}  " + "  ".join(f"{c:>{width}}" for c in _columns(args)) + "\n")
    for a, chunk in _chunks(args, n):
        lines = [
            f"{args.start + a + r:>{pw}}  " + "  ".join(f"{fixed(v, dg):>{width}}" for v in row)
            for r, row in enumerate(chunk.astype(np.float64).tolist())
        ]
        fh.write("\n".join(lines) + "\n")


@command("table", "rows of the encoding for positions S … S+N-1; to stdout or a .npy/.csv/.json file", _setup)
def table_cmd(args: argparse.Namespace) -> int:
    n = check_length(args.length)
    # every check of posenc.table, first and last position included, before any file is touched
    posenc.table(0, args.d_model, start=args.start, base=args.base, layout=args.layout, dtype=args.dtype)
    posenc.table(min(n, 1), args.d_model, start=args.start + max(n - 1, 0), base=args.base, layout=args.layout,
                 dtype=args.dtype)
    if args.out is None:
        (_write_json if args.json else _write_text)(sys.stdout, args, n)
        return 0
    path = Path(args.out)
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise CommandError(f"--out must end in .npy, .csv or .json, got {args.out!r}")
    if suffix == ".npy":
        _write_npy(path, args, n)
    else:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            try:
                (_write_csv if suffix == ".csv" else _write_json)(fh, args, n)
            except BaseException:
                fh.close()
                _discard(path)
                raise
    size = path.stat().st_size
    if args.json:
        emit_json({"out": str(path), "rows": n, "d_model": args.d_model, "dtype": args.dtype, "bytes": size})
    else:
        print(f"wrote {path}: {n} rows × {args.d_model} channels, {args.dtype}, positions {args.start} … "
              f"{args.start + n - 1} ({size:,} bytes)")
    return 0
