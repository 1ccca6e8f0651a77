"""Fixtures for the site's tests (helpers in site_build.py): one build per session.

The build's time is printed in the terminal summary. The browser tests use
the run's one Chromium, the ``browser`` fixture of tests/conftest.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from site_build import MEASURED, Built, build_site


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("docs") / "site"
    start = time.perf_counter()
    proc = build_site(out)
    MEASURED["mkdocs build --strict"] = f"{time.perf_counter() - start:.1f} s (the worked-examples page included)"
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return Built(out, proc.stderr)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MEASURED:
        terminalreporter.section("posenc docs: measured")
        for key, value in MEASURED.items():
            terminalreporter.write_line(f"{key}: {value}")
