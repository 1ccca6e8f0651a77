"""The family pages in a browser: offline, self-test green, explorers equal to posenc, precision view equal to NumPy.

The site is the one ``posenc page`` writes (the ``page_path`` fixture: its
folder). Every explorer control is moved and the numbers read back from the
DOM are compared with the library for the same settings; the precision
view's numbers with NumPy's float32 formula, posenc's exact value and
torch's bfloat16 cast.
"""

from __future__ import annotations

import statistics

import mpmath
import numpy as np
import pytest
from page_browser import MEASURED, SLIDER_BUDGET_MS, WIDTHS, open_page, set_control

from posenc import apply_rope, rope_cos_sin, rope_frequencies, timestep_embedding
from posenc.cli._base import fixed
from posenc.page.families import FAMILIES, SITE
from posenc.page.rope_data import (
    BETAS,
    FACTORS,
    HEAD_DIMS,
    KINDS,
    ROPE_BASES,
    ROTARY_FRACTIONS,
    SCALING_BASES,
    SEQ_LENS,
    rotary_dim_of,
    scaling_of,
)
from posenc.parity.precision import rope_precision

FAMILY_PAGES = [f"{f.slug}.html" for f in FAMILIES]
SITE_BUDGET = 3 * 1024 * 1024


def _text(page, ident: str) -> str:
    return page.inner_text(f"#{ident}").strip()


def test_the_site_fits_its_budget_and_links_every_page(site):
    names = sorted(p.name for p in site.iterdir())
    assert names == sorted(f for f, _ in SITE)
    total = sum((site / n).stat().st_size for n in names)
    MEASURED["site size"] = f"{total / 1024:.0f} KiB over {len(names)} pages ({total} bytes)"
    assert total <= SITE_BUDGET
    for n in names:
        html = (site / n).read_text(encoding="utf-8")
        assert "://" not in html, n
        for target, _ in SITE:
            assert f'href="{target}"' in html, (n, target)
        assert html.count('" aria-current="page">') == 1 and f'href="{n}" aria-current="page">' in html


@pytest.mark.parametrize("name", FAMILY_PAGES)
def test_each_page_opens_offline_and_its_self_test_is_green(browser, site, name):
    o = open_page(browser, site / name, 1280)
    try:
        page = o.page
        page.wait_for_timeout(200)
        assert o.problems() == [] and o.requests == [o.url] and o.blocked == []
        assert page.evaluate("document.body.dataset.selftest") == "green"
        items = page.locator("#selftest-list li")
        assert items.count() >= 2 and page.locator("#selftest-list li.passed").count() == items.count()
        assert page.locator("li.check.failed").count() == 0
        assert page.locator("figure svg").count() >= 1
        assert page.locator("table.matrix tbody tr").count() >= 1
        dupes = page.evaluate("""() => { const seen = new Set(), d = [];
            for (const e of document.querySelectorAll('[id]')) { if (seen.has(e.id)) d.push(e.id); seen.add(e.id); }
            return d; }""")
        assert dupes == []
        unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select')]
            .filter(e => !(e.labels && [...e.labels].some(l => l.textContent.trim()))).map(e => e.id)""")
        assert unlabelled == []
        # the digits check would catch a number changed in the page: change one, run it again
        changed = page.evaluate("""() => { const td = document.querySelector('td[data-value][data-digits]');
            td.textContent = td.textContent + '1'; return window.posencFamily.common.digitsCheck()[0]; }""")
        assert changed is False
    finally:
        o.page.context.close()


@pytest.fixture
def rope_page(browser, site):
    o = open_page(browser, site / "rope.html", 1280)
    yield o.page
    o.page.context.close()


def _rope_settings(page) -> dict:
    return page.evaluate("""() => ({ h: Number(document.getElementById('r-head').value),
        b: Number(document.getElementById('r-base').value), fr: Number(document.getElementById('r-frac').value),
        p: Number(document.getElementById('r-pos-num').value), off: Number(document.getElementById('r-off').value),
        layout: document.getElementById('r-layout').value, pair: Number(document.getElementById('r-pair').value) })""")


def _check_rope(page) -> None:
    s = _rope_settings(page)
    h, b = HEAD_DIMS[s["h"]], ROPE_BASES[s["b"]]
    r = int(h * ROTARY_FRACTIONS[s["fr"]])
    p, off, lay, i = s["p"], s["off"], s["layout"], min(s["pair"], r // 2 - 1)
    c, sn = rope_cos_sin([p], h, base=b, rotary_dim=r, dtype=np.float64)
    assert _text(page, "r-cos") == fixed(c[0, i], 8) and _text(page, "r-sin") == fixed(sn[0, i], 8)
    assert float(_text(page, "r-omega")) == rope_frequencies(h, base=b, rotary_dim=r).inv_freq[i]
    q = (np.arange(h) + 1.0) / h
    k = 1.0 - np.arange(h) / h
    kw = {"base": b, "layout": lay, "rotary_dim": r}
    qr = apply_rope(q[None], [p], **kw)[0]
    j1, j2 = (i, i + r // 2) if lay == "half" else (2 * i, 2 * i + 1)
    assert _text(page, "r-channels") == f"{j1}, {j2}"
    assert _text(page, "r-o1") == fixed(qr[j1], 8) and _text(page, "r-o2") == fixed(qr[j2], 8)
    score = np.sum(qr * apply_rope(k[None], [p + off], **kw)[0])  # the page sums as np.sum does
    assert _text(page, "r-score") == fixed(float(score), 10)


def test_rope_explorer_every_control_gives_posencs_numbers(rope_page):
    page = rope_page
    _check_rope(page)
    before = _text(page, "r-cos")
    moves = [("r-pos", 2500), ("r-pos-num", 999_983), ("r-off", -40), ("r-head", 4), ("r-base", 4), ("r-frac", 1),
             ("r-layout", "interleaved"), ("r-pair", 9), ("r-frac", 2), ("r-head", 0), ("r-frac", 0), ("r-pair", 3),
             ("r-base", 0)]
    seen = {before}
    for ident, value in moves:
        set_control(page, ident, value)
        _check_rope(page)
        seen.add(_text(page, "r-cos") + _text(page, "r-score") + _text(page, "r-o1"))
    assert len(seen) >= len(moves)  # every move changed what is shown


def _precision_cells(page, prefix: str) -> dict[tuple[int, str], float]:
    cells = page.evaluate(f"""() => [...document.querySelectorAll('#{prefix}-prec-body td[data-kind]')].map(td =>
        [Number(td.dataset.p), td.dataset.kind, td.dataset.value])""")
    return {(p, k): float(v) for p, k, v in cells}


def _numpy_precision(ladder_freq, positions: list[int]) -> dict[tuple[int, str], float]:
    """The float32 formula in NumPy, cos/sin of the float32 angle by mpmath; bf16 by torch; f16 by NumPy."""
    import torch

    f = ladder_freq
    ps = np.array(positions, dtype=np.float64)
    s_ex, c_ex = _exact(f, ps)
    a32 = np.float32(1) * ps.astype(np.float32)[:, None] * f.inv_freq.astype(np.float32)[None, :]
    with mpmath.workdps(30):
        c32 = np.array([[float(mpmath.cos(mpmath.mpf(float(v)))) for v in row] for row in a32])
        s32 = np.array([[float(mpmath.sin(mpmath.mpf(float(v)))) for v in row] for row in a32])

    def bf(x):
        return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16).to(torch.float64).numpy()

    out = {}
    for j, p in enumerate(positions):
        out[(p, "f32")] = max(np.abs(c32[j] - c_ex[j]).max(), np.abs(s32[j] - s_ex[j]).max())
        out[(p, "bf16")] = max(np.abs(bf(c_ex[j]) - c_ex[j]).max(), np.abs(bf(s_ex[j]) - s_ex[j]).max())
        out[(p, "f16")] = max(np.abs(c_ex[j].astype(np.float16).astype(np.float64) - c_ex[j]).max(),
                              np.abs(s_ex[j].astype(np.float16).astype(np.float64) - s_ex[j]).max())
    return out


def _exact(f, ps):
    """posenc's exact cos/sin of p·ω (float64), without the attention factor."""
    from posenc.exact import sincos

    return sincos(ps, f.ladder)


DECADES = [1, 10, 100, 1000, 10**4, 10**5, 10**6]


def _compare_precision(got: dict, f) -> None:
    want = _numpy_precision(f, DECADES)
    assert set(got) == set(want)
    for key, w in want.items():
        # bfloat16 and float16: the same IEEE roundings, the same bits; the angle's: within the last bits of cos
        tol = 0.0 if key[1] != "f32" else 4e-16
        assert abs(got[key] - w) <= tol, (key, got[key], w)
    # and bit for bit the page module's NumPy computation (posenc's exact sin/cos of the float32 angle)
    mod = rope_precision(f.ladder, np.array(DECADES, dtype=np.float64))
    for j, p in enumerate(DECADES):
        for kind in ("f32", "bf16", "f16"):
            assert got[(p, kind)] == mod[kind][j], (p, kind)
    assert got[(10**6, "f32")] > 100 * got[(1, "f32")]  # it grows with the position


def test_rope_precision_view_equals_numpy(rope_page):
    page = rope_page
    for moves in ([], [("r-head", 4), ("r-base", 4)], [("r-head", 2), ("r-base", 0), ("r-frac", 1)]):
        for ident, value in moves:
            set_control(page, ident, value)
        s = _rope_settings(page)
        h = HEAD_DIMS[s["h"]]
        r = int(h * ROTARY_FRACTIONS[s["fr"]])
        _compare_precision(_precision_cells(page, "r"), rope_frequencies(r, base=ROPE_BASES[s["b"]]))


@pytest.fixture
def scaling_page(browser, site):
    o = open_page(browser, site / "scalings.html", 1280)
    yield o.page
    o.page.context.close()


def _scaling_now(page):
    s = page.evaluate("""() => Object.fromEntries(['s-kind', 's-base', 's-factor', 's-seq', 's-beta', 's-pos-num',
        's-pair'].map(id => [id, Number(document.getElementById(id).value)]))""")
    kind, _, knob = KINDS[s["s-kind"]]
    b, fac = SCALING_BASES[s["s-base"]], FACTORS[s["s-factor"]]
    beta = BETAS[s["s-beta"]] if knob == "beta" else 32.0
    seq = SEQ_LENS[s["s-seq"]] if knob == "seq" else None
    sc = scaling_of(kind, fac, beta)
    r = rotary_dim_of(kind)
    f = rope_frequencies(64, base=b, scaling=sc, rotary_dim=r, seq_len=seq)
    return s, kind, b, sc, r, seq, f


def _check_scaling(page) -> None:
    s, _, b, sc, r, seq, f = _scaling_now(page)
    i, p = min(s["s-pair"], r // 2 - 1), s["s-pos-num"]
    assert float(_text(page, "s-af")) == f.attention_factor
    assert float(_text(page, "s-eff-base")) == f.base
    assert float(_text(page, "s-omega")) == f.inv_freq[i]
    plain = rope_frequencies(64, base=b).inv_freq[: r // 2]
    assert _text(page, "s-kept") == f"{int(np.sum(f.inv_freq == plain))} of {r // 2}"
    c, sn = rope_cos_sin([p], 64, base=b, scaling=sc, rotary_dim=r, seq_len=seq, dtype=np.float64)
    assert _text(page, "s-cos") == fixed(c[0, i], 8) and _text(page, "s-sin") == fixed(sn[0, i], 8)


def test_scalings_explorer_every_control_gives_posencs_numbers(scaling_page):
    page = scaling_page
    _check_scaling(page)
    seen = set()
    moves = [("s-pos", 777), ("s-pos-num", 123_457), ("s-pair", 20), ("s-factor", 1), ("s-beta", 0), ("s-base", 0),
             ("s-kind", 3), ("s-seq", 5), ("s-seq", 1), ("s-kind", 6), ("s-seq", 6), ("s-kind", 5), ("s-factor", 4),
             ("s-kind", 2), ("s-kind", 1), ("s-kind", 7), ("s-kind", 0), ("s-base", 2)]
    for ident, value in moves:
        set_control(page, ident, value)
        _check_scaling(page)
        seen.add(page.inner_text("#s-facts") + page.inner_text("#s-pair-facts"))
    assert len(seen) >= len(moves) - 2  # a knob that does not apply to the variant changes nothing (disabled)


def test_scalings_precision_view_equals_numpy(scaling_page):
    page = scaling_page
    for moves in ([], [("s-kind", 1), ("s-factor", 4)], [("s-kind", 7)]):
        for ident, value in moves:
            set_control(page, ident, value)
        *_, f = _scaling_now(page)
        _compare_precision(_precision_cells(page, "s"), f)


def test_timesteps_precision_table_equals_numpy(browser, site):
    o = open_page(browser, site / "timesteps.html", 1280)
    try:
        cells = o.page.evaluate("""() => [...document.querySelectorAll('#ts-prec td[data-kind]')].map(td =>
            [Number(td.dataset.t), td.dataset.kind, Number(td.dataset.value)])""")
    finally:
        o.page.context.close()
    assert len(cells) == 3 * len(DECADES)
    t = np.array(DECADES, dtype=np.float64)
    half = 128
    w = np.exp(-np.log(10000.0) * np.arange(half) / (half - 1.0))  # diffusers' ladder, downscale_freq_shift 1
    a32 = t.astype(np.float32)[:, None] * w.astype(np.float32)[None, :]  # timesteps.float() * emb
    a = a32.astype(np.float64)
    exact = timestep_embedding(t, 256, dtype=np.float64)
    f32 = np.abs(np.concatenate([np.sin(a), np.cos(a)], axis=1) - exact).max(axis=1)
    f16 = np.abs(exact.astype(np.float16).astype(np.float64) - exact).max(axis=1)
    for tt, kind, v in cells:
        j = DECADES.index(tt)
        if kind == "f32":
            assert v == pytest.approx(f32[j], rel=1e-6, abs=1e-15), tt
        elif kind == "f16":
            assert v == f16[j], tt
    assert max(v for tt, k, v in cells if k == "f32" and tt == 10**6) > 1e-3  # far past 999 the angle drifts


def _timed(page, moves) -> list[float]:
    page.evaluate("window.posencFamily.timings.length = 0")
    for ident, value in moves:
        set_control(page, ident, value)
    return page.evaluate("Array.from(window.posencFamily.timings)")


def test_slider_updates_within_budget(rope_page, browser, site):
    rope = _timed(rope_page, [("r-pos", v) for v in range(0, 10_000, 500)]
                  + [("r-head", 4), ("r-base", 5), ("r-off", 30), ("r-pair", 50), ("r-frac", 0)])
    o = open_page(browser, site / "scalings.html", 1280)
    try:
        sc = _timed(o.page, [("s-pos", v) for v in range(0, 10_000, 500)]
                    + [("s-kind", k) for k in range(len(KINDS))] + [("s-factor", 4), ("s-base", 1)])
    finally:
        o.page.context.close()
    for name, ts in (("RoPE", rope), ("scalings", sc)):
        MEASURED[f"{name} explorer update"] = (f"median {statistics.median(ts):.1f} ms, max {max(ts):.1f} ms over "
                                               f"{len(ts)} slider moves (budget {SLIDER_BUDGET_MS:.0f} ms)")
        assert len(ts) >= 20 and statistics.median(ts) <= SLIDER_BUDGET_MS


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_and_is_screenshot(browser, site, shots, width):
    names = []
    for name in FAMILY_PAGES:
        o = open_page(browser, site / name, width)
        try:
            page = o.page
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name
            shot = shots / f"{name.removesuffix('.html')}-{width}.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            names.append(shot.name)
            assert o.problems() == []
        finally:
            o.page.context.close()
    MEASURED[f"family screenshots at {width} px"] = ", ".join(names)


def test_timesteps_explorer_gives_posencs_embedding_and_numpys_precision(browser, site):
    from posenc.page.rope_data import TIME_DIMS
    from posenc.timesteps import Diffusers

    o = open_page(browser, site / "timesteps.html", 1280)
    page = o.page
    try:
        seen = set()
        moves = [(None, None), ("t-pos", 999), ("t-pos-num", 123_457), ("t-dim", 0), ("t-shift", "0"),
                 ("t-flip", "1"), ("t-dim", 3), ("t-pos", 0)]
        for ident, value in moves:
            if ident:
                set_control(page, ident, value)
            s = page.evaluate("""() => Object.fromEntries(['t-pos-num', 't-dim', 't-shift', 't-flip'].map(id =>
                [id, Number(document.getElementById(id).value)]))""")
            dim, shift, flip = TIME_DIMS[s["t-dim"]], s["t-shift"], bool(s["t-flip"])
            conv = Diffusers(flip_sin_to_cos=flip, downscale_freq_shift=shift)
            want = timestep_embedding(float(s["t-pos-num"]), dim, convention=conv, dtype=np.float64)
            n = dim // 2
            for j in (0, 1, 2, 3, n - 1, n, dim - 2, dim - 1):
                assert _text(page, f"t-ch-{j}") == fixed(want[j], 8), (s, j)
            seen.add(page.inner_text("#t-body"))
            lad = conv.plan(dim).ladder

            class F:  # what _compare_precision reads: the float64 frequencies and the ladder
                inv_freq = lad.w0
                ladder = lad

            _compare_precision(_precision_cells(page, "t"), F)
        assert len(seen) == len(moves)
        ts = _timed(page, [("t-pos", v) for v in range(0, 1000, 50)] + [("t-dim", 3), ("t-shift", "1")])
        MEASURED["timesteps explorer update"] = f"median {statistics.median(ts):.1f} ms, max {max(ts):.1f} ms"
        assert statistics.median(ts) <= SLIDER_BUDGET_MS
        assert o.problems() == []
    finally:
        page.context.close()
