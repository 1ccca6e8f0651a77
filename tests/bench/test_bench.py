"""The benchmark's measurements (accuracy and bookkeeping; never its timings)."""

from __future__ import annotations

import re

import numpy as np

from posenc.bench import Report, Row, format_markdown, format_report, machine_line, run
from posenc.bench.measure import ulp_gap


def testulp_gap_counts_ulps_across_zero():
    a = np.array([1.0, -0.0, 1e-45], dtype=np.float32)
    assert ulp_gap(a, a) == 0
    assert ulp_gap(np.nextafter(a, np.float32(2)), a) == 1
    # -tiny and +tiny are two ulps apart
    tiny = np.float32(1e-45)
    assert ulp_gap(np.array([-tiny]), np.array([tiny])) == 2


def test_small_run_reports_every_method_and_exactness():
    rep = run(shapes=((300, 16),), repeats=1, scaling=False)
    methods = {r.method for r in rep.rows}
    assert {"floor: fill", "posenc", "posenc (NumPy only)", "numpy f64 then cast"} <= methods
    assert {"torch tutorial f32", "fairseq f32"} <= methods  # torch is installed for the tests
    by = {r.method: r for r in rep.rows}
    assert by["posenc"].max_ulp == 0
    assert by["posenc"].max_abs == 0.0
    assert by["posenc (NumPy only)"].max_ulp == 0
    assert by["floor: fill"].ratio == 1.0
    assert all(r.median_ms > 0 for r in rep.rows)
    assert by["posenc"].extra_memory is not None and by["posenc"].extra_memory >= 0


def test_format_has_the_columns_and_machine():
    rep = Report("cpu X", (Row("table 1x2 f32", "posenc", 1.5, 1.25, 0.0, 0.01, 2.5e-7),), ((10, 2, 3.0),))
    text = format_report(rep)
    assert "machine: cpu X" in text
    assert "x floor" in text and "1.25" in text and "1.0%" in text and "2.5e-07" in text
    assert "ns/value" in text
    assert "CPUs" in machine_line()


def test_a_pipe_in_a_name_stays_inside_its_markdown_cell():
    rows = (Row("a | b 4x8", "floor: x | y", 1.0, 1.0, floor_ms=1.0),
            Row("a | b 4x8", "posenc | z", 2.0, 2.0, floor_ms=1.0))
    lines = format_markdown(Report("cpu", rows)).splitlines()
    for line in lines[2:4]:
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        assert len(cells) == 8, line
    assert lines[2].startswith("| a \\| b 4×8 | floor: x \\| y |") and "**posenc \\| z**" in lines[3]
