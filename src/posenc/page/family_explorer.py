"""The M-RoPE, ALiBi, T5, xPos and NeRF explorers' markup: labelled controls and the panels ``explorers.js`` fills.

Each control is a native range input, number field or select with its
``<label>``; each panel's numbers carry their double in ``data-value`` so
the tests read back exactly what the page computed.
"""

from __future__ import annotations

from html import escape

from .family_data import (
    ALIBI_BIAS_MAX,
    MROPE_BASES,
    MROPE_SECTIONS,
    NERF_CONVENTIONS,
    NERF_MAX_BANDS,
    T5_BUCKETS,
    T5_DISTANCES,
    XPOS_ROTARY,
    XPOS_SCALE_BASES,
    XPOS_SEQ_LENS,
)
from .rope_explorer import SLIDER_MAX, _panel, _select, _slider, _svg

__all__ = ["EXPLORERS"]


def _number(ident: str, label: str, lo: int, hi: int, value: int, top: int | None = None, step: str = "1",
            hint: str = "") -> str:
    """A slider lo … hi beside a number field that takes any value up to ``top``."""
    top_v = hi if top is None else top
    low = "" if step == "any" else f' min="{-top_v if lo < 0 else lo}" max="{top_v}"'
    return (f'<div class="control wide"><label for="{ident}">{label}</label>'
            f'<input type="range" id="{ident}" name="{ident}" min="{lo}" max="{hi}" step="1" value="{value}">'
            f'<label class="sr-only" for="{ident}-num">{label}, typed</label>'
            f'<input type="number" id="{ident}-num" name="{ident}-num"{low} step="{step}" value="{value}" '
            f'aria-describedby="{ident}-hint"><span class="hint" id="{ident}-hint">{escape(hint)}</span></div>')


def _form(prefix: str, label: str, *controls: str) -> str:
    return (f'<form class="controls" id="{prefix}-controls" aria-label="{label}">' + "".join(controls) + "</form>"
            f'<p class="note" id="{prefix}-refused" role="status"></p>')


def _intro(text: str) -> str:
    return (f"<p>{text}</p><noscript><p><strong>The explorer needs JavaScript</strong>.</p></noscript>")


def _steps(values: tuple[float, ...]) -> str:
    return ", ".join((f"{v:,.0f}" if v == int(v) else f"{v:g}").replace(",", " ") for v in values)


def mrope_explorer_html() -> str:
    """M-RoPE: the (t, h, w) position, the sections and their layout, the base and the pair."""
    secs = [(str(j), f"({', '.join(map(str, s))})" + (" Qwen2-VL" if j == 0 else " Qwen3-VL" if j == 1 else ""))
            for j, s in enumerate(MROPE_SECTIONS)]
    form = _form("m", "M-RoPE explorer settings",
                 _number("m-pos", "time position <var>t</var>", 0, SLIDER_MAX, 1000, 10**6,
                         hint=f"slider 0 … {SLIDER_MAX:,}; type up to 1,000,000"),
                 _slider("m-h", "height position <var>h</var>", 0, 1000, 20, "20", "0 … 1000"),
                 _slider("m-w", "width position <var>w</var>", 0, 1000, 33, "33", "0 … 1000"),
                 _select("m-sec", "sections (t, h, w pairs)", secs, "0"),
                 _select("m-layout", "section layout", [("contiguous", "contiguous (Qwen2-VL)"),
                                                        ("interleaved", "interleaved (Qwen3-VL)")], "contiguous"),
                 _slider("m-base", "base <var>b</var>", 0, len(MROPE_BASES) - 1, 2, "1 000 000", _steps(MROPE_BASES)),
                 _slider("m-pair", "pair <var>i</var>", 0, 63, 40, "40", "0 = fastest, 63 = slowest"))
    strip = _panel("m-p-strip", "Which axis each pair turns with",
                   _svg("m-strip-svg", "0 0 420 72", "the pairs by axis")
                   + '<p class="legend"><span class="key ax-t">t</span> <span class="key ax-h">h</span> '
                     '<span class="key ax-w">w</span></p><dl class="facts" id="m-facts"></dl>')
    return (_intro("Head 128 (64 pairs), one shared ladder; each pair turns by ω<sub>i</sub> times the position of "
                   "its section's axis. cos and sin are posenc's exact path in this page.")
            + form + '<div class="panels two">' + strip + "</div>")


def alibi_explorer_html() -> str:
    """ALiBi: the head count, the head, the distance, the slopes' convention."""
    form = _form("a", "ALiBi explorer settings",
                 _slider("a-heads", "heads <var>H</var>", 1, 64, 12, "12", "1 … 64"),
                 _slider("a-head", "head <var>h</var>", 0, 11, 9, "9", "0 = steepest"),
                 _number("a-dist", "distance <var>d</var> = i − j", 0, SLIDER_MAX, 100, 10**6,
                         hint=f"slider 0 … {SLIDER_MAX:,}; type up to 1,000,000"),
                 _select("a-conv", "slopes", [("press", "the paper's (press, BLOOM)"), ("mpt", "MPT's")], "press"),
                 _slider("a-bmax", "MPT's alibi_bias_max", 0, len(ALIBI_BIAS_MAX) - 1, 1, "8",
                         _steps(ALIBI_BIAS_MAX) + "; 8 gives the paper's slopes"))
    table = ('<div class="scroll short"><table class="pe" id="a-slopes"><caption>Every head\'s slope, worked out in '
             'this page</caption><thead><tr><th scope="col">head</th><th scope="col">m</th>'
             '<th scope="col">float64</th></tr></thead><tbody id="a-slopes-body"></tbody></table></div>')
    return (_intro("Each slope is 2<sup>−a/b</sup> correctly rounded to float64, decided in this page by exact "
                   "integer comparisons; the bias is the float64 product, rounded once to float32.")
            + form + '<div class="panels two">'
            + _panel("a-p-bias", "The slope and the bias",
                     _svg("a-svg", "0 0 420 200", "the slopes") + '<dl class="facts" id="a-facts"></dl>')
            + _panel("a-p-slopes", "All the slopes", table) + "</div>")


def t5_explorer_html() -> str:
    """T5: num_buckets, max_distance, bidirectional and the relative position."""
    form = _form("b", "T5 buckets explorer settings",
                 _slider("b-nb", "num_buckets", 0, len(T5_BUCKETS) - 1, T5_BUCKETS.index(32), "32",
                         _steps(T5_BUCKETS)),
                 _slider("b-md", "max_distance", 0, len(T5_DISTANCES) - 1, T5_DISTANCES.index(128), "128",
                         "3 … 2^40 (some too small: posenc refuses them)"),
                 _select("b-bidi", "bidirectional", [("1", "True (encoder)"), ("0", "False (decoder)")], "1"),
                 _number("b-rel", "relative position j − i", -300, 300, -20, 2**53 - 1,
                         hint="slider −300 … 300; type any |j − i| < 2^53"))
    table = ('<div class="scroll short"><table class="pe" id="b-edges"><caption>Where each bucket of one direction '
             'starts (the smallest distance in it), worked out in this page</caption><thead><tr>'
             '<th scope="col">bucket</th><th scope="col">first distance</th></tr></thead>'
             '<tbody id="b-edges-body"></tbody></table></div>')
    return (_intro("T5's float32 steps, as posenc repeats them: float32(d)/e, ln correctly rounded to float32 "
                   "(proved here by posenc's own exp, decided exactly where it is close), the division and product in "
                   "float32, truncated.")
            + form + '<div class="panels two">'
            + _panel("b-p-bucket", "The bucket", '<dl class="facts" id="b-facts"></dl>')
            + _panel("b-p-edges", "The bucket edges", table) + "</div>")


def xpos_explorer_html() -> str:
    """xPos: rotary dim, scale_base, sequence length (the centre), position, role and pair."""
    form = _form("x", "xPos explorer settings",
                 _slider("x-rot", "rotary dim <var>r</var>", 0, len(XPOS_ROTARY) - 1, 1, "64", _steps(XPOS_ROTARY)),
                 _slider("x-sb", "scale_base <var>s</var>", 0, len(XPOS_SCALE_BASES) - 1, 3, "512",
                         _steps(XPOS_SCALE_BASES)),
                 _slider("x-seq", "sequence length <var>N</var> (centre N // 2)", 0, len(XPOS_SEQ_LENS) - 1, 2,
                         "4096", _steps(tuple(float(v) for v in XPOS_SEQ_LENS))),
                 _number("x-pos", "position <var>p</var>", 0, SLIDER_MAX, 3000, 10**6,
                         hint=f"slider 0 … {SLIDER_MAX:,}; type up to 1,000,000"),
                 _select("x-role", "role", [("q", "q: ζ^(+u/s)"), ("k", "k: ζ^(−u/s)")], "q"),
                 _slider("x-pair", "pair <var>i</var>", 0, 31, 3, "3", "0 = fastest, strongest decay"))
    return (_intro("Each factor is ζ<sub>i</sub><sup>u/s</sup> correctly rounded, as posenc computes it: posenc's own "
                   "exp in this page (no Math.exp), and an exact integer decision where the rounding is close.")
            + form + '<div class="panels two">'
            + _panel("x-p-factor", "The factor of pair <var>i</var>", '<dl class="facts" id="x-facts"></dl>')
            + _panel("x-p-decay", "The decay with the offset", _svg("x-svg", "0 0 420 200", "the decay per pair"))
            + "</div>")


def nerf_explorer_html() -> str:
    """NeRF bands: the preset, the number of bands, the coordinate and the band."""
    form = _form("n", "NeRF bands explorer settings",
                 _select("n-conv", "preset", [(c, c) for c in NERF_CONVENTIONS], "nerf"),
                 _slider("n-bands", "bands <var>L</var>", 1, NERF_MAX_BANDS, 10, "10", f"1 … {NERF_MAX_BANDS}"),
                 _number("n-x", "coordinate <var>x</var>", -4096, 4096, 333, 0, step="any",
                         hint="slider −4 … 4 in steps of 1/1024; type any real x"),
                 _slider("n-band", "band <var>k</var>", 0, 9, 4, "4", "0 = slowest"))
    table = ('<div class="scroll short"><table class="pe" id="n-table"><caption>Every band at x, worked out in this '
             'page (float64; the last column rounded to float32)</caption><thead><tr><th scope="col">k</th>'
             '<th scope="col">channels</th><th scope="col">ω<sub>k</sub></th><th scope="col">sin</th>'
             '<th scope="col">cos</th><th scope="col">sin, float32</th></tr></thead><tbody id="n-body"></tbody>'
             "</table></div>")
    return (_intro("posenc's bands, exact to ~160 bits: the radian bands by posenc's exact path, the bands "
                   "2π·2<sup>e</sup> in turns (x·2<sup>e</sup> mod 1, exactly: a multiple of a quarter turn gives "
                   "exact 0 and ±1).")
            + form.replace('value="333" aria', 'value="0.3251953125" aria')
            + '<div class="panels two">'
            + _panel("n-p-band", "Band <var>k</var>", '<dl class="facts" id="n-facts"></dl>')
            + _panel("n-p-table", "All the bands", table) + "</div>")


#: Family.explorer key -> (the markup, the data's element id, the data).
EXPLORERS = {
    "mrope": (mrope_explorer_html, "mrope-data", "mrope_data"),
    "alibi": (alibi_explorer_html, "alibi-data", "alibi_data"),
    "t5": (t5_explorer_html, "t5-data", "t5_data"),
    "xpos": (xpos_explorer_html, "xpos-data", "xpos_data"),
    "nerf": (nerf_explorer_html, "nerf-data", "nerf_data"),
}
