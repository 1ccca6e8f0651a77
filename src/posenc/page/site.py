"""The worked-examples site: the sinusoid page (``index.html``) and one page per family, with shared navigation.

Each page is one self-contained file (inline CSS, script, SVG and data; a
Content-Security-Policy that allows only its own script by hash); the pages
link to one another by relative file names, so the folder opens from disk
with no network. Every page ends with a self-test its own script runs in the
browser: the worked cases' printed digits formatted again from their doubles,
the claims checked at build time, and, where the page holds posenc's ladders,
exact.js recomputing posenc's values bit for bit.
"""

from __future__ import annotations

import threading
from html import escape
from importlib import resources

from ..seed import Case, Check, Printed
from ..support.version import __version__
from .build import _csp, _json_script, build_html, site_nav
from .data import explorer_data
from .families import FAMILIES, Family, FamilyFigure
from .figures import inline_svg
from .rope_data import rope_data, scaling_data, timestep_data
from .rope_explorer import rope_explorer_html, scaling_explorer_html, timestep_explorer_html

__all__ = ["build_family", "build_site", "family_script", "site_nav"]


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def family_script() -> str:
    """The one inline script of every family page: exact.js, common.js and rope.js."""
    return _asset("exact.js") + "\n" + _asset("common.js") + "\n" + _asset("rope.js")


def _render(fig: FamilyFigure) -> str:
    import io

    from .. import plot

    with plot.DRAWING:
        figure = fig.make()
        buf = io.StringIO()
        figure.savefig(buf, format="svg", metadata={"Date": None})
    svg = inline_svg(buf.getvalue(), f"fig-{fig.key}", fig.caption)
    return f'<figure id="figure-{fig.key}">{svg}<figcaption>{escape(fig.caption)}</figcaption></figure>'


def _figure_rows(figs: tuple[Printed, ...]) -> str:
    out = []
    for f in figs:
        mark = ('<td class="ok"><span aria-hidden="true">✓</span><span class="sr-only">agrees</span></td>'
                if f.agrees else '<td class="erratum">erratum</td>')
        out.append(f'<tr><th scope="row">{escape(f.label)}</th><td class="num">{escape(f.printed)}</td>'
                   f'<td class="num" data-value="{f.value!r}" data-digits="{f.decimals}">{escape(f.true_text)}</td>'
                   f"{mark}</tr>")
    return "".join(out)


def _checks(checks: tuple[Check, ...]) -> str:
    items = []
    for k in checks:
        state = "passed" if k.passed else "failed"
        items.append(f'<li class="check {state}" data-built="1"><span class="mark" aria-hidden="true">'
                     f'{"✓" if k.passed else "✗"}</span> <span class="claim">{escape(k.claim)}</span> '
                     f'<span class="state">checked: {state}</span> <span class="detail">{escape(k.detail)}</span></li>')
    return '<ul class="checks">' + "".join(items) + "</ul>"


def _case(c: Case) -> str:
    table = ""
    if c.figures:
        table = ('<div class="scroll"><table class="figures"><caption>Each number as the case prints it (for RoPE '
                 "and the scalings: written from an independent formula when the page is built) beside posenc's "
                 "value to the same digits; ✓ where they agree</caption><thead><tr>"
                 '<th scope="col">number</th><th scope="col">printed</th><th scope="col">posenc</th>'
                 '<th scope="col"><span class="sr-only">agrees?</span></th></tr></thead>'
                 f"<tbody>{_figure_rows(c.figures)}</tbody></table></div>")
    return (f'<article class="case" id="case-{c.cell}" aria-labelledby="case-{c.cell}-h">'
            f'<h3 id="case-{c.cell}-h"><span class="cell">{c.cell}</span> Ex {c.example} · {escape(c.title)}</h3>'
            f'<p class="tricky">What makes it tricky: {escape(c.tricky)}.</p>'
            + table + "<h4>Verify</h4>" + _checks(c.checks) + "</article>")


def _matrix(cases: list[Case]) -> str:
    rows = "".join(f'<tr><th scope="row"><a href="#case-{c.cell}">{c.cell}</a></th><td>{escape(c.title)}</td>'
                   f"<td>{escape(c.tricky)}</td></tr>" for c in cases)
    return ('<div class="scroll"><table class="matrix"><caption>What makes this family tricky, one cell per case; '
            'each links to its worked example.</caption><thead><tr><th scope="col">Cell</th>'
            '<th scope="col">Case class</th><th scope="col">What makes it tricky</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>")


def _summary(cases: list[Case]) -> str:
    checks = [k for c in cases for k in c.checks]
    figs = [f for c in cases for f in c.figures]
    text = (f"{sum(c.passed for c in cases)} of {len(cases)} cases verified: {sum(k.passed for k in checks)} of "
            f"{len(checks)} claims checked, {sum(f.agrees for f in figs)} of {len(figs)} numbers agree with their "
            "printed value")
    return f'<p class="summary" id="cases-summary">{escape(text)}.</p>'


def build_family(fam: Family) -> str:
    """One family's page as a string (needs the ``plot`` extra for its figures)."""
    from .. import plot

    plot.require()
    cases = fam.cases()
    sections: list[tuple[str, str, str]] = [
        ("formula", "The formula", fam.formula()),
        ("matrix", "The scenario matrix", _matrix(cases)),
        ("cases", "The worked cases", _summary(cases) + "".join(_case(c) for c in cases)),
        ("figures", "Figures", '<div class="figure-grid">' + "".join(_render(f) for f in fam.figures) + "</div>"),
    ]
    data = ""
    if fam.explorer == "rope":
        sections.append(("explorer", "Explorer", rope_explorer_html()))
        data = f'<script type="application/json" id="rope-data">{_json_script(rope_data())}</script>'
    elif fam.explorer == "timestep":
        sections.append(("explorer", "Explorer", timestep_explorer_html()))
        data = f'<script type="application/json" id="timestep-data">{_json_script(timestep_data())}</script>'
    elif fam.explorer == "scaling":
        sections.append(("explorer", "Explorer", scaling_explorer_html()))
        data = f'<script type="application/json" id="scaling-data">{_json_script(scaling_data())}</script>'
    if fam.precision is not None:
        sections.append(("precision", "Precision view", fam.precision()))
    sections.append(("self-test", "Self-test",
                     "<p>Run by this page's own script when it opens: nothing here was typed in.</p>"
                     '<p class="summary" id="selftest-summary">The self-test needs JavaScript.</p>'
                     '<ul class="checks" id="selftest-list"></ul>'))
    script = family_script()
    contents = "".join(f'<li><a href="#{k}">{t}</a></li>' for k, t, _ in sections)
    body = "".join(f'<section id="{k}" aria-labelledby="{k}-h"><h2 id="{k}-h">{t}</h2>{b}</section>'
                   for k, t, b in sections)
    refs = fam.refs()
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_csp(script)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(fam.title)} (posenc)</title>"
        f'<meta name="generator" content="posenc {__version__}">'
        f"<style>{_asset('page.css')}</style></head><body>"
        '<a class="skip" href="#main">Skip to the content</a>'
        f"<header>{site_nav(fam.slug + '.html')}<h1>{escape(fam.title)}</h1>"
        f'<p class="lede">{escape(fam.lede)} Every number is computed by posenc {__version__} when the page is built, '
        "and every claim is checked against it.</p>"
        f'<nav aria-label="Contents"><ul>{contents}</ul></nav></header>'
        f'<main id="main">{body}</main>'
        f"<footer>Made by <code>posenc page</code> (posenc {__version__}). Part of a folder of pages with no "
        "network: open any of them from disk.</footer>"
        f'<script type="application/json" id="posenc-constants">{_json_script(explorer_data()["constants"])}</script>'
        f'<script type="application/json" id="selftest-refs">{_json_script(refs)}</script>'
        f"{data}<script>{script}</script></body></html>\n"
    )


_BUILT: dict[str, bytes] = {}
_BUILDING = threading.Lock()


def build_site() -> dict[str, bytes]:
    """Every page of the site: file name → bytes (``index.html`` first).

    The family pages depend on nothing but this code, so a process builds
    each once (about 25 s in all) and reuses it: ``posenc tour`` after
    ``posenc page`` in one process, the tests' many tours. ``index.html`` is
    built every time (as :func:`build_html` always was).
    """
    from .. import plot

    plot.require()  # before anything, built or cached: the extra's message, as build_html gives it
    pages = {"index.html": build_html().encode("utf-8")}
    with _BUILDING:
        for fam in FAMILIES:
            name = f"{fam.slug}.html"
            if name not in _BUILT:
                _BUILT[name] = build_family(fam).encode("utf-8")
            pages[name] = _BUILT[name]
    return pages
