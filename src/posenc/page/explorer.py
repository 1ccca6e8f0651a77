"""The explorer's markup: labelled controls and the five panels the script fills.

The controls are native range and number inputs (arrow keys, Page Up/Down,
Home/End work with no script of ours); each has a ``<label>``, and the
stepped sliders (d_model, base, context) say their value, not their stop
number, through ``aria-valuetext``. The numbers in the panels are written
by ``explorer.js`` from the page's twin of posenc's exact path.
"""

from __future__ import annotations

from html import escape

from .data import BASES, CONTEXTS, D_MODELS, MAX_POSITION, MAX_SHIFT, Start

__all__ = ["POSITION_SLIDER_MAX", "explorer_html"]

#: The position slider's right end; the number field beside it goes to MAX_POSITION.
POSITION_SLIDER_MAX = 10_000


def _base_text(b: float) -> str:
    return f"{b:g}" if b < 1e5 else f"{int(b):,}".replace(",", " ")


def _slider(ident: str, label: str, lo: int, hi: int, value: int, text: str = "", hint: str = "") -> str:
    valuetext = f' aria-valuetext="{escape(text)}"' if text else ""
    described = f' aria-describedby="{ident}-hint"' if hint else ""
    shown = escape(text or str(value))
    hint_html = f'<span class="hint" id="{ident}-hint">{escape(hint)}</span>' if hint else ""
    return (f'<div class="control"><label for="{ident}">{label}</label>'
            f'<input type="range" id="{ident}" name="{ident}" min="{lo}" max="{hi}" step="1" value="{value}"'
            f"{valuetext}{described}>"
            f'<output id="{ident}-out" for="{ident}">{shown}</output>{hint_html}</div>')


def _controls(s: Start) -> str:
    d_i, b_i, c_i = D_MODELS.index(s.d_model), BASES.index(s.base), CONTEXTS.index(s.context)
    position = (
        '<div class="control wide"><label for="pos">position <var>pos</var></label>'
        f'<input type="range" id="pos" name="pos" min="0" max="{POSITION_SLIDER_MAX}" step="1" value="{s.position}">'
        f'<label class="sr-only" for="pos-num">position pos, any integer from 0 to {MAX_POSITION:,}</label>'
        f'<input type="number" id="pos-num" name="pos-num" min="0" max="{MAX_POSITION}" step="1" '
        f'value="{s.position}" inputmode="numeric" aria-describedby="pos-hint">'
        f'<span class="hint" id="pos-hint">slider 0 … {POSITION_SLIDER_MAX:,}; type up to {MAX_POSITION:,}</span></div>'
    )
    return (
        '<form class="controls" id="controls" aria-label="Explorer settings">'
        + position
        + _slider("d-model", "<var>d</var><sub>model</sub>", 0, len(D_MODELS) - 1, d_i, str(s.d_model),
                  f"{D_MODELS[0]} … {D_MODELS[-1]}, doubling")
        + _slider("base", "base <var>b</var>", 0, len(BASES) - 1, b_i, _base_text(s.base),
                  "100 … 1 000 000 in 1-2-5 steps")
        + _slider("shift", "shift <var>k</var>", -MAX_SHIFT, MAX_SHIFT, s.shift, hint=f"−{MAX_SHIFT} … {MAX_SHIFT}")
        + _slider("pair", "pair <var>i</var>", 0, s.d_model // 2 - 1, s.pair,
                  hint="the pair to rotate: 0 = fastest … d_model/2 − 1 = slowest")
        + _slider("context", "context", 0, len(CONTEXTS) - 1, c_i, f"{s.context}",
                  "context length, 128 … 1 048 576 tokens, doubling")
        + "</form>"
    )


def _panel(ident: str, title: str, body: str) -> str:
    return (f'<section class="panel" id="{ident}" aria-labelledby="{ident}-h">'
            f'<h3 id="{ident}-h">{title}</h3>{body}</section>')


def _svg(ident: str, view: str, label: str) -> str:
    return f'<svg class="plot" id="{ident}" viewBox="{view}" role="img" aria-label="{escape(label)}"></svg>'


def explorer_html(start: Start | None = None) -> str:
    """The explorer section: the controls, then PE(pos), the wave, the kernel, the ladder and the rotation."""
    s = start or Start()
    pe = _panel("p-pe", "PE(<var>pos</var>)",
                '<p class="lead" id="pe-lead"></p>'
                '<div class="scroll"><table class="pe" id="pe-table"><caption id="pe-caption"></caption>'
                '<thead><tr><th scope="col">channel</th><th scope="col">is</th><th scope="col">value</th></tr>'
                '</thead><tbody id="pe-body"></tbody></table></div>')
    wave = _panel("p-wave", "The fastest channel, ω<sub>0</sub> = 1",
                  _svg("wave-svg", "0 0 420 200", "the fastest channel around pos")
                  + '<p class="readout" id="wave-readout"></p>')
    rotation = _panel("p-rot", "Shift by <var>k</var> = rotation of pair <var>i</var>",
                      _svg("rot-svg", "0 0 420 220", "rotation of a pair")
                      + '<div class="scroll"><table class="pairs" id="rot-table"><caption>The pair before and after '
                      'the shift, sine on top as the seed stacks it</caption><thead><tr><th scope="col"></th>'
                      '<th scope="col">sin</th><th scope="col">cos</th></tr></thead><tbody id="rot-body"></tbody>'
                      '</table></div><p class="readout" id="rot-readout"></p>')
    kernel = _panel("p-kernel", "Dot-product kernel PE(<var>pos</var>)·PE(<var>pos</var> + Δ)",
                    _svg("kernel-svg", "0 0 420 200", "the dot-product kernel")
                    + '<p class="readout" id="kernel-readout"></p>')
    ladder = _panel("p-ladder", "λ<sub>max</sub> against the context",
                    _svg("ladder-svg", "0 0 420 200", "the wavelength ladder")
                    + '<dl class="facts" id="ladder-facts"></dl>'
                    + '<p class="verdict" id="verdict" role="status"></p>')
    return (
        '<p>Move a control and every number below changes. The page computes sin and cos with a twin of posenc\'s '
        "exact path (the same float64 operations in the same order), so each value is posenc's own, bit for bit; "
        "the ladders ω<sub>i</sub> and wavelengths are posenc's, written into the page when it was built.</p>"
        + "<noscript><p><strong>The explorer needs JavaScript</strong>; the rest of the page does not.</p></noscript>"
        + _controls(s)
        + '<p class="sr-only" id="explorer-status" aria-live="polite"></p>'
        # in reading order; wide screens set them in two columns (pe | wave, pe | kernel, ladder | rotation)
        + '<div class="panels">' + pe + wave + kernel + ladder + rotation + "</div>"
    )
