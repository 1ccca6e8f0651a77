"""posenc.cli.proofs: a written file is read back as its format before it is renamed over the user's (issue 31 §2).

Good files come from the consumers' own writers (``np.save``, ``np.savez``,
``json.dumps``, matplotlib); damaged ones are those files with a byte
flipped, cut short or followed by more. The streaming JSON check is held to
``json.loads``'s verdict on the same documents.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import posenc.cli.files as files
import posenc.cli.proofs as proofs
from posenc.cli.file_set import write_set
from posenc.cli.proofs import Expected, Unreadable, json_grammar, proof_for


def _prove(path: Path, expect: Expected | None = None) -> None:
    proof_for(path)(path, expect, lambda: None)


# ---------------------------------------------------------------- .npy / .npz


@pytest.mark.parametrize("mapped", [False, True], ids=["read", "memory-mapped"])
def test_an_npy_reads_back_with_its_shape_dtype_and_rows(tmp_path, monkeypatch, mapped):
    if mapped:
        monkeypatch.setattr(proofs, "FULL_READ", 0)
    arr = np.arange(24, dtype=np.float32).reshape(6, 4) / 7
    path = tmp_path / "t.npy"
    np.save(path, arr)
    good = Expected(shape=(6, 4), dtype="float32", rows={0: arr[0], 5: arr[5]})
    _prove(path, good)
    for wrong, says in [(Expected(shape=(6, 5)), "shape"), (Expected(dtype="float64"), "dtype"),
                        (Expected(dtype="float32", rows={5: arr[4]}), "row 5"),
                        (Expected(dtype="float32", rows={0: -0.0 * arr[0]}), "row 0")]:  # -0.0 is not 0.0
        with pytest.raises(Unreadable, match=says):
            _prove(path, wrong)
    data = path.read_bytes()
    for damaged, says in [(data + b"\0", "bytes where its header describes"), (data[:-1], "np.load refuses"),
                          (data.replace(b"(6, 4)", b"(6e0,4)"), "np.load refuses")]:
        path.write_bytes(damaged)
        with pytest.raises(Unreadable, match=says):
            _prove(path, good)


def test_an_npz_reads_back(tmp_path):
    path = tmp_path / "t.npz"
    np.savez(path, table=np.ones((2, 3)))
    _prove(path, Expected(key="table", shape=(2, 3), rows={1: np.ones(3)}))
    with pytest.raises(Unreadable, match="no member"):
        _prove(path, Expected(key="other"))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(Unreadable, match=r"np\.load refuses"):
        _prove(path)


# ---------------------------------------------------------------- JSON

GOOD_JSON = ["{}", "[]", "0", "-0.5e-3", '"a\\u00e9\\n"', '{"a": [1, {"b": null}], "c": true}', " [1,\n 2] \n",
             "false", '"é"', "[[[]]]", '{"": ""}', "1E+2"]
BAD_JSON = ["", "[1,]", '{"a"}', '{"a": 1,}', "01", "1.", ".5", "[1 2]", '"\x01"', '{"a": 1}}', "[", "NaN",
            "Infinity", "tru", '"abc', "{1: 2}", "[]]", "1 2", "[-]", '"\\x"', "+1", "[1,\n]", '{"a":\n}', "\ufeff[]"]


@pytest.mark.parametrize("text", GOOD_JSON + BAD_JSON)
def test_the_streaming_json_check_agrees_with_json_loads(tmp_path, text):
    path = tmp_path / "d.json"
    path.write_text(text, encoding="utf-8")
    try:
        json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        loads = True
    except ValueError:
        loads = False
    assert loads == (text in GOOD_JSON)
    try:
        json_grammar(path)
        streamed = True
    except Unreadable:
        streamed = False
    assert streamed == loads


def test_a_json_table_reads_back_with_its_fields_and_rows(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"length": 2, "table": [[0.5, 1.0], [0.25, -0.0]]}))
    good = Expected(shape=(2, 2), dtype="float64", key="table", fields={"length": 2}, rows={1: [0.25, -0.0]})
    _prove(path, good)
    for wrong, says in [(Expected(fields={"length": 3}), "length"), (Expected(key="rows"), "no list"),
                        (Expected(key="table", shape=(3, 2)), "2 rows"),
                        (Expected(key="table", dtype="float64", rows={1: [0.25, 0.0]}), "row 1")]:
        with pytest.raises(Unreadable, match=says):
            _prove(path, wrong)
    path.write_text('{"table": [[NaN]]}')
    with pytest.raises(Unreadable, match=r"json\.loads refuses"):
        _prove(path)
    monkeypatch.setattr(proofs, "FULL_READ", 0)  # a large file: the grammar, streamed
    path.write_text('{"table": [[1.0],\n[2.0],\n]}')
    with pytest.raises(Unreadable, match="JSON grammar"):
        _prove(path)


# ---------------------------------------------------------------- CSV


def test_a_csv_reads_back_row_by_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("position,sin0,cos0\n5,0.5,1\n6,-0.25,1e-05\n")
    good = Expected(shape=(2, 2), dtype="float64", header=("position", "sin0", "cos0"), counter=5,
                    rows={1: [-0.25, 1e-05]})
    _prove(path, good)
    for text, says in [("position,sin0,cos0\n5,0.5,1\n6,-0.25\n", "line 3"), ("position,sin0,cos0\n5,0.5,1\n",
                       "1 rows"), ("position,sin0,cos0\n5,0.5,1\n7,-0.25,1e-05\n", "position 7"),
                       ("position,sin0,cos0\n5,0.5,1\n6,-0.25,1e-04\n", "row 1"), ("pos,a,b\n", "header"),
                       ("position,sin0,cos0\n5,0.5,1\n6,-0.25,x\n", "line 3"),
                       ("position,sin0,cos0\n5,0.5,1\n6,-0.25,1e-05", "line 3")]:
        path.write_text(text)
        with pytest.raises(Unreadable, match=says):
            _prove(path, good)


# ---------------------------------------------------------------- figures and pages


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = tmp_path_factory.mktemp("figures")
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    fig.savefig(folder / "f.png", format="png", dpi=20)
    fig.savefig(folder / "f.svg", format="svg")
    plt.close(fig)
    return folder


def test_a_png_has_its_signature_chunks_and_crcs(figures, tmp_path):
    data = (figures / "f.png").read_bytes()
    path = tmp_path / "f.png"
    path.write_bytes(data)
    _prove(path)
    middle = len(data) // 2
    for damaged, says in [(data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1:], "CRC|runs past"),
                          (data[:-1], "cut short|runs past"), (data + b"\0", "nothing after"), (b"", "signature"),
                          (data[:8] + data[33:], "IHDR")]:
        path.write_bytes(damaged)
        with pytest.raises(Unreadable, match=says):
            _prove(path)


def test_an_svg_parses_with_an_svg_root(figures, tmp_path):
    path = tmp_path / "f.svg"
    path.write_bytes((figures / "f.svg").read_bytes())
    _prove(path)
    path.write_bytes((figures / "f.svg").read_bytes()[:-20])
    with pytest.raises(Unreadable, match="XML"):
        _prove(path)
    path.write_text("<html/>")
    with pytest.raises(Unreadable, match="not svg"):
        _prove(path)


@pytest.mark.parametrize(("page", "good"), [
    ("<!DOCTYPE html><html><head></head><body><p>x</body></html>\n", True),
    ("<!DOCTYPE html><html><body><script>let a = '</html>'</script></body></html>", True),
    ("<!DOCTYPE html><html><body><p>x</body>", False),  # cut before its end
    ("<html><body></body></html>", False),  # no doctype
    ("<!DOCTYPE html><html><body></body></html><p>", False),
    ("<!DOCTYPE html><html><body><script>x</body></html>", False),  # the script never closes: it swallows the end
    ("", False),
])
def test_an_html_page_is_whole(tmp_path, page, good):
    path = tmp_path / "index.html"
    path.write_text(page, encoding="utf-8")
    if good:
        _prove(path)
    else:
        with pytest.raises(Unreadable, match=r"html\.parser"):
            _prove(path)


# ---------------------------------------------------------------- the writers


def test_a_writer_without_a_proof_is_refused_before_anything(tmp_path):
    with pytest.raises(ValueError, match="no proof"), files.atomic_file(tmp_path / "t.bin"):
        pass
    with pytest.raises(ValueError, match="no proof"):
        write_set({tmp_path / "a.png": b"", tmp_path / "b.dat": b""})
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_does_not_read_back_is_not_renamed_in(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"old": 1}')
    with pytest.raises(files.Unproven) as caught, files.atomic_file(path) as out:
        out.write(b'{"new": ')
    assert caught.value.filename == str(path) and "json.loads refuses it" in caught.value.strerror
    assert caught.value.strerror.endswith("; the old file is unchanged")
    assert path.read_text() == '{"old": 1}' and [p.name for p in tmp_path.iterdir()] == ["t.json"]
    with pytest.raises(files.Unproven, match="row 0"), files.atomic_file(tmp_path / "n.npy") as out:
        out.expect = Expected(rows={0: np.zeros(2, np.float32)}, dtype="float32")
        buf = __import__("io").BytesIO()
        np.save(buf, np.ones((1, 2), np.float32))
        out.write(buf.getvalue())
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no file was created


def test_a_set_with_a_file_that_does_not_read_back_changes_nothing(tmp_path):
    old = {tmp_path / "a.json": b"[1]", tmp_path / "index.html": b"old page"}
    for p, data in old.items():
        p.write_bytes(data)
    with pytest.raises(files.Unproven, match=r"html\.parser.*nothing in .* was changed"):
        write_set({tmp_path / "a.json": b"[2]", tmp_path / "index.html": b"<!DOCTYPE html><html><body>"})
    assert {p: p.read_bytes() for p in old} == old and len(list(tmp_path.iterdir())) == 2


def test_writes_are_refused_while_a_message_is_worded(tmp_path):
    with files.refusing_writes():
        with pytest.raises(files.WritesRefused), files.atomic_file(tmp_path / "t.json"):
            pass
        with pytest.raises(files.WritesRefused):
            write_set({tmp_path / "a.json": b"[]"})
    assert list(tmp_path.iterdir()) == []
    with files.atomic_file(tmp_path / "t.json") as out:
        out.write(b"[]")
    assert (tmp_path / "t.json").read_bytes() == b"[]"
