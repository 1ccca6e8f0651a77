"""Fixtures for the site's tests (helpers in site_build.py): one build per session, and Chromium.

The build's time is printed in the terminal summary. The browser tests drive
the system Chromium (Debian package ``chromium``) and fail, never skip,
without it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from site_build import CHROMIUM_ARGS, MEASURED, Built, build_site


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("docs") / "site"
    start = time.perf_counter()
    proc = build_site(out)
    MEASURED["mkdocs build --strict"] = f"{time.perf_counter() - start:.1f} s (the worked-examples page included)"
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return Built(out, proc.stderr)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    exe = os.environ.get("POSENC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(exe, os.X_OK):
        pytest.fail("the site's browser tests need Chromium: run `apt-get update && apt-get install -y chromium` "
                    "as root (Debian), or set POSENC_CHROMIUM to a Chromium binary", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MEASURED:
        terminalreporter.section("posenc docs: measured")
        for key, value in MEASURED.items():
            terminalreporter.write_line(f"{key}: {value}")
