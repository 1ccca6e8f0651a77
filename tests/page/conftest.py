"""Fixtures for the page's browser tests (helpers in page_browser.py).

Without Chromium these tests fail (they never skip) with the one line that
says how to install it. Measurements (size, load, update) are printed in
the terminal summary; no test asserts a timing beyond a sanity bound.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from page_browser import MEASURED, Opened, open_page


@pytest.fixture(scope="session")
def page_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page, built once by the command itself."""
    from posenc.cli import main

    out = tmp_path_factory.mktemp("page")
    assert main(["page", "--out", str(out)]) == 0
    path = out / "index.html"
    MEASURED["page size"] = f"{path.stat().st_size / 1024:.0f} KiB ({path.stat().st_size} bytes)"
    return path


@pytest.fixture(scope="module")
def site(page_path: Path) -> Path:
    """The site's folder: index.html and a page per family."""
    return page_path.parent


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $POSENC_PAGE_SHOTS, else a temporary folder (named in the summary)."""
    where = os.environ.get("POSENC_PAGE_SHOTS")
    folder = Path(where) if where else tmp_path_factory.mktemp("shots")
    folder.mkdir(parents=True, exist_ok=True)
    MEASURED["screenshots"] = str(folder)
    return folder


@pytest.fixture
def opened(browser: Any, page_path: Path) -> Iterator[Opened]:
    """The page at 1280 px; closed after the test."""
    o = open_page(browser, page_path, 1280)
    yield o
    o.page.context.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MEASURED:
        terminalreporter.section("posenc page: measured in headless Chromium")
        for key, value in MEASURED.items():
            terminalreporter.write_line(f"{key}: {value}")
