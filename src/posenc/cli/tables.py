"""``posenc table``: rows of the encoding, to stdout or to a file, streamed in chunks.

Rows are computed ``CHUNK_BYTES`` at a time with :func:`posenc.table` and
written as they come, so a table larger than memory goes to disk while
holding one chunk. A file is written atomically (:func:`posenc._files.atomic_file`):
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import numpy as np

import posenc

from .._files import atomic_file
from ..errors import check_length, check_span
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


def _npy_header(dt: np.dtype, shape: tuple[int, int]) -> bytes:
    """The ``.npy`` header (format 1.0) of a C-order array: written first, then the rows as raw bytes."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": shape}
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


def _json_parts(args: argparse.Namespace, n: int) -> Iterator[str]:
    head = {"start": args.start, "length": n, "d_model": args.d_model, "base": args.base, "layout": args.layout,
            "dtype": args.dtype, "columns": _columns(args)}
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


def _proof(args: argparse.Namespace, n: int, suffix: str) -> Callable[[Path], None]:
    """Reads a written table back with its consumer's reader: shape, dtype, columns, and the first and last rows."""
    d = int(args.d_model)

    def row(at: int) -> np.ndarray:  # computed when the proof runs: after the write, never before the checks
        return posenc.table(1, d, start=args.start + at, base=args.base, layout=args.layout, dtype=args.dtype)[0]

    def npy(path: Path) -> None:
        # NumPy's own header reader, then the first and last rows read in place: never the whole table in
        # memory, never a memory map (a bus error if the file changes under it)
        with path.open("rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(fh)  # what np.load reads, and refuses
            if shape != (n, d) or fortran or dtype != np.dtype(args.dtype):
                raise ValueError(f"it holds {dtype} {shape}, not {args.dtype} {(n, d)}")
            body = fh.tell()
            if n:
                first = np.fromfile(fh, dtype=dtype, count=d)
                fh.seek(body + (n - 1) * d * dtype.itemsize)
                last = np.fromfile(fh, dtype=dtype, count=d)
                if not (np.array_equal(first, row(0)) and np.array_equal(last, row(n - 1))):
                    raise ValueError("its first or last row differs from the table")
            if path.stat().st_size != body + n * d * dtype.itemsize:
                raise ValueError("its size is not its header's")

    def csv(path: Path) -> None:
        with path.open(encoding="utf-8") as fh:
            head = fh.readline().rstrip("\n").split(",")
            lines, last = 0, ""
            for lines, line in enumerate(fh, 1):  # noqa: B007 - the count and the last line are what is read
                last = line
        columns = ["position", *_columns(args)]
        if head != columns or lines != n:
            raise ValueError(f"it has {lines} rows of columns {head[:3]}…, not {n} of {columns[:3]}…")
        if n:
            got = last.rstrip("\n").split(",")  # _CSV_FORMAT's digits read back every bit
            if (len(got) != d + 1 or int(got[0]) != args.start + n - 1
                    or not np.array_equal(np.array(got[1:], dtype=np.float64).astype(args.dtype), row(n - 1))):
                raise ValueError("its last row differs from the table")

    def js(path: Path) -> None:
        with path.open(encoding="utf-8") as fh:
            got = json.load(fh)
        table = got.get("table") if isinstance(got, dict) else None
        if not isinstance(table, list) or len(table) != n or got.get("d_model") != d:
            raise ValueError(f"it does not hold a table of {n} rows of {d} channels")
        if n and [table[0], table[-1]] != [row(0).astype(np.float64).tolist(), row(n - 1).astype(np.float64).tolist()]:
            raise ValueError("its first or last row differs from the table")

    return {".npy": npy, ".csv": csv, ".json": js}[suffix]


def _write_file(path: Path, suffix: str, args: argparse.Namespace, n: int) -> None:
    """Write the table to ``path`` atomically (see :mod:`posenc._files`): the old file or the whole new one."""
    linger = bool(getattr(args, "as_command", False))
    if suffix == ".npy":
        dt = np.dtype(args.dtype)
        # plain ints: NumPy writes the header's shape by repr, and the command's numbers show as typed (1e6)
        header = _npy_header(dt, (int(n), int(args.d_model)))
        with atomic_file(path, size=len(header) + n * args.d_model * dt.itemsize, linger=linger,
                         proof=_proof(args, n, suffix)) as out:
            out.write(header)
            for _, chunk in _chunks(args, n):
                out.write(np.ascontiguousarray(chunk))
        return
    # text: at least one digit and one separator per value; checked before the first byte
    parts = _csv_parts(args, n) if suffix == ".csv" else _json_parts(args, n)
    with atomic_file(path, at_least=2 * n * (args.d_model + 1), linger=linger, proof=_proof(args, n, suffix)) as out:
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
    _write_file(path, suffix, args, n)
    size = path.stat().st_size
    if args.json:
        emit_json({"out": str(path), "rows": n, "d_model": args.d_model, "dtype": args.dtype, "bytes": size})
    else:
        print(f"wrote {path}: {n} rows × {args.d_model} channels, {args.dtype}, positions {args.start} … "
              f"{args.start + n - 1} ({size:,} bytes)")
    return 0
