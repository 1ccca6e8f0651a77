"""Helpers for the site's tests: build it as ``make docs`` does, and open it from disk in Chromium.

The build runs ``mkdocs build --strict`` in a subprocess with this checkout's
sources first on the path, into a folder of the caller's, so the checkout's
``site/`` is never touched. The fixture ``built`` is that build, once per
session; its time goes to :data:`MEASURED`, printed at the end of the run
(tests/conftest.py). The browser tests use the run's one Chromium, the
``browser`` fixture of tests/conftest.py. (No conftest.py here: with
``--doctest-modules`` a second ``tests/*/conftest.py`` clashes with the
page's when both folders are named on the command line.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Numbers measured by the tests, printed at the end of the run (tests/conftest.py).
MEASURED: dict[str, str] = {}


@dataclass(frozen=True)
class Built:
    """A finished build: the site's folder and what mkdocs printed."""

    site: Path
    log: str


def build_site(out: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``out``, with this checkout's ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(out)],
                          cwd=config.parent, env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


@dataclass
class Opened:
    """A page of the site opened from disk: what it asked for outside the site, and what went wrong."""

    page: Any
    outside: list[str]
    problems: list[str]


def open_page(browser: Any, site: Path, rel: str, width: int) -> Opened:
    """``site/rel`` at ``width`` CSS pixels from file://, every request outside the site blocked and recorded."""
    context = browser.new_context(viewport={"width": width, "height": 900}, service_workers="block")
    opened = Opened(context.new_page(), [], [])
    inside = site.resolve().as_uri() + "/"

    def route(r: Any) -> None:
        if r.request.url.startswith(inside):
            r.continue_()
        else:
            opened.outside.append(r.request.url)
            r.abort()

    def console(m: Any) -> None:
        if m.type in ("error", "warning"):
            opened.problems.append(f"console {m.type}: {m.text}")

    context.route("**/*", route)
    opened.page.on("console", console)
    opened.page.on("pageerror", lambda e: opened.problems.append(f"page error: {e}"))
    opened.page.goto((site / rel).resolve().as_uri(), wait_until="load")
    return opened


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """One ``mkdocs build --strict`` of this checkout, into a temporary folder."""
    out = tmp_path_factory.mktemp("docs") / "site"
    start = time.perf_counter()
    proc = build_site(out)
    MEASURED["mkdocs build --strict"] = f"{time.perf_counter() - start:.1f} s (the worked-examples page included)"
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return Built(out, proc.stderr)
