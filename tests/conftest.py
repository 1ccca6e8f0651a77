import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "posenc",
    deadline=None,
    max_examples=int(os.environ.get("POSENC_HYPOTHESIS_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("posenc")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the whole run (tests/browser_session.py), shared by the page's and the site's tests."""
    from browser_session import ARGS, chromium

    exe = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=ARGS)
        yield b
        b.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    site = sys.modules.get("site_build")  # tests/docs/site_build.py, once the site's tests ran
    if site is not None and site.MEASURED:
        terminalreporter.section("posenc docs: measured")
        for key, value in site.MEASURED.items():
            terminalreporter.write_line(f"{key}: {value}")
