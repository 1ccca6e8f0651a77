"""alibi, buckets and plot alibi|buckets|xpos from the command, tables and --json.

Expected numbers are written from the formulas here (slopes 2**(-8k/n), T5's
buckets from transformers, ζ_i = (2i/r + γ)/(1 + γ)), never read from posenc.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers.models.t5.modeling_t5 import T5Attention

from cli_helpers import run, run_json

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_alibi_table_for_twelve_heads(capsys) -> None:
    code, out, err = run(capsys, "alibi", "--heads", "12")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "12 heads" in lines[0] and "press" in lines[0]
    row = {int(parts[0]): parts for parts in (ln.split() for ln in lines[2:14])}
    assert row[0][1:4] == ["0.5", "2^-1", "2"] and row[7][1:4] == ["0.00390625", "2^-8", "256"]
    assert row[11][2] == "2^-3.5" and float(row[11][1]) == pytest.approx(2**-3.5, rel=1e-5)
    assert "heads 8 … 11 the odd terms of the 16-head one" in out


def test_alibi_json_full_precision(capsys) -> None:
    code, data = run_json(capsys, "alibi", "--heads", "12", "--penalty", "3")
    assert code == 0 and data["convention"] == "press" and data["penalty"] == 3.0
    want = [2.0 ** (-8 * k / 8) for k in range(1, 9)] + [2.0 ** (-k / 2) for k in (1, 3, 5, 7)]
    assert data["slopes"] == pytest.approx(want, rel=1e-15)
    assert data["distance"] == pytest.approx([3 / m for m in want], rel=1e-15)
    assert data["log2_slopes"][8] == pytest.approx(-0.5, rel=1e-15)


def test_alibi_mpt_bias_max(capsys) -> None:
    code, data = run_json(capsys, "alibi", "--heads", "4", "--bias-max", "16")
    assert code == 0 and data["convention"].startswith("mpt (alibi_bias_max=16")
    assert data["slopes"] == [2.0**-4, 2.0**-8, 2.0**-12, 2.0**-16]


def hf_first_distances(nb: int, md: int, bidirectional: bool) -> dict[int, int]:
    d = torch.arange(0, 4 * md)
    b = T5Attention._relative_position_bucket(-d, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    return {int(v): int(np.argmax(b.numpy() == int(v))) for v in torch.unique(b)}


@pytest.mark.parametrize("flags, nb, md, bidirectional", [
    ((), 32, 128, True), (("--unidirectional",), 32, 128, False),
    (("--num-buckets", "64", "--max-distance", "512"), 64, 512, True),
])
def test_buckets_json_against_transformers(capsys, flags, nb: int, md: int, bidirectional: bool) -> None:
    code, data = run_json(capsys, "buckets", *flags)
    assert code == 0 and data["num_buckets"] == nb and data["bidirectional"] is bidirectional
    firsts = {r["bucket"]: r["first"] for r in data["buckets"] if r["first"] is not None}
    assert firsts == hf_first_distances(nb, md, bidirectional)
    lasts = [r["last"] for r in data["buckets"]]
    assert lasts[-1] is None and all(lasts[k] == firsts[k + 1] - 1 for k in range(len(lasts) - 1))


def test_buckets_table(capsys) -> None:
    code, out, err = run(capsys, "buckets")
    assert code == 0 and err == ""
    assert "8 … 11" in out and "91 …" in out and "bucket 16 itself never" in out
    rows = [ln.split() for ln in out.splitlines()[2:18]]
    assert rows[0][:3] == ["0", "—", "0"] and rows[8][:2] == ["8", "24"]


@pytest.mark.parametrize("argv, fragment", [
    (("alibi", "--heads", "0"), "n_heads must be >= 1"),
    (("alibi",), "--heads"),
    (("alibi", "--heads", "8", "--penalty", "-1"), "penalty"),
    (("alibi", "--heads", "8", "--bias-max", "0"), "alibi_bias_max"),
    (("buckets", "--num-buckets", "1"), "num_buckets"),
    (("buckets", "--max-distance", "16"), "max_distance must be > num_buckets/2"),
    (("plot", "xpos", "--out", "x.png", "--gamma", "-1"), "gamma"),
    (("plot", "buckets", "--out", "x.png", "--unidirectional", "maybe"), "yes or no"),
])
def test_bad_input_is_one_line_and_status_2(capsys, argv, fragment: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("posenc: error:") and fragment in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("kind", ["alibi", "buckets", "xpos"])
def test_plot_png(capsys, tmp_path, kind: str) -> None:
    path = tmp_path / f"{kind}.png"
    code, out, err = run(capsys, "plot", kind, "--out", str(path))
    assert code == 0 and err == "" and f"wrote {path}" in out
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_json_gives_the_plotted_numbers(capsys, tmp_path) -> None:
    code, data = run_json(capsys, "plot", "xpos", "--out", str(tmp_path / "x.svg"), "--rotary-dim", "8",
                          "--max-offset", "512")
    assert code == 0 and data["kind"] == "xpos" and data["wrote"].endswith("x.svg")
    zeta = [(2 * i / 8 + 0.4) / 1.4 for i in range(4)]
    assert data["zeta"] == pytest.approx(zeta, rel=1e-15)
    assert data["offset"][-1] == 512 and data["decay"][-1] == pytest.approx(zeta, rel=1e-14)
    code, data = run_json(capsys, "plot", "alibi", "--out", str(tmp_path / "a.png"), "--heads", "2",
                          "--max-distance", "4")
    assert data["bias"] == [[-k / 16 for k in range(5)], [-k / 256 for k in range(5)]]
    code, data = run_json(capsys, "plot", "buckets", "--out", str(tmp_path / "b.png"), "--unidirectional", "yes",
                          "--span", "3")
    assert data["offset"] == [-3, -2, -1, 0, 1, 2, 3] and data["bucket"] == [3, 2, 1, 0, 0, 0, 0]
    assert math.isfinite(data["max_distance"])
