import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

#: Hypothesis profiles. "posenc" is the suite's (``make test``): a fixed number of examples per property, derandomized,
#: so every run checks the same inputs. "deep" (``make test-deep``, HYPOTHESIS_PROFILE=deep) checks ten times as
#: many. A test that sets its own count scales it by ``settings().max_examples / settings.get_profile("posenc")
#: .max_examples``, so the deep profile reaches it too.
SUITE_EXAMPLES = 60
settings.register_profile(
    "posenc",
    deadline=None,
    max_examples=SUITE_EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile("deep", settings.get_profile("posenc"), max_examples=10 * SUITE_EXAMPLES)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "posenc"))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, a file whose tests share a module- or session-scoped fixture of ours runs on one worker.

    Such a fixture is expensive set-up (a page or site build, a wheel, a subprocess's measurements) made once for
    the tests that read it; spread over the workers it would be made once per worker. Every other test is sent
    alone to whichever worker is free. ``make test`` runs ``--dist loadgroup``, which reads these groups.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    shared: set[str] = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)  # none for doctests
        if info is None:
            continue
        for defs in info.name2fixturedefs.values():
            if defs and defs[-1].baseid and defs[-1].scope in ("module", "package", "session"):
                shared.add(item.nodeid.split("::")[0])
    for item in items:
        path = item.nodeid.split("::")[0]
        if path in shared:
            item.add_marker(pytest.mark.xdist_group(path))


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
