"""Proofs that a written file reads back: run on the temporary, before it is renamed over the user's file.

A writer can be right byte by byte and still leave a file nothing can
read: the command once wrote a ``.npy`` whose header said ``(1e6, 4)``,
which ``np.load`` refuses (the user's old file was gone by then). So
:func:`posenc.cli.files.atomic_file` and :func:`posenc.cli.file_set.write_set`
read every file back, chosen by its suffix, with the reader its consumer
uses, before the rename:

- ``.npy``: :func:`numpy.load` (memory-mapped above :data:`FULL_READ`
  bytes); the shape, the dtype, the size (no byte after the data) and
  sampled rows, bit for bit, against :class:`Expected`.
- ``.npz``: :func:`numpy.load`, every member read.
- ``.json``: :func:`json.loads`, strict (no ``NaN``/``Infinity``), then the
  fields and the table's rows of :class:`Expected`; above :data:`FULL_READ`
  bytes a streaming check of the JSON grammar (RFC 8259), line by line, in
  constant memory.
- ``.csv``: every line has the header's number of numeric fields, the rows
  counted, the first column counting up, sampled rows equal after parsing.
- ``.png``: the signature, every chunk's length and CRC-32, ``IHDR`` first,
  ``IDAT`` present, ``IEND`` last with nothing after it (the PNG
  specification, section 5).
- ``.svg``: parses as XML whose root is ``svg``.
- ``.html``: :class:`html.parser.HTMLParser` sees the doctype, ``<html>``
  first, ``</body>`` and ``</html>`` last, nothing but space after it.
- ``.txt``: UTF-8.

A failed proof is :class:`Unreadable`, turned by the writers into one
``OSError`` naming the file, the old file kept. A suffix without a proof is
refused before anything is written: every writer proves what it writes.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

__all__ = ["FULL_READ", "PROOFS", "Expected", "Unreadable", "proof_for"]

#: Files up to this size are read back whole; larger ones streamed or memory-mapped (tests shrink it).
FULL_READ = 64 << 20

Poll = Callable[[], None]


class Unreadable(Exception):
    """The file written does not read back as its format, or not as what was meant; the message says how."""


@dataclass(frozen=True)
class Expected:
    """What a file must hold beyond being well formed.

    Attributes:
        shape: ``.npy``: the array's; ``.json``/``.csv``: the table's (rows, values per row).
        dtype: the values' dtype name (``"float32"``); sampled rows compare in it, bit for bit.
        rows: row index -> that row's values, as they should read back.
        key: ``.json``: the member holding the table, a list of rows.
        fields: ``.json``: members the document must hold, with their values.
        header: ``.csv``: the first line's fields.
        counter: ``.csv``: the first column holds ``counter + row`` (the positions), before the values.
    """

    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    rows: Mapping[int, Any] = field(default_factory=dict)
    key: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    header: tuple[str, ...] | None = None
    counter: int | None = None


def _same_row(got: Any, want: Any, dtype: str | None) -> bool:
    import numpy as np

    dt = np.dtype(dtype or np.float64)
    a, b = np.asarray(got, dtype=np.float64).astype(dt), np.asarray(want).astype(dt)
    return a.shape == b.shape and a.tobytes() == b.tobytes()  # bits: -0.0 is not 0.0


def _check_rows(table: Any, expect: Expected, where: str) -> None:
    for i, want in expect.rows.items():
        if not _same_row(table[i], want, expect.dtype):
            raise Unreadable(f"{where} row {i} reads back otherwise than it was computed")


# ---------------------------------------------------------------- NumPy


def _npy_offset(path: Path) -> int:
    import numpy as np

    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        read(f)
        return f.tell()


def _npy(path: Path, expect: Expected | None, poll: Poll) -> None:
    import numpy as np

    size = path.stat().st_size
    try:
        arr = np.load(path, mmap_mode="r" if size > FULL_READ else None, allow_pickle=False)
        offset = _npy_offset(path)
    except Exception as exc:  # whatever np.load says, the file does not load
        raise Unreadable(f"np.load refuses it: {' '.join(str(exc).split())[:200]}") from None
    if offset + arr.nbytes != size:
        raise Unreadable(f"{size} bytes where its header describes {offset + arr.nbytes}")
    if expect is None:
        return
    if expect.shape is not None and arr.shape != expect.shape:
        raise Unreadable(f"np.load gives shape {arr.shape}, expected {expect.shape}")
    if expect.dtype is not None and arr.dtype != np.dtype(expect.dtype):
        raise Unreadable(f"np.load gives dtype {arr.dtype}, expected {expect.dtype}")
    poll()
    _check_rows(arr, expect, "np.load:")


def _npz(path: Path, expect: Expected | None, poll: Poll) -> None:
    import numpy as np

    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as archive:  # a path leaks on a bad zip
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:  # whatever np.load says, the file does not load
        raise Unreadable(f"np.load refuses it: {' '.join(str(exc).split())[:200]}") from None
    if expect is not None and expect.key is not None:
        if expect.key not in arrays:
            raise Unreadable(f"np.load finds no member {expect.key!r}")
        arr = arrays[expect.key]
        if expect.shape is not None and arr.shape != expect.shape:
            raise Unreadable(f"member {expect.key!r} has shape {arr.shape}, expected {expect.shape}")
        _check_rows(arr, expect, f"member {expect.key!r}")


# ---------------------------------------------------------------- JSON


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON value")


def _json(path: Path, expect: Expected | None, poll: Poll) -> None:
    if path.stat().st_size > FULL_READ:
        json_grammar(path, poll)
        return
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unreadable(f"json.loads refuses it: {exc}") from None
    if expect is None:
        return
    for key, value in expect.fields.items():
        if not isinstance(doc, dict) or key not in doc or doc[key] != value:
            got = doc.get(key, "nothing") if isinstance(doc, dict) else "no object"
            raise Unreadable(f"json.loads gives {key} = {got!r}, expected {value!r}")
    if expect.key is None:
        return
    table = doc.get(expect.key) if isinstance(doc, dict) else None
    if not isinstance(table, list):
        raise Unreadable(f"json.loads finds no list {expect.key!r}")
    if expect.shape is not None:
        n, width = expect.shape
        if len(table) != n or not all(isinstance(r, list) and len(r) == width for r in table):
            raise Unreadable(f"json.loads gives {len(table)} rows, expected {n} rows of {width} values")
    _check_rows(table, expect, "json.loads:")


#: One JSON token (RFC 8259): a string, a number, a literal, or punctuation; leading space skipped.
_TOKEN = re.compile(r'[ \t\r\n]*(?:(?P<s>"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
                    r"|(?P<n>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
                    r"|(?P<l>true|false|null)|(?P<p>[][{}:,]))")
_SPACE = re.compile(r"[ \t\r\n]*")


def json_grammar(path: Path, poll: Poll = lambda: None) -> None:
    """Raise :class:`Unreadable` unless ``path`` is one JSON value, read line by line in constant memory.

    Exact because no JSON token holds a raw line break (strings may not), so
    every token lies within one line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = p.write_text('{"a": [1, 2.5e3,\\n -0, "x\\\\n"], "b": null}')
    >>> json_grammar(p)
    >>> _ = p.write_text('{"a": [1, 2,]}')
    >>> json_grammar(p)
    Traceback (most recent call last):
    ...
    posenc.cli.proofs.Unreadable: JSON grammar: ']' where a value belongs, line 1
    """
    stack: list[str] = []
    want = "value"  # value | first (a value or ']') | key | firstkey (a key or '}') | colon | next | end
    with open(path, encoding="utf-8", errors="strict", newline="") as fh:
        try:
            for number, line in enumerate(fh, 1):
                if number % 4096 == 0:
                    poll()
                at, end = 0, len(line)
                while True:
                    at = _SPACE.match(line, at).end()  # type: ignore[union-attr]
                    if at >= end:
                        break
                    m = _TOKEN.match(line, at)
                    if m is None:
                        raise Unreadable(f"JSON grammar: no token at {line[at:at + 12]!r}, line {number}")
                    want = _step(stack, want, m, number)
                    at = m.end()
        except UnicodeDecodeError as exc:
            raise Unreadable(f"not UTF-8: {exc.reason}") from None
    if want != "end":
        raise Unreadable("JSON grammar: the document ends early")


def _step(stack: list[str], want: str, m: re.Match[str], line: int) -> str:
    tok = m.group("p")
    if want in ("value", "first"):
        if tok in ("[", "{"):
            stack.append(tok)
            return "first" if tok == "[" else "firstkey"
        if tok == "]" and want == "first":
            stack.pop()
            return "next" if stack else "end"
        if tok is None:
            return "next" if stack else "end"
    elif want in ("key", "firstkey"):
        if m.group("s") is not None:
            return "colon"
        if tok == "}" and want == "firstkey":
            stack.pop()
            return "next" if stack else "end"
    elif want == "colon" and tok == ":":
        return "value"
    elif want == "next" and tok == ",":
        return "value" if stack[-1] == "[" else "key"
    elif want == "next" and tok in ("]", "}") and stack[-1] == {"]": "[", "}": "{"}[tok]:
        stack.pop()
        return "next" if stack else "end"
    raise Unreadable(f"JSON grammar: {m.group().strip()!r} where {_WANTS[want]} belongs, line {line}")


_WANTS = {"value": "a value", "first": "a value", "key": "a key", "firstkey": "a key", "colon": "':'",
          "next": "',' or a closing bracket", "end": "nothing"}


# ---------------------------------------------------------------- CSV

_CSV_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def _csv(path: Path, expect: Expected | None, poll: Poll) -> None:
    rows = 0
    with open(path, encoding="utf-8", errors="strict", newline="") as fh:
        try:
            first = fh.readline()
            if not first.endswith("\n"):
                raise Unreadable("no header line")
            head = first[:-1].split(",")
            if expect is not None and expect.header is not None and tuple(head) != expect.header:
                raise Unreadable(f"its header is {first[:80]!r}, expected {','.join(expect.header)[:80]!r}")
            line_re = re.compile(_CSV_NUMBER + ("," + _CSV_NUMBER) * (len(head) - 1))
            for line in fh:
                if rows % 4096 == 0:
                    poll()
                if not line.endswith("\n") or line_re.fullmatch(line, 0, len(line) - 1) is None:
                    raise Unreadable(f"line {rows + 2} is not {len(head)} numbers separated by commas")
                _csv_row(line[:-1], rows, expect)
                rows += 1
        except UnicodeDecodeError as exc:
            raise Unreadable(f"not UTF-8: {exc.reason}") from None
    if expect is not None and expect.shape is not None and rows != expect.shape[0]:
        raise Unreadable(f"{rows} rows, expected {expect.shape[0]}")


def _csv_row(text: str, i: int, expect: Expected | None) -> None:
    if expect is None:
        return
    if expect.counter is not None and int(text.split(",", 1)[0]) != expect.counter + i:
        raise Unreadable(f"row {i} is at position {text.split(',', 1)[0]}, expected {expect.counter + i}")
    if i in expect.rows:
        values = [float(v) for v in text.split(",")[1 if expect.counter is not None else 0:]]
        if not _same_row(values, expect.rows[i], expect.dtype):
            raise Unreadable(f"row {i} reads back otherwise than it was computed")


# ---------------------------------------------------------------- figures and pages

_PNG = b"\x89PNG\r\n\x1a\n"


def _png(path: Path, expect: Expected | None, poll: Poll) -> None:
    data = path.read_bytes()
    if not data.startswith(_PNG):
        raise Unreadable("no PNG signature")
    at, kinds = len(_PNG), []
    while at < len(data):
        if at + 12 > len(data):
            raise Unreadable(f"a chunk cut short at byte {at}")
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 4:at + 8 + length]
        if at + 12 + length > len(data) or len(body) != 4 + length:
            raise Unreadable(f"chunk {kind!r} runs past the end")
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        if zlib.crc32(body) != crc:
            raise Unreadable(f"chunk {kind!r} at byte {at} fails its CRC")
        kinds.append(kind)
        at += 12 + length
        if kind == b"IEND":
            break
    if not kinds or kinds[0] != b"IHDR" or b"IDAT" not in kinds or kinds[-1] != b"IEND" or at != len(data):
        raise Unreadable("not IHDR first, IDAT, and IEND last with nothing after it")


def _svg(path: Path, expect: Expected | None, poll: Poll) -> None:
    from xml.etree import ElementTree

    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as exc:
        raise Unreadable(f"the XML parser refuses it: {exc}") from None
    if root.tag.rsplit("}", 1)[-1] != "svg":
        raise Unreadable(f"its root is {root.tag!r}, not svg")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.doctype = False
        self.tags: list[str] = []
        self.after = ""

    def handle_decl(self, decl: str) -> None:
        self.doctype = self.doctype or decl.lower().startswith("doctype html")

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        self.after = ""

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        self.after = ""

    def handle_data(self, data: str) -> None:
        self.after += data


def _html(path: Path, expect: Expected | None, poll: Poll) -> None:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8: {exc.reason}") from None
    page = _Page()
    page.feed(text)
    page.close()
    if not page.doctype or not page.tags or page.tags[0] != "html":
        raise Unreadable("html.parser finds no <!DOCTYPE html> and <html> first")
    if page.tags[-1] != "/html" or "/body" not in page.tags or page.after.strip():
        raise Unreadable("html.parser finds no </body> and </html> at its end")


def _text(path: Path, expect: Expected | None, poll: Poll) -> None:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8: {exc.reason}") from None


Proof = Callable[[Path, "Expected | None", Poll], None]

#: Each suffix and the proof of a file that ends in it.
PROOFS: dict[str, Proof] = {".npy": _npy, ".npz": _npz, ".json": _json, ".csv": _csv, ".png": _png, ".svg": _svg,
                            ".html": _html, ".htm": _html, ".txt": _text}


def proof_for(path: Path) -> Proof:
    """The proof of a file named ``path``, by its suffix; a ValueError (a writer's mistake) when none is known.

    >>> proof_for(Path("t.NPY")).__name__
    '_npy'
    """
    proof = PROOFS.get(path.suffix.lower())
    if proof is None:
        raise ValueError(f"no proof that a {path.suffix or 'suffix-less'} file reads back: every writer proves "
                         f"what it writes (add one to posenc.cli.proofs.PROOFS)")
    return proof
