"""Helpers for the page's browser tests: the system Chromium (Debian package), driven by Playwright.

Every page opens from ``file://`` with every request routed through a
recorder that lets only the page's own file through; what else the page
asked for, and what it logged, is kept for the tests to assert on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browser_session import ARGS, INSTALL, chromium

__all__ = ["ARGS", "INSTALL", "MEASURED", "WIDTHS", "Opened", "chromium", "open_page"]

WIDTHS = (375, 1280)

#: Numbers measured by the tests, printed at the end of the run.
MEASURED: dict[str, str] = {}


@dataclass
class Opened:
    """A page opened from disk, with what it requested and logged."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, and any request beyond the page itself."""
        out = [f"console {kind}: {text}" for kind, text in self.console if kind in ("error", "warning")]
        out += [f"page error: {e}" for e in self.errors]
        out += [f"request: {u}" for u in self.requests if u != self.url]
        return out


def open_page(browser: Any, path: Path, width: int, height: int = 900) -> Opened:
    """Open ``path`` at ``width`` CSS pixels, every request recorded and all but the page's own blocked."""
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block",
                                  java_script_enabled=True)
    page = context.new_page()
    opened = Opened(page, path.resolve().as_uri())

    def route(r: Any) -> None:
        url = r.request.url
        if url == opened.url:
            r.continue_()
        else:
            opened.blocked.append(url)
            r.abort()

    context.route("**/*", route)
    page.on("request", lambda req: opened.requests.append(req.url))
    page.on("console", lambda m: opened.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.goto(opened.url, wait_until="load")
    return opened


#: a slider move updates its numbers within this (issue 35's budget), in headless Chromium
SLIDER_BUDGET_MS = 50.0


def set_control(page: Any, ident: str, value: Any) -> None:
    """Set a control's value and fire its input event, as a user's move does."""
    page.evaluate("([id, v]) => { const e = document.getElementById(id); e.value = String(v);"
                  " e.dispatchEvent(new Event('input', { bubbles: true })); }", [ident, value])
