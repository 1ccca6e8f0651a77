"""The explorer, driven like a reader drives it: every control moved to several values, every number checked.

Sliders move by keyboard (Home, End, arrows), the position is typed; after
each setting every number the panels show must be the one posenc computes
for it (``encode``, ``shift_matrix``, ``similarity``, ``wavelengths``,
``context_report``), written as posenc writes it. The load and update times
are measured here and printed in the summary, not asserted.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
from page_browser import MEASURED, open_page

import posenc
from posenc.cli._base import fixed
from posenc.page.data import BASES, CONTEXTS, D_MODELS


@dataclass(frozen=True)
class Setting:
    pos: int
    d: int
    base: float
    k: int
    pair: int
    context: int


SETTINGS = [
    Setting(1000, 4, 10000.0, 5, 1, 8192),            # the page as it opens: the seed's Ex 5/6 model
    Setting(123456789, 512, 500000.0, -50, 255, 1048576),
    Setting(10000, 64, 100.0, 0, 0, 128),
    Setting(0, 8, 1e6, 50, 2, 8192),
    Setting(10**9, 16, 10000.0, -5, 7, 65536),
    Setting(7, 256, 2000.0, 1, 100, 4096),
]


def _grouped(n: int) -> str:
    return f"{n:,}".replace(",", "\u202f")


def expected(s: Setting) -> dict[str, str]:
    """Every number the panels show for ``s``, from posenc, keyed by the element that shows it."""
    d, b, i = s.d, s.base, s.pair
    pe = posenc.encode(s.pos, d, base=b, dtype=np.float64)
    both = posenc.encode([s.pos, s.pos + s.k], d, base=b, dtype=np.float64)
    t = posenc.shift_matrix(s.k, d, base=b)
    lam = posenc.wavelengths(d, b)
    r = posenc.context_report(s.context, d, b)
    shown = range(d) if d <= 16 else [*range(8), *range(d - 8, d)]
    out = {f'td[data-channel="{j}"]': fixed(pe[j], 8) for j in shown}
    out |= {
        "#wave-sin": fixed(pe[0], 8), "#wave-cos": fixed(pe[1], 8), "#wave-turns": fixed(s.pos / lam[0], 2),
        "#rot-from-sin": fixed(both[0, 2 * i], 8), "#rot-from-cos": fixed(both[0, 2 * i + 1], 8),
        "#rot-to-sin": fixed(both[1, 2 * i], 8), "#rot-to-cos": fixed(both[1, 2 * i + 1], 8),
        "#rot-phi": fixed(float(posenc.frequencies(d, b)[i]) * s.k, 6),
        "#rot-cos-phi": fixed(t[2 * i, 2 * i], 8), "#rot-sin-phi": fixed(t[2 * i, 2 * i + 1], 8),
        "#rot-lambda": fixed(lam[i], 2),
        "#kernel-value": fixed(float(posenc.similarity(s.pos, s.pos + s.k, d, base=b)), 6),
        "#lambda-max": fixed(r.max_wavelength, 1), "#loops": fixed(float(r.loops[-1]), 2),
        "#wrapped": f"{r.wrapped_channels} of {d // 2}", "#min-base": _grouped(math.ceil(r.min_base)),
        "#d-model-out": str(d), "#shift-out": str(s.k), "#pair-out": str(i), "#context-out": _grouped(s.context),
    }
    return out


def _slide(page, ident: str, steps_from_home: int) -> None:
    page.locator(f"#{ident}").focus()
    page.keyboard.press("Home")
    for _ in range(steps_from_home):
        page.keyboard.press("ArrowRight")


def apply(page, s: Setting) -> None:
    """Set ``s`` the way a reader would: type the position, move the sliders from the keyboard."""
    page.fill("#pos-num", str(s.pos))
    page.keyboard.press("Enter")
    _slide(page, "d-model", D_MODELS.index(s.d))
    _slide(page, "base", BASES.index(s.base))
    page.locator("#shift").focus()
    page.keyboard.press("End" if s.k > 0 else "Home")
    for _ in range(50 - abs(s.k)):
        page.keyboard.press("ArrowLeft" if s.k > 0 else "ArrowRight")
    _slide(page, "pair", s.pair)
    _slide(page, "context", CONTEXTS.index(s.context))


def test_every_control_shows_posenc_numbers(browser, page_path):
    o = open_page(browser, page_path, 1280)
    page = o.page
    try:
        for n, s in enumerate(SETTINGS):
            if n:
                apply(page, s)
            assert page.input_value("#pos-num") == str(s.pos)
            assert page.input_value("#pos") == str(min(s.pos, 10000))
            want = expected(s)
            got = {sel: page.inner_text(sel) for sel in want}
            assert got == want, s
            assert page.locator("td[data-channel]").count() == min(s.d, 16)
            verdict = page.inner_text("#verdict")
            assert verdict.startswith("Wraps" if posenc.context_report(s.context, s.d, s.base).wraps
                                      else "Does not wrap"), (s, verdict)
            assert f"pos {s.pos}," in page.inner_text("#explorer-status")
        assert o.problems() == []
    finally:
        page.context.close()


def test_position_slider_and_field_stay_in_step(browser, page_path):
    o = open_page(browser, page_path, 1280)
    page = o.page
    try:
        page.locator("#pos").focus()
        page.keyboard.press("End")
        assert page.input_value("#pos-num") == "10000"
        assert page.inner_text('td[data-channel="0"]') == fixed(posenc.encode(10000, 4, dtype=np.float64)[0], 8)
        page.fill("#pos-num", "2000000000")  # beyond the field's maximum: refused, then clamped on change
        page.keyboard.press("Enter")
        assert page.input_value("#pos-num") == "1000000000" and page.input_value("#pos") == "10000"
        assert page.inner_text('td[data-channel="1"]') == fixed(posenc.encode(10**9, 4, dtype=np.float64)[1], 8)
        page.fill("#pos-num", "")  # half-typed: the last good value stays
        assert page.inner_text("#pe-lead").startswith("pos = 1000000000,")
        assert o.problems() == []
    finally:
        page.context.close()


_MOVE_JS = """async ([ident, values]) => {
  const el = document.getElementById(ident), frame = [], P = window.posencPage;
  const before = P.timings.length;
  for (const v of values) {
    const t0 = performance.now();
    el.value = String(v);
    el.dispatchEvent(new Event("input", { bubbles: true }));
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));  // runs once that frame is painted
    frame.push(performance.now() - t0);
  }
  return { frame, work: P.timings.slice(before) };
}"""


def _ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.1f} ms, max {max(xs):.1f} ms over {len(xs)}"


def test_load_and_update_times(browser, page_path):
    """Measured, reported in the summary; asserted only that each move shows posenc's number."""
    loads, firsts = [], []
    for _ in range(3):
        o = open_page(browser, page_path, 1280)
        nav = o.page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
        loads.append(nav["loadEventEnd"])
        firsts.append(o.page.evaluate("window.posencPage.timings[0]"))
        o.page.context.close()
    MEASURED["load (navigation start to load event)"] = _ms(loads)
    MEASURED["first explorer render"] = _ms(firsts)
    o = open_page(browser, page_path, 1280)
    page = o.page
    try:
        page.evaluate("""() => { const e = document.getElementById('d-model'); e.value = '7';
                                 e.dispatchEvent(new Event('input', { bubbles: true })); }""")
        positions = list(range(2000, 2000 + 37 * 30, 37))
        pos = page.evaluate(_MOVE_JS, ["pos", positions])
        assert page.inner_text('td[data-channel="511"]') == fixed(
            posenc.encode(positions[-1], 512, dtype=np.float64)[511], 8)
        MEASURED["position slider, d_model 512: input to painted frame"] = _ms(pos["frame"])
        MEASURED["position slider, d_model 512: script work per update"] = _ms(pos["work"])
        base = page.evaluate(_MOVE_JS, ["base", list(range(13))])  # each base a new ladder: the kernel recomputed
        assert page.inner_text("#kernel-value") == fixed(float(posenc.similarity(0, 5, 512, base=1e6)), 6)
        MEASURED["base slider, d_model 512 (new kernel each): input to painted frame"] = _ms(base["frame"])
        assert o.problems() == []
    finally:
        page.context.close()
