"""The RoPE and scalings explorers' markup: labelled controls and the panels ``rope.js`` fills.

Native range inputs and selects, each with a ``<label>``; stepped sliders say
their value through ``aria-valuetext``. The precision view (error against
position, a log axis to 10^6) sits in each explorer.
"""

from __future__ import annotations

from html import escape

from .rope_data import (
    BETAS,
    FACTORS,
    FLUX_SCALE,
    HEAD_DIMS,
    KINDS,
    MAX_OFFSET,
    MAX_POSITION,
    ROPE_BASES,
    ROTARY_FRACTIONS,
    SCALING_BASES,
    SEQ_LENS,
    TIME_DIMS,
    RopeStart,
)

__all__ = ["precision_panel", "rope_explorer_html", "scaling_explorer_html", "timestep_explorer_html"]

SLIDER_MAX = 10_000


def _slider(ident: str, label: str, lo: int, hi: int, value: int, shown: str, hint: str = "") -> str:
    hint_html = f'<span class="hint" id="{ident}-hint">{escape(hint)}</span>' if hint else ""
    described = f' aria-describedby="{ident}-hint"' if hint else ""
    return (f'<div class="control"><label for="{ident}">{label}</label>'
            f'<input type="range" id="{ident}" name="{ident}" min="{lo}" max="{hi}" step="1" value="{value}"'
            f' aria-valuetext="{escape(shown)}"{described}>'
            f'<output id="{ident}-out" for="{ident}">{escape(shown)}</output>{hint_html}</div>')


def _position(prefix: str, value: int) -> str:
    return (
        f'<div class="control wide"><label for="{prefix}-pos">position <var>p</var></label>'
        f'<input type="range" id="{prefix}-pos" name="{prefix}-pos" min="0" max="{SLIDER_MAX}" step="1" '
        f'value="{value}">'
        f'<label class="sr-only" for="{prefix}-pos-num">position p, any integer from 0 to {MAX_POSITION:,}</label>'
        f'<input type="number" id="{prefix}-pos-num" name="{prefix}-pos-num" min="0" max="{MAX_POSITION}" step="1" '
        f'value="{value}" inputmode="numeric" aria-describedby="{prefix}-pos-hint">'
        f'<span class="hint" id="{prefix}-pos-hint">slider 0 … {SLIDER_MAX:,}; type up to {MAX_POSITION:,}</span></div>'
    )


def _select(ident: str, label: str, options: list[tuple[str, str]], chosen: str) -> str:
    opts = "".join(f'<option value="{escape(v)}"{" selected" if v == chosen else ""}>{escape(t)}</option>'
                   for v, t in options)
    return (f'<div class="control"><label for="{ident}">{label}</label>'
            f'<select id="{ident}" name="{ident}">{opts}</select></div>')


def _panel(ident: str, title: str, body: str) -> str:
    return (f'<section class="panel" id="{ident}" aria-labelledby="{ident}-h">'
            f'<h3 id="{ident}-h">{title}</h3>{body}</section>')


def _svg(ident: str, view: str, label: str) -> str:
    return f'<svg class="plot" id="{ident}" viewBox="{view}" role="img" aria-label="{escape(label)}"></svg>'


_TRANSFORMERS = ("float32 angle (p·inv_freq).float()", "transformers' formula")
_DIFFUSERS = ("diffusers float32 t.float()·exp(…)", "diffusers' get_timestep_embedding")


def precision_panel(prefix: str, what: tuple[str, str] = _TRANSFORMERS, parity: bool = False) -> str:
    """The precision view: a log-axis plot of the errors and a table at each decade (cells carry their double)."""
    legend = (f'<p class="legend"><span class="key c-f32">{what[0]}</span> '
              '<span class="key c-bf16">bfloat16 table</span> <span class="key c-f16">float16 table</span> '
              '<span class="key c-exact">exact (posenc): zero</span></p>')
    table = (f'<div class="scroll"><table class="prec" id="{prefix}-prec"><caption>Largest |error| of cos and sin '
             "over the pairs, computed in this page</caption><thead><tr><th scope=\"col\">p</th>"
             '<th scope="col">float32 angle</th><th scope="col">bfloat16</th><th scope="col">float16</th>'
             f'<th scope="col">exact</th></tr></thead><tbody id="{prefix}-prec-body"></tbody></table></div>')
    return _panel(f"{prefix}-p-prec", "Precision view: error against position",
                  _svg(f"{prefix}-prec-svg", "0 0 420 226", "error against position") + legend + table
                  + "<p>The float32 angle rounds p·ω<sub>i</sub> to float32 before cos and sin see it "
                    f"({what[1]}; its cos and sin are taken exactly here, so the error is the angle's). "
                    "The tables are the exact values rounded once. The exact curve is posenc's own value.</p>"
                  + (f'<h4 id="{prefix}-parity-h">posenc parity of this setting</h4><div id="{prefix}-parity" '
                     f'aria-labelledby="{prefix}-parity-h"></div>' if parity else ""))


def rope_explorer_html(start: RopeStart | None = None) -> str:
    """The RoPE explorer: position, offset, head_dim, base, rotary fraction, layout and pair."""
    s = start or RopeStart()
    controls = (
        '<form class="controls" id="r-controls" aria-label="RoPE explorer settings">'
        + _position("r", s.position)
        + _slider("r-off", "offset Δ", -MAX_OFFSET, MAX_OFFSET, s.offset, str(s.offset),
                  f"−{MAX_OFFSET} … {MAX_OFFSET}")
        + _slider("r-head", "head_dim", 0, len(HEAD_DIMS) - 1, HEAD_DIMS.index(s.head_dim), str(s.head_dim),
                  "8 … 128, doubling")
        + _slider("r-base", "base <var>b</var>", 0, len(ROPE_BASES) - 1, ROPE_BASES.index(s.base), f"{s.base:g}",
                  "100 … 1 000 000")
        + _slider("r-frac", "rotary channels", 0, len(ROTARY_FRACTIONS) - 1, 0, f"{s.head_dim} of {s.head_dim}",
                  "all, half, a quarter (partial rotary)")
        + _select("r-layout", "layout",
                  [("half", "half: (i, i + r/2), HF"), ("interleaved", "interleaved: (2i, 2i + 1)")],
                  "half")
        + _slider("r-pair", "pair <var>i</var>", 0, s.head_dim // 2 - 1, s.pair, str(s.pair), "0 = fastest")
        + "</form>"
    )
    pair = _panel("r-p-pair", "One pair, turned by ω<sub>i</sub>·p",
                  _svg("r-pair-svg", "0 0 420 220", "the pair before and after the rotation")
                  + '<dl class="facts" id="r-pair-facts"></dl>')
    chans = _panel("r-p-chan", "Which channels form the pair",
                   _svg("r-chan-svg", "0 0 420 72", "the head's channels") +
                   '<p class="legend"><span class="key ch-a">x<sub>1</sub></span> <span class="key ch-b">x<sub>2'
                   '</sub></span> <span class="key ch-pass">not rotated</span></p>')
    score = _panel("r-p-score", "The score depends on Δ alone",
                   _svg("r-score-svg", "0 0 420 200", "the score against the offset at p and at 0")
                   + '<p class="legend"><span class="key c-exact">at 0 and 0 + Δ</span> <span class="key c-f32">at '
                     'p and p + Δ (dashed: on top of it)</span></p><dl class="facts" id="r-score-facts"></dl>'
                   + "<p>q<sub>j</sub> = (j + 1)/h, k<sub>j</sub> = 1 − j/h; the score is summed as NumPy's np.sum "
                     "sums.</p>")
    return (
        "<p>Move a control and the numbers change; cos and sin are posenc's exact path in this page (the same "
        "float64 operations in the same order, so posenc's bits), on posenc's ladders written in when the page "
        "was built.</p><noscript><p><strong>The explorer needs JavaScript</strong>.</p></noscript>"
        + controls + '<p class="sr-only" id="r-status" aria-live="polite"></p>'
        + '<div class="panels two">' + pair + score + chans + precision_panel("r", parity=True) + "</div>"
    )


def scaling_explorer_html(start: RopeStart | None = None) -> str:
    """The scalings explorer: variant, base, factor, sequence length, β_fast, position and pair."""
    s = start or RopeStart()
    controls = (
        '<form class="controls" id="s-controls" aria-label="Scalings explorer settings">'
        + _select("s-kind", "scaling", [(str(j), label) for j, (_, label, _) in enumerate(KINDS)],
                  str([k for k, _, _ in KINDS].index(s.kind)))
        + _slider("s-base", "base <var>b</var>", 0, len(SCALING_BASES) - 1, SCALING_BASES.index(s.scaling_base),
                  f"{s.scaling_base:g}", "10 000, 500 000, 1 000 000")
        + _slider("s-factor", "factor <var>s</var>", 0, len(FACTORS) - 1, FACTORS.index(s.factor), f"{s.factor:g}",
                  "2 … 32, doubling")
        + _slider("s-seq", "sequence length", 0, len(SEQ_LENS) - 1, SEQ_LENS.index(s.seq_len), str(s.seq_len),
                  "dynamic NTK and LongRoPE; trained at 4096")
        + _slider("s-beta", "β<sub>fast</sub> (YaRN)", 0, len(BETAS) - 1, BETAS.index(s.beta), f"{s.beta:g}",
                  "16, 32, 64; β_slow = 1")
        + _position("s", s.position)
        + _slider("s-pair", "pair <var>i</var>", 0, 31, s.pair, str(s.pair), "0 = fastest")
        + "</form>"
    )
    ladder = _panel("s-p-ladder", "Every pair after the scaling",
                    _svg("s-ladder-svg", "0 0 420 200", "the scaled ladder")
                    + '<p class="legend"><span class="key nowrap">kept</span> <span class="key ramp">between</span> '
                      '<span class="key wrap-dot">divided by the factor</span></p><dl class="facts" id="s-facts"></dl>')
    pair = _panel("s-p-pair", "Pair <var>i</var> at position <var>p</var>", '<dl class="facts" id="s-pair-facts"></dl>')
    return (
        "<p>A head of 64 channels trained at 4096 tokens (Gemma 4's proportional: 16 of them rotated). Every "
        "ladder is posenc's, written into the page; cos and sin come from posenc's exact path in the page.</p>"
        "<noscript><p><strong>The explorer needs JavaScript</strong>.</p></noscript>"
        + controls + '<p class="sr-only" id="s-status" aria-live="polite"></p>'
        + '<div class="panels two">' + ladder + pair + precision_panel("s", parity=True) + "</div>"
    )


def timestep_explorer_html() -> str:
    """The timesteps explorer: t, dim, downscale_freq_shift and flip_sin_to_cos (diffusers' flags), and Flux."""
    position = (_position("t", 500).replace("position <var>p</var>", "timestep <var>t</var>")
                .replace("position p, any integer", "timestep t, any integer"))
    controls = (
        '<form class="controls" id="t-controls" aria-label="Timesteps explorer settings">'
        + position
        + _slider("t-dim", "dim", 0, len(TIME_DIMS) - 1, 2, "128", "32 … 256, doubling")
        + _select("t-shift", "downscale_freq_shift", [("1", "1 (diffusers' default)"), ("0", "0")], "1")
        + _select("t-flip", "flip_sin_to_cos", [("0", "False: [sin | cos]"), ("1", "True: [cos | sin]")], "0")
        + _select("t-conv", "convention", [("diffusers", "diffusers (the flags above)"),
                                           ("flux", "Flux: t·1000, [cos | sin], shift 0")], "diffusers")
        + _select("t-tdt", "Flux's time_dtype", [("exact", "None: t·1000 exact"),
                                                 ("float32", "float32: t·1000 rounded first")], "exact")
        + "</form>"
    )
    table = ('<div class="scroll"><table class="pe" id="t-table"><caption>The first and last 4 channels, to 8 '
             'decimals</caption><thead><tr><th scope="col">channel</th><th scope="col">is</th>'
             '<th scope="col">value</th></tr></thead><tbody id="t-body"></tbody></table></div>')
    emb = _panel("t-p-emb", "The embedding of <var>t</var>", '<dl class="facts" id="t-facts"></dl>' + table)
    return (
        "<p>diffusers' <code>get_timestep_embedding</code> with its flags, or Flux's embedding (with Flux the "
        f"position control reads t·{FLUX_SCALE:,}: t = 0.05 is 500); every value is posenc's, computed in "
        "the page by posenc's exact path on posenc's ladder.</p>"
        "<noscript><p><strong>The explorer needs JavaScript</strong>.</p></noscript>"
        + controls + '<p class="sr-only" id="t-status" aria-live="polite"></p>'
        + '<div class="panels two">' + emb + precision_panel("t", _DIFFUSERS) + "</div>"
    )
