"""bench: the benchmark from the command.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from posenc.bench import Report, Row, format_report
from posenc.cli import main


def half_last_digit(text: str) -> float:
    """Half a unit in the last printed place of a number such as ``2.67`` or ``0.079``."""
    places = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-places


#: the small run both output tests print: ``bench --quick --shape 256x16 --repeats 1 --no-scaling`` (every group, small)
SMALL = ["bench", "--quick", "--shape", "256x16", "--repeats", "1", "--no-scaling"]


@pytest.fixture(scope="module")
def small_run() -> Iterator[None]:
    """The --json and --markdown tests print one measurement of :data:`SMALL`: the command measures it once.

    The command's ``run`` (posenc.bench.run, every row timed, ~15 s here) is kept for the second test to print,
    asked with the same settings; whichever test runs first (or alone) measures it.
    """
    import posenc.cli.bench as cli_bench

    real, kept = cli_bench.run, {}

    def run(**kw: Any) -> Any:
        settings = {k: v for k, v in kw.items() if k != "extra"}  # the rows' producers are made anew per call
        if "report" not in kept:
            kept["settings"], kept["report"] = settings, real(**kw)
        assert settings == kept["settings"], (settings, kept["settings"])
        return kept["report"]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli_bench, "run", run)
        yield


def test_bench_small_json(capsys, small_run):
    assert main([*SMALL, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["method"]: r for r in data["rows"]}
    assert rows["posenc"]["max_ulp"] == 0
    assert rows["floor: fill"]["ratio"] == 1.0
    assert "CPUs" in data["machine"]
    # every ratio is its median over the floor it names, and the text prints that floor beside it
    for r in data["rows"]:
        assert r["floor_ms"] > 0 and r["ratio"] == pytest.approx(r["median_ms"] / r["floor_ms"], rel=1e-12)
    report = Report(data["machine"], tuple(Row(**r) for r in data["rows"]))
    lines = format_report(report).splitlines()
    head = lines[2].split("  ")
    assert [h.strip() for h in head if h.strip()][2:5] == ["median ms", "floor ms", "x floor"]
    for line, r in zip(lines[4:], data["rows"], strict=False):
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        median, floor, ratio = (float(c) for c in cells[-6:-3])
        assert (median, floor) == (pytest.approx(r["median_ms"], rel=1e-3, abs=0.005),
                                   pytest.approx(r["floor_ms"], rel=1e-3, abs=0.005))
        # the reader's arithmetic holds to the digits printed: each shown number is within half its last digit
        dm, df, dr = (half_last_digit(c) for c in cells[-6:-3])
        assert (median - dm) / (floor + df) - dr <= ratio <= (median + dm) / (floor - df) + dr


@pytest.mark.parametrize(
    "argv", [["bench", "--shape", "12x5"], ["bench", "--repeats", "0"], ["bench", "--shape", "big"]]
)
def test_bench_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("posenc: error:") and err.count("\n") == 1


def test_bench_markdown_is_the_readme_table(capsys, small_run):
    assert main([*SMALL, "--markdown"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Machine: ") and "CPUs" in out[0]
    table = [line for line in out if line.startswith("|")]
    assert table[0].split("|")[1:6] == [" operation ", " method ", " median ms ", " floor ms ", " × floor "]
    body = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]
    assert body[0][:2] == ["table 256×16 f32", "floor: fill"]
    ours = [cells for cells in body if cells[1] == "**posenc**"]
    assert ours and ours[0][0] == "" and ours[0][5] == "0"  # the group's name once; exact to the ulp
    for cells in body:  # each ratio is the printed median over the printed floor, to the digits shown
        median, floor, ratio = float(cells[2]), float(cells[3]), float(cells[4].strip("*"))
        dm, df, dr = (half_last_digit(c.strip("*")) for c in cells[2:5])
        assert (median - dm) / (floor + df) - dr <= ratio <= (median + dm) / (floor - df) + dr
    assert any(cells[0].startswith("M-RoPE") for cells in body)


def test_bench_json_and_markdown_are_exclusive(capsys):
    assert main(["bench", "--json", "--markdown"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
