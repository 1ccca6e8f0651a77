"""The system Chromium (Debian package ``chromium``) for the browser tests, driven by Playwright.

Playwright's sync API allows one session per process, so the page's tests
(``tests/page/``) and the site's (``tests/docs/``) share one browser: the
session fixture ``browser`` in ``tests/conftest.py``. Without Chromium those
tests fail, never skip, with the one line that says how to install it.
"""

from __future__ import annotations

import os
import shutil

import pytest

#: The one line ``make test`` prints when Chromium is missing (the Makefile says the same).
INSTALL = ("the browser tests (the page's and the site's) need Chromium: run `apt-get update && apt-get install -y "
           "chromium` as root (Debian), or set POSENC_CHROMIUM to a Chromium binary")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-extensions"]


def chromium() -> str:
    """The Chromium binary, or a test failure naming how to install it."""
    exe = os.environ.get("POSENC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(exe, os.X_OK):
        pytest.fail(INSTALL, pytrace=False)
    return exe
