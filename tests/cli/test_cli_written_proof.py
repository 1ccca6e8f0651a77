"""Every file the command writes loads back with its consumer's reader, whatever spelling the numbers had.

Issue 31 §2: ``posenc table --length 1e6 --d-model 4 --out t.npy`` wrote a header
``{'shape': (1e6, 4), …}`` (the typed spelling, through repr) that ``np.load``
refused, and the command said it wrote the file. Each writer now proves the file
aside (``posenc.cli.files.atomic_file(proof=…)``) before renaming it into place.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest

import posenc
from cli_helpers import run
from posenc.cli import tables as cli_tables

# (length, d_model) as a user may type them, and the counts they mean
SPELLINGS = [("1e1", "4e0", 10, 4), ("1E1", "4", 10, 4), ("1_0", "0_4", 10, 4), ("+5", "4.0", 5, 4),
             ("5.0", "+4", 5, 4), ("10.0", "4", 10, 4)]


@pytest.mark.parametrize(("length", "d_model", "n", "d"), SPELLINGS)
@pytest.mark.parametrize("suffix", [".npy", ".csv", ".json"])
def test_a_table_written_under_any_spelling_loads_back(tmp_path, capsys, length, d_model, n, d, suffix):
    out = tmp_path / f"t{suffix}"
    code, _, err = run(capsys, "table", "--length", length, "--d-model", d_model, "--out", str(out))
    assert code == 0, err
    want = np.asarray(posenc.table(n, d), dtype=np.float64)
    if suffix == ".npy":
        got = np.load(out, allow_pickle=False)
        assert got.shape == (n, d) and got.dtype == np.float32 and np.array_equal(got, want.astype(np.float32))
    elif suffix == ".csv":
        rows = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
        assert rows.shape == (n, d + 1) and np.array_equal(rows[:, 0], np.arange(n))
        assert np.array_equal(rows[:, 1:].astype(np.float32), want.astype(np.float32))
    else:
        doc = json.loads(out.read_text())
        assert doc["length"] == n and doc["d_model"] == d and len(doc["table"]) == n
        assert np.array_equal(np.float32(doc["table"]), want.astype(np.float32))


@pytest.mark.parametrize(("length", "d_model", "n", "d"), SPELLINGS[:3])
def test_json_output_under_any_spelling_parses(capsys, length, d_model, n, d):
    code, out, _ = run(capsys, "table", "--length", length, "--d-model", d_model, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["length"] == n and doc["d_model"] == d and len(doc["table"]) == n


def test_a_file_that_does_not_read_back_is_not_renamed_and_exits_2(tmp_path, capsys, monkeypatch):
    out = tmp_path / "t.npy"
    out.write_bytes(b"the user's old file\n")
    real = cli_tables._npy_header

    def broken(dt, shape):  # the failure the old header had: a shape NumPy cannot read back
        return real(dt, shape).replace(b"(3, 4)", b"(3, 5)")

    monkeypatch.setattr(cli_tables, "_npy_header", broken)
    code, stdout, err = run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(out))
    assert code == 2 and stdout == "" and err.count("\n") == 1 and "does not read back" in err, err
    assert out.read_bytes() == b"the user's old file\n" and sorted(p.name for p in tmp_path.iterdir()) == ["t.npy"]


def test_the_page_written_is_a_whole_html_document(tmp_path, capsys):
    code, _, err = run(capsys, "page", "--out", str(tmp_path / "page"))
    assert code == 0, err
    text = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def handle_endtag(self, tag: str) -> None:
            self.seen.append(tag)

    parser = Tags()
    parser.feed(text)
    assert parser.seen[-2:] == ["body", "html"]


def test_a_figure_written_is_a_whole_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    out = tmp_path / "f.png"
    code, _, err = run(capsys, "plot", "wave", "--out", str(out))
    assert code == 0, err
    assert matplotlib.image.imread(out).ndim == 3


def test_png_and_html_proofs_refuse_a_cut_file(tmp_path):
    from posenc.cli.proofs import Unreadable, proof_for

    cut = tmp_path / "cut.png"
    cut.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    with pytest.raises(Unreadable):
        proof_for(cut)(cut, None, lambda: None)
    page = tmp_path / "p.html"
    page.write_text("<!DOCTYPE html>\n<html><body>")
    with pytest.raises(Unreadable):
        proof_for(page)(page, None, lambda: None)
