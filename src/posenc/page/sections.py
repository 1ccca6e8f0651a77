"""The seed's content as HTML: the formula, the scenario matrix, the worked cases, the self-test.

Every number comes from :mod:`posenc.seed` (each case's figures, its
checks, the self-test's answers). A figure the seed misprints is shown
beside its true value, as ``posenc examples`` does; only the library's own
checks are marked passed or failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from ..seed import Case, Check, Printed, QuizItem

__all__ = ["case_html", "errata_html", "formula_html", "matrix_html", "quiz_html"]


def _omega_i() -> str:
    return "<msub><mi>ω</mi><mi>i</mi></msub>"


def _d_model() -> str:
    return "<msub><mi>d</mi><mtext>model</mtext></msub>"


def _pe(channel: str) -> str:
    return f"<mi>PE</mi><mo>(</mo><mi>pos</mi><mo>,</mo>{channel}<mo>)</mo>"


def _math(body: str) -> str:
    return f'<math display="block">{body}</math>'


def formula_html() -> str:
    """The encoding, as MathML (the browser typesets it; no script, no font download)."""
    omega = (f"{_omega_i()}<mo>=</mo><mfrac><mn>1</mn><msup><mi>b</mi><mrow><mn>2</mn><mi>i</mi><mo>/</mo>"
             f"{_d_model()}</mrow></msup></mfrac>")
    pairs = (f"<mi>i</mi><mo>=</mo><mn>0</mn><mo>,</mo><mn>1</mn><mo>,</mo><mo>…</mo><mo>,</mo>"
             f"<mfrac>{_d_model()}<mn>2</mn></mfrac><mo>−</mo><mn>1</mn>")
    sin = f"{_pe('<mn>2</mn><mi>i</mi>')}<mo>=</mo><mi>sin</mi><mo>(</mo>{_omega_i()}<mo>·</mo><mi>pos</mi><mo>)</mo>"
    cos = (f"{_pe('<mn>2</mn><mi>i</mi><mo>+</mo><mn>1</mn>')}<mo>=</mo><mi>cos</mi><mo>(</mo>{_omega_i()}"
           "<mo>·</mo><mi>pos</mi><mo>)</mo>")
    return (
        "<p>For a token at position <var>pos</var> and a channel pair <var>i</var>, the base <var>b</var> "
        "(10000 in the paper) sets the angular frequency</p>"
        f'<div class="equations">{_math(omega)}{_math(pairs)}</div>'
        "<p>and the even and odd channels of the pair are a sine and a cosine of the same angle:</p>"
        f'<div class="equations">{_math(sin)}{_math(cos)}</div>'
        "<p>There are <var>d</var><sub>model</sub>/2 frequencies, one per (sin, cos) pair; a larger <var>i</var> "
        "spins more slowly. The seed's tiny model has <var>d</var><sub>model</sub> = 4: ω<sub>0</sub> = 1 and "
        "ω<sub>1</sub> = 0.01.</p>"
    )


def matrix_html(cases: Iterable[Case]) -> str:
    """The scenario matrix: one row per cell, linked to its worked case."""
    rows = "".join(
        f'<tr><th scope="row"><a href="#case-{c.cell}">{c.cell}<span class="ex">Ex {c.example}</span></a></th>'
        f"<td>{escape(c.title)}</td><td>{escape(c.tricky)}</td></tr>"
        for c in cases
    )
    return ('<table class="matrix"><caption>Every question this topic can pose falls into one of these cells; '
            'each links to its worked example.</caption><thead><tr><th scope="col">Cell</th>'
            '<th scope="col">Case class</th><th scope="col">What makes it tricky</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _figure_rows(figs: Iterable[Printed]) -> str:
    out = []
    for f in figs:
        if f.agrees:
            mark = '<td class="ok"><span aria-hidden="true">✓</span><span class="sr-only">agrees</span></td>'
            cls = ""
        else:
            mark = '<td class="erratum">erratum</td>'
            cls = ' class="erratum-row"'
        out.append(f"<tr{cls}><th scope=\"row\">{escape(f.label)}</th><td class=\"num\">{escape(f.printed)}</td>"
                   f"<td class=\"num\" data-value=\"{f.value!r}\">{escape(f.true_text)}</td>{mark}</tr>")
    return "".join(out)


def _figures_table(figs: tuple[Printed, ...], caption: str) -> str:
    if not figs:
        return ""
    return ('<div class="scroll"><table class="figures">'
            f"<caption>{escape(caption)}</caption><thead><tr><th scope=\"col\">number</th>"
            '<th scope="col">seed</th><th scope="col">posenc</th><th scope="col"><span class="sr-only">agrees?'
            '</span></th></tr></thead>'
            f"<tbody>{_figure_rows(figs)}</tbody></table></div>")


def _checks(checks: Iterable[Check]) -> str:
    items = []
    for k in checks:
        state = "passed" if k.passed else "failed"
        mark = "✓" if k.passed else "✗"
        items.append(f'<li class="check {state}"><span class="mark" aria-hidden="true">{mark}</span> '
                     f'<span class="claim">{escape(k.claim)}</span> <span class="state">checked: {state}</span>'
                     f' <span class="detail">{escape(k.detail)}</span></li>')
    return '<ul class="checks">' + "".join(items) + "</ul>"


def case_html(c: Case, figure: str = "") -> str:
    """One worked case: its numbers beside the seed's, its "Verify" claims checked, and its figure."""
    return (
        f'<article class="case" id="case-{c.cell}" aria-labelledby="case-{c.cell}-h">'
        f'<h3 id="case-{c.cell}-h"><span class="cell">{c.cell}</span> Ex {c.example} · {escape(c.title)}</h3>'
        f'<p class="tricky">What makes it tricky: {escape(c.tricky)}.</p>'
        f'<div class="case-body{" with-figure" if figure else ""}"><div class="case-text">'
        + _figures_table(c.figures, f"Ex {c.example}: each number as the seed prints it and posenc's value "
                           "to the same digits; ✓ where they agree")
        + "<h4>Verify</h4>" + _checks(c.checks) + "</div>" + figure + "</div></article>"
    )


def quiz_html(items: Iterable[QuizItem]) -> str:
    """The self-test: each answer hidden in a disclosure until opened (click, Enter or Space)."""
    out = []
    for n, q in enumerate(items, 1):
        figs = "".join(
            f'<li>{escape(f.label)} = <span class="num">{escape(f.true_text)}</span>'
            + ("" if f.agrees else f" (the seed prints {escape(f.printed)}: erratum)") + "</li>"
            for f in q.figures
        )
        out.append(
            f'<details class="quiz" id="q{n}"><summary><span class="qn">Q{n}.</span> {escape(q.question)}</summary>'
            f'<div class="answer"><p>{escape(q.answer)}</p>'
            + (f'<ul class="numbers">{figs}</ul>' if figs else "")
            + _checks(q.checks) + "</div></details>"
        )
    return "".join(out)


def errata_html(errata: Iterable[str]) -> str:
    """The seed's misprinted figures, each with its true value."""
    items = [f"<li>{escape(e)}</li>" for e in errata]
    if not items:
        return "<p>Every figure the seed prints is its true value to the digits printed.</p>"
    return ("<p>Where the seed's printed figure is not the true value to its printed digits, posenc shows both. "
            "None of these is a failure of the library.</p><ul>" + "".join(items) + "</ul>")
