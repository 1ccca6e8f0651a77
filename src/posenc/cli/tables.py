"""``posenc table``: rows of the encoding, to stdout or to a file, streamed in chunks.

Rows are computed ``CHUNK_BYTES`` at a time with :func:`posenc.table` and
written as they come, so a table larger than memory goes to disk while
holding one chunk. A file is written atomically (:func:`posenc.cli.files.atomic_file`):
aside, then renamed, so an interrupted or failed write (Ctrl-C, SIGTERM, a
full disk, a file-size limit) leaves the old file as it was and nothing
else; the size is checked against the free space before the first byte.
A ``.npy`` is its header followed by the rows' bytes, written with plain
writes (no memory map: on a full disk that is a bus error).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from ..errors import check_length, check_span
from ..sinusoidal.encoding import table
from ._base import CommandError, add_output_options, channel_roles, command, emit_json, fixed, integer, model_options
from .files import Expected, atomic_file

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
            yield a, table(b - a, args.d_model, start=args.start + a, base=args.base,
                                  layout=args.layout, dtype=args.dtype)
            bar.update(b)
    finally:
        bar.close()


def _columns(args: argparse.Namespace) -> list[str]:
    return [f"{fn}{i}" for i, fn in channel_roles(args.d_model, args.layout)]


def _npy_header(dt: np.dtype, shape: tuple[int, int]) -> bytes:
    """The ``.npy`` header (format 1.0) of a C-order array: written first, then the rows as raw bytes."""
    buf = io.BytesIO()
    plain = tuple(int.__index__(s) for s in shape)  # NumPy writes the shape by repr: digits only
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": plain}
    )
    return buf.getvalue()


def _csv_parts(args: argparse.Namespace, n: int) -> Iterator[str]:
    yield ",".join(["position", *_columns(args)]) + "\n"
    fmt = ["%d"] + [_CSV_FORMAT[args.dtype]] * args.d_model
    for a, chunk in _chunks(args, n):
        pos = np.arange(args.start + a, args.start + a + len(chunk), dtype=np.float64)
        text = io.StringIO()
        np.savetxt(text, np.column_stack([pos, chunk.astype(np.float64)]), fmt=fmt, delimiter=",")
        yield text.getvalue()


def _head(args: argparse.Namespace, n: int) -> dict[str, object]:
    return {"start": args.start, "length": n, "d_model": args.d_model, "base": args.base, "layout": args.layout,
            "dtype": args.dtype, "columns": _columns(args)}


def _json_parts(args: argparse.Namespace, n: int) -> Iterator[str]:
    head = _head(args, n)
    yield json.dumps(head)[:-1] + ', "table": ['
    first = True
    for _, chunk in _chunks(args, n):
        rows = [json.dumps(row) for row in chunk.astype(np.float64).tolist()]
        yield ("\n" if first else ",\n") + ",\n".join(rows)
        first = False
    yield "\n]}\n"


def _write_json(fh: IO[str], args: argparse.Namespace, n: int) -> None:
    for part in _json_parts(args, n):
        fh.write(part)


def _samples(args: argparse.Namespace, n: int) -> dict[int, np.ndarray]:
    """Rows the file must read back as, each computed on its own: the first and last, both sides of the
    first chunk's end, the middle."""
    per_chunk = max(1, CHUNK_BYTES // (8 * args.d_model))
    at = sorted({i for i in (0, per_chunk - 1, per_chunk, n // 2, n - 1) if 0 <= i < n})
    return {i: table(1, args.d_model, start=args.start + i, base=args.base, layout=args.layout,
                            dtype=args.dtype)[0] for i in at}


def _expected(args: argparse.Namespace, suffix: str, n: int) -> Expected:
    """What ``posenc table --out`` must read back as, in each format (:mod:`posenc.cli.proofs`)."""
    rows, shape = _samples(args, n), (n, args.d_model)
    if suffix == ".json":
        return Expected(shape=shape, dtype=args.dtype, rows=rows, key="table", fields=_head(args, n))
    if suffix == ".csv":
        return Expected(shape=shape, dtype=args.dtype, rows=rows, header=("position", *_columns(args)),
                        counter=args.start)
    return Expected(shape=shape, dtype=args.dtype, rows=rows)


def _write_file(path: Path, suffix: str, args: argparse.Namespace, n: int) -> None:
    """Write the table to ``path`` atomically (see :mod:`posenc.cli.files`): the old file or the whole new one,
    read back before it is renamed in."""
    linger = bool(getattr(args, "as_command", False))
    if suffix == ".npy":
        dt = np.dtype(args.dtype)
        header = _npy_header(dt, (n, args.d_model))
        with atomic_file(path, size=len(header) + n * args.d_model * dt.itemsize, linger=linger) as out:
            out.expect = _expected(args, suffix, n)  # once the file is known to fit
            out.write(header)
            for _, chunk in _chunks(args, n):
                out.write(np.ascontiguousarray(chunk))
        return
    # text: at least one digit and one separator per value; checked before the first byte
    parts = _csv_parts(args, n) if suffix == ".csv" else _json_parts(args, n)
    with atomic_file(path, at_least=2 * n * (args.d_model + 1), linger=linger) as out:
        out.expect = _expected(args, suffix, n)
        for part in parts:
            out.write(part.encode("utf-8"))


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
    check_span(args.start, n)  # first: a message about start … start+length-1 names both as typed
    # every check of table, first and last position included, before any file is touched
    table(0, args.d_model, start=args.start, base=args.base, layout=args.layout, dtype=args.dtype)
    table(min(n, 1), args.d_model, start=args.start + max(n - 1, 0), base=args.base, layout=args.layout,
                 dtype=args.dtype)
    if args.out is None:
        (_write_json if args.json else _write_text)(sys.stdout, args, n)
        return 0
    path = Path(args.out)
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise CommandError(f"--out must end in .npy, .csv or .json, got {args.out!r}")
    _write_file(path, suffix, args, n)
    size = path.stat().st_size
    if args.json:
        emit_json({"out": str(path), "rows": n, "d_model": args.d_model, "dtype": args.dtype, "bytes": size})
    else:
        print(f"wrote {path}: {n} rows × {args.d_model} channels, {args.dtype}, positions {args.start} … "
              f"{args.start + n - 1} ({size:,} bytes)")
    return 0
