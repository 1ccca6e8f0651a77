"""Assemble the page: one self-contained HTML file, written atomically.

Inline CSS, inline scripts, inline SVG and the explorer's data as JSON; no
URL anywhere. A Content-Security-Policy allows only the page's own inline
scripts (by hash) and styles, so even a mistake could not fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from importlib import resources
from typing import Any

from .. import seed
from ..support.version import __version__
from .data import Start, explorer_data
from .explorer import explorer_html
from .families import SITE
from .figures import FIGURES, render
from .sections import case_html, errata_html, formula_html, matrix_html, quiz_html

__all__ = ["build_html", "site_nav"]

_SECTIONS = (("formula", "The formula"), ("matrix", "The scenario matrix"), ("cases", "The worked cases"),
             ("explorer", "Explorer"), ("self-test", "Self-test"), ("errata", "The seed's errata"))


def site_nav(current: str) -> str:
    """The site's shared navigation: every page (:data:`posenc.page.families.SITE`), the current one marked.

    >>> site_nav("rope.html").count("<li>"), 'href="rope.html" aria-current="page"' in site_nav("rope.html")
    (9, True)
    """
    items = "".join(
        f'<li><a href="{f}"' + (' aria-current="page"' if f == current else "") + f">{escape(label)}</a></li>"
        for f, label in SITE)
    return f'<nav class="site" aria-label="The site"><ul>{items}</ul></nav>'


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _json_script(data: Any) -> str:
    # "<" escaped: no "</script>" can end the element early
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def _figure(key: str, svgs: dict[str, str]) -> str:
    fig = next(f for f in FIGURES if f.key == key)
    return f'<figure id="figure-{key}">{svgs[key]}<figcaption>{escape(fig.caption)}</figcaption></figure>'


def _summary(cases: list[seed.Case]) -> str:
    checks = [k for c in cases for k in c.checks]
    good = sum(k.passed for k in checks)
    wrong = sum(len(c.errata) for c in cases)
    text = (f"{sum(c.passed for c in cases)} of {len(cases)} cases verified: {good} of {len(checks)} "
            "checks passed")
    if wrong:
        text += f"; {wrong} of the seed's printed figures are errata (true values shown beside them)"
    return f'<p class="summary" id="cases-summary">{escape(text)}.</p>'


def _main(start: Start) -> str:
    cases = seed.cases()
    by_cell = {f.cell: f.key for f in FIGURES}
    svgs = {f.key: render(f) for f in FIGURES}
    worked = "".join(case_html(c, _figure(by_cell[c.cell], svgs) if c.cell in by_cell else "") for c in cases)
    body = {
        "formula": formula_html(),
        "matrix": matrix_html(cases),
        "cases": _summary(cases) + worked,
        "explorer": explorer_html(start),
        "self-test": "<p>Try each question, then open it for the answer and the number behind it.</p>"
                     + quiz_html(seed.quiz()),
        "errata": errata_html(seed.errata()),
    }
    return "".join(f'<section id="{key}" aria-labelledby="{key}-h"><h2 id="{key}-h">{title}</h2>{body[key]}'
                   "</section>" for key, title in _SECTIONS)


def build_html(start: Start | None = None) -> str:
    """The whole page as one string (needs the ``plot`` extra for its figures).

    Raises:
        ImportError: naming the extra when matplotlib is missing.
    """
    from .. import plot

    plot.require()
    s = start or Start()
    script = _asset("exact.js") + "\n" + _asset("common.js") + "\n" + _asset("explorer.js")
    nav = "".join(f'<li><a href="#{key}">{title}</a></li>' for key, title in _SECTIONS)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_csp(script)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Sinusoidal positional encodings: the worked examples (posenc)</title>"
        f'<meta name="generator" content="posenc {__version__}">'
        f"<style>{_asset('page.css')}</style></head><body>"
        '<a class="skip" href="#main">Skip to the content</a>'
        f"<header>{site_nav('index.html')}<h1>Sinusoidal positional encodings: the worked examples</h1>"
        '<p class="lede">Position zero, huge positions, the fastest and the slowest channel, the rotation by an '
        "offset, aliasing, choosing the base, and the dot product: the seed's eight worked cases and its "
        f"self-test, every number computed by posenc {__version__} and every claim checked against it. "
        "The explorer recomputes them for any setting, bit for bit as posenc does.</p>"
        f'<nav aria-label="Contents"><ul>{nav}</ul></nav></header>'
        f'<main id="main">{_main(s)}</main>'
        f"<footer>Made by <code>posenc page</code> (posenc {__version__}). One file, no network: "
        "open it from disk.</footer>"
        f'<script type="application/json" id="posenc-data">{_json_script(explorer_data(s))}</script>'
        f"<script>{script}</script></body></html>\n"
    )
