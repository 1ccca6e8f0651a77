"""The page in a real browser: self-contained, the seed's numbers on it, accessible, at 375 and 1280 px.

Opened from ``file://`` in headless Chromium with every request recorded and
all but the page's own blocked (see page_browser.py).
"""

from __future__ import annotations

import re

import pytest
from page_browser import MEASURED, WIDTHS, open_page

from posenc import seed

# numbers as the seed prints them (its text, not posenc's output)
SEED_NUMBERS = ["0.8415", "0.9093", "0.1411", "-0.7568", "-0.9589", "-0.2794", "0.6570", "6.2832", "0.4794",
                "0.06279", "0.029996", "0.99955", "0.079915", "0.996802", "159.15", "0.82688", "0.56238",
                "-0.54402", "-0.83907", "0.998750", "60650", "617.3"]


@pytest.mark.parametrize("width", WIDTHS)
def test_no_request_no_console_error(browser, page_path, width):
    o = open_page(browser, page_path, width)
    try:
        o.page.wait_for_timeout(300)  # anything deferred would have asked by now
        assert o.problems() == []
        assert o.requests == [o.url] and o.blocked == []
        assert o.page.evaluate("document.querySelectorAll('[src], link[href], iframe, object, embed').length") == 0
    finally:
        o.page.context.close()


def test_the_recorder_sees_and_blocks_requests(browser, tmp_path):
    """The check above could not pass by missing requests: a page that does ask is caught."""
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><title>x</title><img alt="" src="https://example.invalid/a.png">'
                     '<script>fetch("http://example.invalid/b").catch(() => {})</script>')
    o = open_page(browser, leaky, 800)
    try:
        o.page.wait_for_timeout(300)
        assert set(o.blocked) == {"https://example.invalid/a.png", "http://example.invalid/b"}
        assert any(p.startswith("request: ") for p in o.problems())
    finally:
        o.page.context.close()


def test_content_security_policy_forbids_fetching(opened):
    denied = opened.page.evaluate("""() => fetch("https://example.invalid/x").then(() => "fetched", e => "denied")""")
    assert denied == "denied"
    assert opened.blocked == []  # refused by the page's own policy, before any request
    assert any("Content Security Policy" in text for _, text in opened.console)


def test_seed_numbers_and_checks(opened):
    page = opened.page
    text = page.inner_text("main")
    for number in SEED_NUMBERS:
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", text), number
    for c in seed.cases():
        art = page.locator(f"#case-{c.cell}")
        assert f"Ex {c.example}" in art.locator("h3").inner_text()
        rows = art.locator("table.figures tbody tr")
        assert rows.count() == len(c.figures)
        for j, f in enumerate(c.figures):
            cells = rows.nth(j).locator("th, td").all_inner_texts()
            assert cells[:3] == [f.label, f.printed, f.true_text]
            assert ("erratum" in cells[3]) == (not f.agrees)
        checks = art.locator("li.check")
        assert checks.count() == len(c.checks) > 0
        for j, k in enumerate(c.checks):
            assert k.claim in checks.nth(j).inner_text() and "checked: passed" in checks.nth(j).inner_text()
    assert page.locator("table.matrix tbody tr").count() == 8
    assert "8 of 8 cases verified" in page.inner_text("#cases-summary")


def test_errata_beside_true_values(opened):
    errata = opened.page.locator("#errata li").all_inner_texts()
    assert errata == seed.errata() and errata
    wrong = opened.page.locator("tr.erratum-row").count()
    assert wrong == sum(len(c.errata) for c in seed.cases())


def test_formula_and_figures(opened):
    page = opened.page
    assert page.locator("#formula math").count() >= 3
    for key in ("wave", "heatmap", "rotation", "ladder", "kernel"):
        svg = page.locator(f"#figure-{key} > svg")
        assert svg.get_attribute("role") == "img" and len(svg.get_attribute("aria-label") or "") > 20
        box = svg.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 150  # drawn, not collapsed
    dupes = page.evaluate("""() => { const seen = new Set(), d = [];
        for (const e of document.querySelectorAll('[id]')) { if (seen.has(e.id)) d.push(e.id); seen.add(e.id); }
        return d; }""")
    assert dupes == []
    # every internal reference (clip paths, glyphs, links) resolves inside the page
    missing = page.evaluate("""() => [...document.querySelectorAll('[href^="#"], use, [clip-path]')].map(e =>
        (e.getAttribute('href') || e.getAttribute('xlink:href') || e.getAttribute('clip-path') || '')
          .replace(/^url\\(#|\\)$/g, '').replace(/^#/, '')).filter(id => id && !document.getElementById(id))""")
    assert missing == []


def test_self_test_reveals_answers(opened):
    page = opened.page
    items = seed.quiz()
    quiz = page.locator("details.quiz")
    assert quiz.count() == len(items)
    for n, q in enumerate(items):
        d = quiz.nth(n)
        answer = d.locator(".answer")
        assert d.get_attribute("open") is None and not answer.is_visible()
        assert q.question in d.locator("summary").inner_text()
        if n % 2:
            d.locator("summary").click()
        else:  # from the keyboard
            d.locator("summary").focus()
            page.keyboard.press("Enter")
        assert answer.is_visible()
        assert q.answer in answer.inner_text()
        for f in q.figures:
            assert f.true_text in answer.inner_text()
        assert answer.locator("li.check.passed").count() == len(q.checks)
    quiz.nth(0).locator("summary").focus()
    page.keyboard.press(" ")
    assert not quiz.nth(0).locator(".answer").is_visible()  # Space closes it again


def test_every_control_has_a_label(opened):
    unlabelled = opened.page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
        .filter(e => !(e.labels && [...e.labels].some(l => l.textContent.trim())) && !e.getAttribute('aria-label'))
        .map(e => e.id || e.outerHTML)""")
    assert unlabelled == []
    page = opened.page
    for label, ident in [("position pos", "pos"), ("dmodel", "d-model"), ("base b", "base"), ("shift k", "shift"),
                         ("pair i", "pair"), ("context", "context")]:
        assert page.get_by_label(label, exact=True).get_attribute("id") == ident
    assert page.locator("input").count() == 7


def test_keyboard_reaches_and_moves_every_control(opened):
    page = opened.page
    page.locator("#pos").focus()
    order = [page.evaluate("document.activeElement.id")]
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
    assert order == ["pos", "pos-num", "d-model", "base", "shift", "pair", "context"]
    page.locator("#d-model").focus()
    page.keyboard.press("ArrowRight")
    assert page.input_value("#d-model") == "1" and page.inner_text("#d-model-out") == "8"
    assert page.locator("#pe-body td[data-channel]").count() == 8
    page.keyboard.press("End")
    assert page.inner_text("#d-model-out") == "512" and page.get_attribute("#d-model", "aria-valuetext") == "512"
    assert page.locator("#pe-body td[data-channel]").count() == 16
    page.locator("#pos").focus()
    page.keyboard.press("ArrowLeft")
    assert page.input_value("#pos-num") == "999"


def _luminance(rgb: tuple[float, ...]) -> float:
    def lin(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(v) for v in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_text_contrast(opened):
    """WCAG AA: 4.5:1 for text, 3:1 for large text, over the first opaque background behind it."""
    opened.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    samples = opened.page.evaluate("""() => {
      const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
      const out = [], seen = new Set();
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const e = n.parentElement;
        if (!n.textContent.trim() || !e || seen.has(e) || !e.getClientRects().length) continue;
        seen.add(e);
        const st = getComputedStyle(e);
        if (st.visibility === 'hidden' || st.clip === 'rect(0px, 0px, 0px, 0px)') continue;
        let bg = null;
        for (let a = e; a; a = a.parentElement) {
          const c = rgb(getComputedStyle(a).backgroundColor);
          if (c.length === 3 || (c.length === 4 && c[3] > 0.99)) { bg = c; break; }
        }
        const svg = e instanceof SVGElement;
        out.push({ text: n.textContent.trim().slice(0, 30), fg: rgb(svg ? st.fill : st.color),
                   bg: bg || [255, 255, 255], size: parseFloat(st.fontSize), bold: Number(st.fontWeight) >= 700 });
      }
      return out; }""")
    assert len(samples) > 200
    low = []
    for s in samples:
        a, b = _luminance(tuple(s["fg"])), _luminance(tuple(s["bg"]))
        ratio = (max(a, b) + 0.05) / (min(a, b) + 0.05)
        large = s["size"] >= 24 or (s["bold"] and s["size"] >= 18.66)
        if ratio < (3.0 if large else 4.5):
            low.append((s["text"], round(ratio, 2)))
    assert low == []


@pytest.mark.parametrize("width", WIDTHS)
def test_fits_the_width_and_screenshots(browser, page_path, shots, width):
    o = open_page(browser, page_path, width)
    page = o.page
    try:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for ident in ("pos", "pos-num", "d-model", "base", "shift", "pair", "context"):
            box = page.locator(f"#{ident}").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, ident
        for panel in ("p-pe", "p-wave", "p-rot", "p-kernel", "p-ladder"):
            box = page.locator(f"#{panel}").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, panel
        full = shots / f"page-{width}.png"
        page.screenshot(path=str(full), full_page=True)
        page.locator("#explorer").scroll_into_view_if_needed()
        page.evaluate("document.getElementById('explorer-h').scrollIntoView()")
        part = shots / f"explorer-{width}.png"
        page.screenshot(path=str(part))
        for f in (full, part):
            assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        MEASURED[f"screenshots at {width} px"] = f"{full.name}, {part.name}"
        assert o.problems() == []
    finally:
        page.context.close()
