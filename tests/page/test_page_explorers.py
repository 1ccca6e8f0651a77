"""The M-RoPE, ALiBi, T5, xPos and NeRF explorers in a browser: every number the page computes equals posenc's.

Each test opens the page ``posenc page`` wrote, moves the explorer's
controls (hostile settings included: large positions, edge buckets, settings
posenc refuses), and compares the numbers read back from the DOM — each
cell's double in ``data-value`` — with posenc's Python functions for the
same settings, bit for bit. The moves' update times are collected for the
50 ms budget.
"""

from __future__ import annotations

import statistics

import numpy as np
from page_browser import MEASURED, SLIDER_BUDGET_MS, open_page, set_control

from posenc import (
    PosEncError,
    XPos,
    alibi_slopes,
    nerf_encoding,
    rope_cos_sin,
    t5_bucket,
    t5_bucket_edges,
    xpos_scale,
)
from posenc.bias import Mpt
from posenc.bias.alibi import alibi_rows_at
from posenc.page.family_data import (
    ALIBI_BIAS_MAX,
    MROPE_BASES,
    MROPE_SECTIONS,
    T5_BUCKETS,
    T5_DISTANCES,
    XPOS_ROTARY,
    XPOS_SCALE_BASES,
    XPOS_SEQ_LENS,
)


def _val(page, ident: str) -> float:
    return float(page.get_attribute(f"#{ident}", "data-value"))


def _values(page, ident: str) -> dict[str, str]:
    return page.evaluate("""(ids) => Object.fromEntries(ids.map(id => [id, document.getElementById(id).value]))""",
                         ident)


def _explore(browser, site, name, moves, check, key_ids):
    """Open a page, check it, make each move and check again; every move must change what is shown."""
    o = open_page(browser, site / name, 1280)
    page = o.page
    try:
        page.evaluate("window.posencFamily.timings.length = 0")
        check(page)
        def shown():
            return "".join(page.inner_text(k) for k in key_ids.split())

        seen = {shown()}
        for ident, value in moves:
            set_control(page, ident, value)
            check(page)
            seen.add(shown())
        ts = page.evaluate("Array.from(window.posencFamily.timings)")
        assert o.problems() == []
        assert page.evaluate("document.body.dataset.selftest") == "green"
        return seen, ts
    finally:
        page.context.close()


def _timing(name: str, ts: list[float]) -> None:
    MEASURED[f"{name} explorer update"] = (f"median {statistics.median(ts):.2f} ms, max {max(ts):.1f} ms over "
                                           f"{len(ts)} moves (budget {SLIDER_BUDGET_MS:.0f} ms)")
    assert statistics.median(ts) <= SLIDER_BUDGET_MS


def test_mrope_explorer_gives_posencs_cos_and_sin(browser, site):
    def check(page):
        v = _values(page, ["m-pos-num", "m-h", "m-w", "m-sec", "m-layout", "m-base", "m-pair"])
        sizes, layout = MROPE_SECTIONS[int(v["m-sec"])], v["m-layout"]
        pos = [int(v["m-pos-num"]), int(v["m-h"]), int(v["m-w"])]
        i, base = int(v["m-pair"]), MROPE_BASES[int(v["m-base"])]
        try:
            c, s = rope_cos_sin([pos], 128, base=base, sections=sizes, section_layout=layout, dtype=np.float64)
        except PosEncError:
            assert "posenc refuses" in page.inner_text("#m-refused")
            return
        assert page.inner_text("#m-refused") == ""
        from posenc.rope.sections import Sections

        axis = int(Sections(sizes, layout).pair_axes()[i])
        assert page.inner_text("#m-axis") == "thw"[axis] and _val(page, "m-p") == pos[axis]
        assert _val(page, "m-cos") == c[0, i] and _val(page, "m-sin") == s[0, i]
        counts = np.bincount(Sections(sizes, layout).pair_axes(), minlength=3).tolist()
        assert page.inner_text("#m-count") == ", ".join(map(str, counts))

    moves = [("m-pair", 5), ("m-pos", 7777), ("m-pos-num", 999_999), ("m-pair", 20), ("m-h", 999), ("m-pair", 63),
             ("m-w", 1), ("m-layout", "interleaved"), ("m-sec", 1), ("m-pair", 2), ("m-pair", 1), ("m-base", 0),
             ("m-sec", 3), ("m-pair", 61), ("m-sec", 0), ("m-layout", "contiguous"), ("m-base", 1)]
    seen, ts = _explore(browser, site, "mrope.html", moves, check, "#m-facts")
    assert len(seen) >= len(moves) - 1  # the refused setting shows no numbers
    _timing("M-RoPE", ts)


def test_alibi_explorer_gives_posencs_slopes_and_bias(browser, site):
    def check(page):
        v = _values(page, ["a-heads", "a-head", "a-dist-num", "a-conv", "a-bmax"])
        n, h, d = int(v["a-heads"]), int(v["a-head"]), int(v["a-dist-num"])
        conv = Mpt(alibi_bias_max=ALIBI_BIAS_MAX[int(v["a-bmax"])]) if v["a-conv"] == "mpt" else "press"
        want = alibi_slopes(n, convention=conv)
        got = page.evaluate("""() => [...document.querySelectorAll('#a-slopes-body td[data-head]')]
            .map(td => td.dataset.value)""")
        assert [float(g) for g in got] == want.tolist()  # every head, bit for bit
        assert _val(page, "a-slope") == want[h]
        assert _val(page, "a-bias") == alibi_rows_at(n, [-d], convention=conv, dtype=np.float64)[0, h]
        assert _val(page, "a-bias32") == alibi_rows_at(n, [-d], convention=conv, dtype=np.float32)[0, h]
        assert _val(page, "a-reach") == (1.0 / want)[h]

    moves = [("a-head", 3), ("a-dist", 5000), ("a-dist-num", 999_999), ("a-heads", 64), ("a-head", 63),
             ("a-heads", 5), ("a-heads", 33), ("a-head", 32), ("a-conv", "mpt"), ("a-bmax", 2), ("a-heads", 48),
             ("a-head", 40), ("a-bmax", 0), ("a-heads", 1), ("a-conv", "press"), ("a-heads", 17), ("a-head", 16)]
    seen, ts = _explore(browser, site, "alibi.html", moves, check, "#a-facts")
    assert len(seen) >= len(moves) - 1
    _timing("ALiBi", ts)


def test_every_alibi_head_count_and_convention_gives_posencs_slopes(browser, site):
    o = open_page(browser, site / "alibi.html", 1280)
    try:
        got = o.page.evaluate("""(bm) => { const a = window.posencFamily.alibi, out = {};
            const slopes = (n, conv, b) => a.exponents(n, conv, b).map(([x, y]) => String(a.pow2Neg(x, y)));
            for (let n = 1; n <= 64; n++) {
              out[`${n}|press`] = slopes(n, 'press', 8);
              for (const b of bm) out[`${n}|${b}`] = slopes(n, 'mpt', b);
            }
            return out; }""", list(ALIBI_BIAS_MAX))
    finally:
        o.page.context.close()
    for n in range(1, 65):
        assert [float(v) for v in got[f"{n}|press"]] == alibi_slopes(n).tolist(), n
        for b in ALIBI_BIAS_MAX:
            want = alibi_slopes(n, convention=Mpt(alibi_bias_max=b))
            assert [float(v) for v in got[f"{n}|{b:g}"]] == want.tolist(), (n, b)


def _t5_check(page):
    v = _values(page, ["b-nb", "b-md", "b-bidi", "b-rel-num"])
    nb, md = T5_BUCKETS[int(v["b-nb"])], T5_DISTANCES[int(v["b-md"])]
    bidi, rel = v["b-bidi"] == "1", int(v["b-rel-num"])
    kw = {"num_buckets": nb, "max_distance": md, "bidirectional": bidi}
    try:
        edges = t5_bucket_edges(**kw)
    except PosEncError as exc:
        assert "posenc refuses" in page.inner_text("#b-refused")
        assert str(exc).split(",")[0] in page.inner_text("#b-refused")
        return
    assert page.inner_text("#b-refused") == ""
    assert _val(page, "b-bucket") == t5_bucket([rel], **kw)[0]
    near = [r for r in (rel - 2, rel - 1, rel + 1, rel + 2) if abs(r) < 2**53]
    assert page.inner_text("#b-near") == ", ".join(map(str, t5_bucket(near, **kw).tolist()))
    got = page.evaluate("""() => [...document.querySelectorAll('#b-edges-body td[data-bucket]')]
        .map(td => Number(td.dataset.value))""")
    assert got == edges.tolist()


def test_t5_explorer_gives_posencs_buckets_and_edges(browser, site):
    big = 2**53 - 1
    moves = [("b-rel", 7), ("b-rel", 8), ("b-rel", -300), ("b-rel", 300), ("b-rel-num", -big), ("b-rel-num", big),
             ("b-md", T5_DISTANCES.index(2**40)), ("b-rel-num", -(2**40) + 1), ("b-rel-num", 91),
             ("b-nb", T5_BUCKETS.index(18)), ("b-rel-num", -8), ("b-md", T5_DISTANCES.index(27)),
             ("b-nb", T5_BUCKETS.index(34)), ("b-rel-num", -12), ("b-md", T5_DISTANCES.index(17)),
             ("b-bidi", "0"), ("b-rel-num", -16), ("b-md", 0), ("b-nb", 0), ("b-bidi", "1"), ("b-md", 1),
             ("b-nb", T5_BUCKETS.index(128)), ("b-md", T5_DISTANCES.index(100000)), ("b-rel-num", 65_432)]
    seen, ts = _explore(browser, site, "t5.html", moves, _t5_check, "#b-facts #b-refused")
    assert len(seen) >= len(moves) - 8  # a move inside one bucket, or between two refused settings, shows the same
    _timing("T5", ts)


def test_t5_float32_log_is_posencs_on_every_offset_of_hostile_settings(browser, site):
    """Every offset 0 … 3000 of settings where float32 decides a bucket (18 or 34 buckets), and T5's own."""
    o = open_page(browser, site / "t5.html", 1280)
    try:
        got = o.page.evaluate("""(cases) => cases.map(([nb, md, bidi]) => {
            const t = window.posencFamily.t5, S = t.t5Setting(nb, md, bidi), out = [];
            for (let r = -3000; r <= 3000; r++) out.push(t.t5Bucket(S, r));
            return out; })""", [[18, 128, True], [34, 27, True], [32, 128, False], [64, 1000, True], [8, 9, False]])
    finally:
        o.page.context.close()
    for (nb, md, bidi), row in zip([(18, 128, True), (34, 27, True), (32, 128, False), (64, 1000, True),
                                    (8, 9, False)], got, strict=True):
        want = t5_bucket(np.arange(-3000, 3001), num_buckets=nb, max_distance=md, bidirectional=bidi)
        assert row == want.tolist(), (nb, md, bidi)


def test_the_pages_exact_fallbacks_agree_with_posenc(browser, site):
    """The close-call paths, run on every value: ζ^(u/s) decided by BigInts, ln by a BigInt exp."""
    from posenc.exact.power import log_float32

    rng = np.random.default_rng(7)
    xs = np.unique(np.concatenate([np.float32(1) + np.arange(1, 200, dtype=np.float32) * np.float32(2**-23),
                                   rng.uniform(1, 2**40, 300).astype(np.float32)]))
    o = open_page(browser, site / "xpos.html", 1280)
    try:
        fac = o.page.evaluate("""() => { const x = window.posencFamily.xpos, E = x.ladders['64|3'], out = [];
            for (const u of [-3000, -77, -1, 0, 1, 5, 511, 512, 2999]) for (const f32 of [false, true])
              out.push(Array.from({ length: E.n }, (_, i) => String(x.exactFactor(u, i, E, 512, 64, f32))));
            return out; }""")
    finally:
        o.page.context.close()
    o = open_page(browser, site / "t5.html", 1280)
    try:
        logs = o.page.evaluate("(xs) => xs.map(x => String(window.posencFamily.t5.lnNearest(x, true)))",
                               [float(x) for x in xs])
    finally:
        o.page.context.close()
    assert [float(v) for v in logs] == log_float32(xs).astype(np.float64).tolist()
    rows = iter(fac)
    for u in (-3000, -77, -1, 0, 1, 5, 511, 512, 2999):
        for dt in (np.float64, np.float32):
            want = xpos_scale([u], 64, xpos=XPos(), role="q", seq_len=1, dtype=dt)[0].astype(np.float64)
            assert [float(v) for v in next(rows)] == want.tolist(), (u, dt)


def _xpos_check(page):
    v = _values(page, ["x-rot", "x-sb", "x-seq", "x-pos-num", "x-role", "x-pair"])
    r, sb, n = XPOS_ROTARY[int(v["x-rot"])], XPOS_SCALE_BASES[int(v["x-sb"])], XPOS_SEQ_LENS[int(v["x-seq"])]
    p, role, i = int(v["x-pos-num"]), v["x-role"], int(v["x-pair"])
    xp = XPos(scale_base=sb)
    assert _val(page, "x-zeta") == xp.zeta(r)[i]
    for dt, ident in ((np.float64, "x-f64"), (np.float32, "x-f32")):
        try:
            f = xpos_scale([p], r, xpos=xp, role=role, seq_len=n, dtype=dt)[0, i]
        except PosEncError:
            assert "posenc refuses" in page.inner_text(f"#{ident}")
            continue
        assert _val(page, ident) == f, (dt, p, role, i)
        if dt is np.float64:
            c, s = rope_cos_sin([p], r, dtype=np.float64)
            assert _val(page, "x-cos") == c[0, i] * f and _val(page, "x-sin") == s[0, i] * f


def test_xpos_explorer_gives_posencs_factors(browser, site):
    moves = [("x-pos", 0), ("x-pos", 9999), ("x-role", "k"), ("x-pair", 0), ("x-pair", 31), ("x-sb", 0),
             ("x-pos-num", 12_345), ("x-seq", 0), ("x-rot", 2), ("x-pair", 63), ("x-pos-num", 80_000),
             ("x-seq", 5), ("x-sb", 5), ("x-role", "q"), ("x-pos-num", 150_000), ("x-rot", 0), ("x-pair", 0),
             ("x-sb", 1), ("x-seq", 1), ("x-pos-num", 512)]
    seen, ts = _explore(browser, site, "xpos.html", moves, _xpos_check, "#x-facts")
    assert len(seen) >= len(moves) - 2
    _timing("xPos", ts)


def test_xpos_factors_are_posencs_over_many_positions(browser, site):
    """Every pair at 401 offsets per setting (the close calls decided exactly, as posenc decides them)."""
    o = open_page(browser, site / "xpos.html", 1280)
    us = list(range(-4000, 4001, 20))
    try:
        got = o.page.evaluate("""([us, cases]) => cases.map(([r, si, f32]) => {
            const x = window.posencFamily.xpos, E = x.ladders[`${r}|${si}`], sb = x.data.scale_bases[si];
            return us.map(u => Array.from({ length: E.n }, (_, i) => String(x.factor(u, i, E, sb, r, f32)))); })""",
                              [us, [[64, 3, False], [128, 1, False], [16, 0, True], [128, 3, True]]])
    finally:
        o.page.context.close()
    for (r, si, f32), rows in zip([(64, 3, False), (128, 1, False), (16, 0, True), (128, 3, True)], got, strict=True):
        dt = np.float32 if f32 else np.float64
        want = xpos_scale(np.array(us, dtype=np.float64), r, xpos=XPos(scale_base=XPOS_SCALE_BASES[si]),
                          role="q", dtype=dt, seq_len=1)  # centre 0: the factor of u itself
        # as text: a page number past 2**53 would come back as a Python int otherwise
        assert [[float(v) for v in row] for row in rows] == want.astype(np.float64).tolist(), (r, si, f32)


def _nerf_check(page):
    v = _values(page, ["n-conv", "n-bands", "n-x-num", "n-band"])
    conv, n, x, k = v["n-conv"], int(v["n-bands"]), float(v["n-x-num"]), int(v["n-band"])
    enc = nerf_encoding([x], n, convention=conv, include_input=None, dtype=np.float64)
    enc32 = nerf_encoding([x], n, convention=conv, dtype=np.float32)
    cells = page.evaluate("""() => [...document.querySelectorAll('#n-body td[data-band]')].map(td =>
        [Number(td.dataset.band), td.dataset.kind, td.dataset.value])""")
    first = 1 if conv == "nerf" else 0
    for band, kind, value in cells:
        js, jc = (first + band, first + n + band) if conv == "nerfstudio" else (first + 2 * band, first + 2 * band + 1)
        want = {"sin": enc[js], "cos": enc[jc], "sin32": float(enc32[js])}[kind]
        assert float(value) == want and np.signbit(float(value)) == np.signbit(want), (conv, n, x, band, kind)
    assert len(cells) == 3 * n
    assert _val(page, "n-sin") == enc[first + (k if conv == "nerfstudio" else 2 * k)]


def test_nerf_explorer_gives_posencs_bands(browser, site):
    moves = [("n-x", 1024), ("n-x", -512), ("n-band", 9), ("n-x-num", 0.1), ("n-bands", 24), ("n-band", 23),
             ("n-x-num", 123456.789), ("n-conv", "nerfstudio"), ("n-x", 256), ("n-x-num", -1e6 + 0.25),
             ("n-bands", 3), ("n-conv", "tcnn"), ("n-x", 512), ("n-bands", 20), ("n-x-num", 0.7), ("n-band", 0),
             ("n-x-num", -3.999)]
    seen, ts = _explore(browser, site, "nerf.html", moves, _nerf_check, "#n-facts #n-body")
    assert len(seen) >= len(moves) - 1
    _timing("NeRF", ts)


def test_nerf_quarter_turns_are_exact_zeros_and_ones_in_the_page(browser, site):
    o = open_page(browser, site / "nerf.html", 1280)
    try:
        page = o.page
        set_control(page, "n-conv", "tcnn")
        set_control(page, "n-bands", 4)
        set_control(page, "n-x", 512)  # x = 1/2: π·2^k·x is a multiple of π/2
        cells = page.evaluate("""() => [...document.querySelectorAll('#n-body td[data-band]')]
            .filter(td => td.dataset.kind !== 'sin32').map(td => td.dataset.value)""")
    finally:
        o.page.context.close()
    assert set(cells) <= {"0", "1", "-1"} and "0" in cells  # exact, and +0 (not -0: String(-0) is "0" too)


def test_timesteps_explorer_gives_posencs_flux_embedding(browser, site):
    """Flux (t·1000, [cos | sin], shift 0), with time_dtype None and float32: the page's channels are posenc's."""
    from posenc import timestep_embedding
    from posenc.page.rope_data import FLUX_SCALE, TIME_DIMS
    from posenc.timesteps import Diffusers
    from posenc.timesteps.conventions import Flux

    def check(page):
        v = _values(page, ["t-pos-num", "t-dim", "t-shift", "t-flip", "t-conv", "t-tdt"])
        dim, raw = TIME_DIMS[int(v["t-dim"])], int(v["t-pos-num"])
        if v["t-conv"] == "flux":
            t = raw / FLUX_SCALE
            conv = Flux() if v["t-tdt"] == "exact" else Flux(time_dtype="float32")
            assert _val(page, "t-flux-t") == t
        else:
            t, conv = float(raw), Diffusers(flip_sin_to_cos=v["t-flip"] == "1", downscale_freq_shift=int(v["t-shift"]))
        want = timestep_embedding(t, dim, convention=conv, dtype=np.float64)
        n = dim // 2
        for j in (0, 1, 2, 3, n - 1, n, dim - 2, dim - 1):
            assert _val(page, f"t-ch-{j}") == want[j], (v, j)

    moves = [("t-conv", "flux"), ("t-pos", 500), ("t-pos", 10_000), ("t-pos", 3333), ("t-tdt", "float32"),
             ("t-pos", 1), ("t-pos-num", 999_999), ("t-dim", 0), ("t-tdt", "exact"), ("t-dim", 3), ("t-pos", 7),
             ("t-pos-num", 123_457), ("t-tdt", "float32"), ("t-conv", "diffusers"), ("t-pos", 999)]
    seen, ts = _explore(browser, site, "timesteps.html", moves, check, "#t-body")
    assert len(seen) >= len(moves) - 1
    _timing("timesteps (Flux)", ts)


def _parity_cells(page, prefix: str) -> dict[str, list[float]]:
    cells = page.evaluate(f"""() => [...document.querySelectorAll('#{prefix}-parity-table td[data-impl]')].map(td =>
        [td.dataset.impl, Number(td.dataset.p), td.dataset.value])""")
    out: dict[str, list[float]] = {}
    for impl, _, value in cells:
        out.setdefault(impl, []).append(float(value))
    return out


def _parity_of(cfg) -> dict[str, list[float]]:
    from posenc.page.parity_view import PARITY_POSITIONS, _quiet
    from posenc.parity import parity

    with _quiet():
        return parity(cfg, PARITY_POSITIONS).errors


def test_rope_and_scalings_precision_views_hold_posenc_paritys_table(browser, site):
    """The table shown for a setting is what posenc.parity gives for that setting's config, number for number."""
    from posenc.page.parity_view import hf_config
    from posenc.page.rope_data import BETAS, FACTORS, HEAD_DIMS, KINDS, ROPE_BASES, SCALING_BASES

    o = open_page(browser, site / "rope.html", 1280)
    try:
        page = o.page
        for moves in ([], [("r-head", 4), ("r-base", 4)], [("r-head", 1), ("r-base", 0)]):
            for ident, value in moves:
                set_control(page, ident, value)
            s = _values(page, ["r-head", "r-base"])
            h, b = HEAD_DIMS[int(s["r-head"])], ROPE_BASES[int(s["r-base"])]
            got = _parity_cells(page, "r")
            assert got == _parity_of(hf_config(h, b)) and "transformers float32" in got, (h, b)
            assert got["transformers float32"][-1] > 100 * got["posenc float32"][-1]  # the float32 angle drifts
        set_control(page, "r-frac", 1)  # partial rotary: no table, said so
        assert page.locator("#r-parity-table").count() == 0 and "full rotary" in page.inner_text("#r-parity-none")
        assert o.problems() == []
    finally:
        o.page.context.close()
    o = open_page(browser, site / "scalings.html", 1280)
    try:
        page = o.page
        shown = 0
        for moves in ([], [("s-beta", 2)], [("s-kind", 1), ("s-factor", 4)], [("s-kind", 3), ("s-base", 0)],
                      [("s-kind", 5)], [("s-kind", 6), ("s-factor", 0)], [("s-kind", 0)], [("s-kind", 2)]):
            for ident, value in moves:
                set_control(page, ident, value)
            s = _values(page, ["s-kind", "s-base", "s-factor", "s-beta"])
            kind = KINDS[int(s["s-kind"])][0]
            cfg = hf_config(64, SCALING_BASES[int(s["s-base"])], kind, FACTORS[int(s["s-factor"])],
                            BETAS[int(s["s-beta"])])
            if cfg is None:
                assert page.locator("#s-parity-table").count() == 0, kind
                continue
            assert _parity_cells(page, "s") == _parity_of(cfg), (kind, s)
            shown += 1
        assert shown == 7 and o.problems() == []
    finally:
        o.page.context.close()
