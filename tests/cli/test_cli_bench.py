"""bench: the benchmark from the command.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import json

import pytest

from posenc.cli import main


def test_bench_small_json(capsys):
    assert main(["bench", "--shape", "256x16", "--repeats", "1", "--no-scaling", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["method"]: r for r in data["rows"]}
    assert rows["posenc"]["max_ulp"] == 0
    assert rows["floor: fill"]["ratio"] == 1.0
    assert "CPUs" in data["machine"]


@pytest.mark.parametrize(
    "argv", [["bench", "--shape", "12x5"], ["bench", "--repeats", "0"], ["bench", "--shape", "big"]]
)
def test_bench_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("posenc: error:") and err.count("\n") == 1
