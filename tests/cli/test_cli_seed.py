"""examples, quiz and tour: the seed, live.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys

import mpmath
import pytest

from cli_helpers import run, run_json
from posenc import seed
from posenc.page.families import SITE

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- examples, quiz

def test_examples_all_eight_with_errata(capsys):
    code, out, _ = run(capsys, "examples")
    assert code == 0
    for cell, ex in zip("ABCDEFGH", range(1, 9), strict=True):
        assert f"{cell} · Ex {ex} · " in out
    g = next(line for line in out.splitlines() if "10000^(510/512)" in line)
    assert "9655" in g and "9647" in g and "erratum" in g  # seed's figure beside the true one
    assert "8 of 8 cases verified" in out
    for seed_number in ("0.82688", "0.56238", "-0.54402", "-0.83907", "0.998750", "0.6570"):
        assert seed_number in out


def test_examples_cells_and_json(capsys):
    code, out, _ = run(capsys, "examples", "a", "H")
    assert code == 0 and "A · Ex 1" in out and "H · Ex 8" in out and "B · Ex 2" not in out
    code, data = run_json(capsys, "examples", "G")
    assert code == 0 and data["passed"] is True
    fig = next(f for f in data["cases"][0]["figures"] if f["printed"] == "9655")
    assert fig["value"] == pytest.approx(float(mpmath.power(10000, mpmath.mpf(510) / 512)), rel=1e-15)
    assert fig["agrees"] is False and "9647" in fig["erratum"]


def test_examples_exit_1_when_a_check_fails(capsys, monkeypatch):
    real = seed.cases

    def broken(cells=None):
        c = real(cells)[0]
        bad = seed.Case(c.cell, c.example, c.title, c.tricky, c.figures,
                            (*c.checks, seed.Check("a claim that fails", False, "simulated")))
        return [bad]

    monkeypatch.setattr(seed, "cases", broken)
    code, out, _ = run(capsys, "examples", "A")
    assert code == 1 and "✗ a claim that fails" in out


def test_quiz_waits_for_enter(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * 6))
    code, out, _ = run(capsys, "quiz")
    assert code == 0
    assert out.count("(Enter for the answer)") == 6
    assert "Q1." in out and "[0, 1, 0, 1]" in out and "Q6." in out
    # each answer comes after its own prompt
    assert out.index("Q1.") < out.index("(Enter") < out.index("cosine channels pinned")


def test_quiz_survives_end_of_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))  # one Enter, then EOF
    code, out, err = run(capsys, "quiz")
    assert code == 0 and err == ""
    assert out.count("(Enter for the answer)") == 2
    assert "Q6." in out and "6 of 6 answers checked" in out


def test_quiz_no_input_and_json(capsys):
    code, out, _ = run(capsys, "quiz", "--no-input")
    assert code == 0 and "(Enter" not in out and "60611" in out and "erratum" in out
    code, data = run_json(capsys, "quiz")
    assert code == 0 and len(data["questions"]) == 6 and data["passed"] is True
    lam = data["questions"][5]["figures"][1]
    assert lam["value"] == pytest.approx(float(2 * mpmath.pi * mpmath.power(10000, mpmath.mpf(510) / 512)))


def test_tour_writes_the_cases_answers_and_figures(capsys, tmp_path):
    out_dir = tmp_path / "tour"
    code, out, err = run(capsys, "tour", "--out", str(out_dir))
    assert code == 0 and err == ""
    for cell, ex in zip("ABCDEFGH", range(1, 9), strict=True):
        assert f"{cell} · Ex {ex} · " in out
    assert "8 of 8 cases verified" in out and "Q6." in out and "(Enter" not in out
    names = ["wave", "rotation", "heatmap", "kernel", "ladder"]
    site = [name for name, _ in SITE]  # the worked-examples site, index.html first
    tail = out.rstrip("\n").splitlines()[-(1 + len(names) + len(site)):]
    assert tail[0] == "Files written:"
    assert [line.strip() for line in tail[1:]] == [str(out_dir / f"{n}.png") for n in names] + [
        str(out_dir / n) for n in site]
    assert "8 families, one case each: every claim checked and passed" in out
    for n in names:
        assert (out_dir / f"{n}.png").read_bytes()[:8] == PNG_MAGIC
    assert (out_dir / "index.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")  # tests/page/


def _lam_max(base: int) -> float:
    return float(2 * mpmath.pi * mpmath.power(base, mpmath.mpf(510) / 512))  # seed, Ex 7, d_model 512


def test_quiz_q6_answers_with_the_true_value_and_marks_the_misprint(capsys):
    _, out, _ = run(capsys, "quiz", "--no-input")
    answer = out.split("Q6.", 1)[1].splitlines()[1]
    assert answer.lstrip().startswith("→ ")
    true = f"{_lam_max(10000):.0f}"
    assert true == "60611"
    assert f"λ_max ≈ {true}; the seed misprints it as 60650" in answer
    assert answer.index(true) < answer.index("60650")  # the true value first, the misprint marked after it
    assert f"λ_max ≈ {_lam_max(100):.0f})" in answer  # 617: the seed's figure is right there


def test_tour_counts_the_errata_it_lists(capsys, tmp_path):
    _, out, _ = run(capsys, "tour", "--out", str(tmp_path / "t"))
    in_cases = int(re.search(r"(\d+) of the figures the seed prints in these cases are errata", out).group(1))
    head = re.search(r"The seed's (\d+) misprinted figures, (\d+) in the cases above and (\d+) in the self-test", out)
    total, cases_n, quiz_n = (int(g) for g in head.groups())
    listed = out[head.end():].split("\n\n", 1)[0].splitlines()[1:]
    assert len(listed) == total == cases_n + quiz_n
    assert sum(line.lstrip().startswith("Ex ") for line in listed) == cases_n == in_cases == 4
    assert sum(line.lstrip().startswith("self-test ") for line in listed) == quiz_n == 1
    # the same count as the seed's text holds misprints (tests/seed/test_seed.py finds them independently)
    assert any("60650" in line and "60611" in line for line in listed)


# matplotlib made unimportable before posenc loads, as on a NumPy-only install
_NO_MATPLOTLIB = ("import sys; sys.modules['matplotlib'] = None; "
                  "from posenc.cli import main; sys.exit(main(sys.argv[1:]))")


def test_tour_without_matplotlib_shows_everything_else_and_exits_0(tmp_path):
    out_dir = tmp_path / "tour"
    proc = subprocess.run([sys.executable, "-c", _NO_MATPLOTLIB, "tour", "--out", str(out_dir)],
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout
    for cell, ex in zip("ABCDEFGH", range(1, 9), strict=True):
        assert f"{cell} · Ex {ex} · " in out
    assert "8 of 8 cases verified" in out and "6 of 6 answers checked" in out and "Q6." in out
    skipped = out.rstrip("\n").splitlines()[-1]
    for name in ("wave", "rotation", "heatmap", "kernel", "ladder"):
        assert name in skipped
    assert skipped.strip().startswith("skipped 5 figures") and "pip install 'posenc[plot]'" in skipped
    assert "and the page" in skipped
    assert not out_dir.exists()
    # the rest of the command still says which extra a figure needs
    proc = subprocess.run([sys.executable, "-c", _NO_MATPLOTLIB, "plot", "wave", "--out", str(tmp_path / "w.png")],
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "posenc: error: plotting needs matplotlib: pip install 'posenc[plot]'\n"


def test_the_docs_say_what_the_tour_draws():
    from pathlib import Path

    from posenc.cli.plotting import PLOT_KINDS
    from posenc.cli.seed import TOUR_FIGURES

    page = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "seed-worked-cases.md"
    paragraphs = [" ".join(p.split()) for p in page.read_text(encoding="utf-8").split("\n\n")]
    (row,) = [p for p in paragraphs if p.startswith("`posenc tour")]
    drawn = row.split("figures", 1)[1].split(" as PNGs")[0]
    assert [k for k in PLOT_KINDS if f"`{k}`" in drawn] == list(TOUR_FIGURES)
    for kind in PLOT_KINDS:
        if kind not in TOUR_FIGURES:
            assert f"not `{kind}`" in row, kind  # a figure the tour leaves out is said to be left out
    assert "NumPy alone" in row and "exits 0" in row


def test_a_second_tour_in_the_process_writes_the_same_figures_without_drawing_them(capsys, tmp_path, monkeypatch):
    from posenc.cli import seed as cli_seed

    monkeypatch.setattr(cli_seed, "_TOUR_PNGS", {})
    drawn: list[str] = []
    real = cli_seed.render
    monkeypatch.setattr(cli_seed, "render", lambda fig, path, *a: drawn.append(path.name) or real(fig, path, *a))
    first, second = tmp_path / "a", tmp_path / "b"
    assert run(capsys, "tour", "--out", str(first))[0] == 0
    assert run(capsys, "tour", "--out", str(second))[0] == 0
    assert sorted(drawn) == sorted(f"{name}.png" for name in cli_seed.TOUR_FIGURES)
    for name in cli_seed.TOUR_FIGURES:
        data = (first / f"{name}.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and data == (second / f"{name}.png").read_bytes()
