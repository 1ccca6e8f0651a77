"""The family pages' content: the formula, the worked cases (from :mod:`posenc.seed`), the figures, the explorers.

Every number on these pages comes from posenc when the page is built: the
worked cases are :mod:`posenc.seed`'s (each printed figure beside the
library's value, each claim checked), the figures are :mod:`posenc.plot`'s,
and the explorers' ladders come from :mod:`posenc.page.rope_data`. The
formulas and the words around them are the only typed text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..seed import Case, bias_cases, grid_cases, rope_cases, time_cases

__all__ = ["FAMILIES", "SITE", "Family", "FamilyFigure"]


@dataclass(frozen=True)
class FamilyFigure:
    """One figure: its key (ids' prefix), caption, and the call that draws it (a Figure)."""

    key: str
    caption: str
    make: Callable[[], Any]


@dataclass(frozen=True)
class Family:
    """One page of the site.

    Attributes:
        slug: the file name without ``.html``.
        nav: its name in the site's navigation.
        title: the page's heading.
        lede: one paragraph under it.
        formula: HTML (MathML) of the formula section.
        cases: the worked cases, computed when the page is built.
        figures: drawn when the page is built.
        explorer: ``"rope"``, ``"scaling"``, ``"timestep"`` or ``""``.
        precision: HTML of a built precision view (or ``""``); the explorers draw their own.
        refs: self-test references: the page's script recomputes them bit for bit.
    """

    slug: str
    nav: str
    title: str
    lede: str
    formula: Callable[[], str]
    cases: Callable[[], list[Case]]
    figures: tuple[FamilyFigure, ...]
    explorer: str = ""
    precision: Callable[[], str] | None = None
    refs: Callable[[], list[dict[str, Any]]] = field(default=lambda: [])


def _m(body: str) -> str:
    return f'<math display="block">{body}</math>'


def _eqs(*bodies: str) -> str:
    return '<div class="equations">' + "".join(_m(b) for b in bodies) + "</div>"


def _sub(a: str, b: str) -> str:
    return f"<msub><mi>{a}</mi><mi>{b}</mi></msub>"


_OMEGA = _sub("ω", "i")


def _rope_formula() -> str:
    omega = (f"{_OMEGA}<mo>=</mo><msup><mi>b</mi><mrow><mo>−</mo><mn>2</mn><mi>i</mi><mo>/</mo><mi>r</mi></mrow>"
             "</msup><mo>,</mo><mspace width=\"1em\"/><mi>i</mi><mo>=</mo><mn>0</mn><mo>…</mo><mi>r</mi><mo>/</mo>"
             "<mn>2</mn><mo>−</mo><mn>1</mn>")
    rot = (f"<mrow><mo>(</mo>{_sub('x', '1')}<mo>,</mo>{_sub('x', '2')}<mo>)</mo></mrow><mo>↦</mo><mrow><mo>(</mo>"
           f"{_sub('x', '1')}<mi>cos</mi><mrow>{_OMEGA}<mi>p</mi></mrow><mo>−</mo>{_sub('x', '2')}<mi>sin</mi>"
           f"<mrow>{_OMEGA}<mi>p</mi></mrow><mo>,</mo>{_sub('x', '2')}<mi>cos</mi><mrow>{_OMEGA}<mi>p</mi></mrow>"
           f"<mo>+</mo>{_sub('x', '1')}<mi>sin</mi><mrow>{_OMEGA}<mi>p</mi></mrow><mo>)</mo></mrow>")
    score = ("<mo>⟨</mo><mi>R</mi><mo>(</mo><mi>p</mi><mo>)</mo><mi>q</mi><mo>,</mo><mi>R</mi><mo>(</mo><mi>p</mi>"
             "<mo>+</mo><mi>Δ</mi><mo>)</mo><mi>k</mi><mo>⟩</mo><mo>=</mo><mi>g</mi><mo>(</mo><mi>q</mi><mo>,</mo>"
             "<mi>k</mi><mo>,</mo><mi>Δ</mi><mo>)</mo>")
    return ("<p>RoPE (Su et al. 2021) turns the seed's shift rotation into the attention itself: each pair "
            "(x<sub>1</sub>, x<sub>2</sub>) of a query or key at position <var>p</var> is rotated by ω<sub>i</sub>·p, "
            "with the ladder over the <var>r</var> rotated channels:</p>" + _eqs(omega, rot)
            + "<p>so the score of a query at <var>p</var> and a key at <var>p</var> + Δ depends on Δ alone:</p>"
            + _eqs(score)
            + "<p>Which two channels form pair <var>i</var> is the <em>layout</em>: (i, i + r/2) for Hugging Face's "
              "<code>rotate_half</code>, (2i, 2i + 1) for Meta's checkpoints and GPT-J. With partial rotary "
              "(<var>r</var> &lt; head_dim) the channels from <var>r</var> on pass unchanged.</p>")


def _scaling_formula() -> str:
    rows = [
        ("linear", "ω<sub>i</sub>/s", "every pair slowed by the factor s"),
        ("NTK-aware", "b → b·s<sup>r/(r−2)</sup>", "the base raised: pair 0 kept, the slowest slowed by s"),
        ("dynamic NTK", "b → b·(s·L/L<sub>0</sub> − (s − 1))<sup>r/(r−2)</sup>, L = max(seq_len, L<sub>0</sub>)",
         "the base follows the current length"),
        ("YaRN", "ω<sub>i</sub>·((1 − γ<sub>i</sub>)/s + γ<sub>i</sub>), γ a ramp in the turns "
         "L<sub>0</sub>/λ<sub>i</sub> between β<sub>slow</sub> and β<sub>fast</sub>; cos, sin × (0.1·ln s + 1)",
         "three bands and an attention factor"),
        ("Llama 3.1", "λ<sub>i</sub> &lt; L<sub>0</sub>/high: kept; λ<sub>i</sub> &gt; L<sub>0</sub>/low: "
         "ω<sub>i</sub>/s; "
         "a blend in L<sub>0</sub>/λ<sub>i</sub> between", "smoothing by wavelength"),
        ("LongRoPE", "ω<sub>i</sub>/e<sub>i</sub>, e = short list up to L<sub>0</sub>, long list beyond",
         "a switch of the whole table at L<sub>0</sub>"),
        ("proportional", "b<sup>−2i/head_dim</sup>/s for the first r/2 pairs", "the whole head's ladder on r channels"),
    ]
    body = "".join(f"<tr><th scope=\"row\">{a}</th><td>{b}</td><td>{c}</td></tr>" for a, b, c in rows)
    return ("<p>A long-context scaling changes the ladder ω<sub>i</sub> (and sometimes multiplies cos and sin by an "
            "attention factor) so that a model trained at length L<sub>0</sub> reads longer sequences. Each variant, "
            "as posenc computes it (<code>posenc.Linear</code>, <code>NTK</code>, <code>DynamicNTK</code>, "
            "<code>YaRN</code>, <code>Llama3</code>, <code>LongRoPE</code>, <code>Proportional</code>):</p>"
            '<div class="scroll"><table class="matrix"><thead><tr><th scope="col">variant</th>'
            '<th scope="col">ω<sub>i</sub> after the scaling</th><th scope="col">in short</th></tr></thead><tbody>'
            + body + "</tbody></table></div>")


def _mrope_formula() -> str:
    rule = (f"{_OMEGA}<mo>·</mo><msub><mi>p</mi><mrow><mi>a</mi><mo>(</mo><mi>i</mi><mo>)</mo></mrow></msub>"
            "<mo>,</mo><mspace width=\"1em\"/><mi>a</mi><mo>(</mo><mi>i</mi><mo>)</mo><mo>∈</mo><mo>{</mo><mi>t</mi>"
            "<mo>,</mo><mi>h</mi><mo>,</mo><mi>w</mi><mo>}</mo>")
    return ("<p>Multi-axis RoPE (Qwen2-VL's M-RoPE) gives each token one position per axis (time, height, width) "
            "and splits the pairs into <em>sections</em>: pair <var>i</var> turns by</p>" + _eqs(rule)
            + "<p>with the sections contiguous (Qwen2-VL: the first 16 pairs t, the next 24 h, the last 24 w) or "
              "interleaved (Qwen3-VL). A text token has t = h = w, so it is plain RoPE. The same pages' grid cases "
              "show the n-D sinusoid grids (MAE, big_vision) the vision towers use.</p>")


def _alibi_formula() -> str:
    bias = ("<msub><mi>B</mi><mrow><mi>h</mi><mi>i</mi><mi>j</mi></mrow></msub><mo>=</mo><mo>−</mo><msub><mi>m</mi>"
            "<mi>h</mi></msub><mo>·</mo><mo>(</mo><mi>i</mi><mo>−</mo><mi>j</mi><mo>)</mo><mo>,</mo><mspace "
            "width=\"1em\"/><msub><mi>m</mi><mi>h</mi></msub><mo>=</mo><msup><mn>2</mn><mrow><mo>−</mo><mn>8</mn>"
            "<mo>(</mo><mi>h</mi><mo>+</mo><mn>1</mn><mo>)</mo><mo>/</mo><mi>H</mi></mrow></msup>")
    return ("<p>ALiBi (Press et al. 2022) adds no encoding at all: each head <var>h</var> of <var>H</var> adds a "
            "penalty linear in the distance to the attention logits,</p>" + _eqs(bias)
            + "<p>for a power-of-two <var>H</var>; otherwise the slopes of the nearest power of two below are "
              "followed by every other slope of twice that. BLOOM adds m·j instead, which differs by a constant per "
              "row, so the softmax is the same.</p>")


def _t5_formula() -> str:
    return ("<p>T5's relative bias learns one scalar per <em>bucket</em> of the offset Δ = j − i. With 32 buckets "
            "(bidirectional: 16 per sign) and max_distance 128: the first half of each sign's buckets are exact "
            "offsets 0 … 7, the rest logarithmic up to 128, and everything beyond shares the last bucket:</p>"
            + _eqs("<mi>bucket</mi><mo>(</mo><mi>n</mi><mo>)</mo><mo>=</mo><mi>e</mi><mo>+</mo><mo>⌊</mo><mfrac>"
                   "<mrow><mi>ln</mi><mo>(</mo><mi>n</mi><mo>/</mo><mi>e</mi><mo>)</mo></mrow><mrow><mi>ln</mi><mo>(</mo>"
                   "<mn>128</mn><mo>/</mo><mi>e</mi><mo>)</mo></mrow></mfrac><mo>·</mo><mo>(</mo><mi>N</mi><mo>−</mo>"
                   "<mi>e</mi><mo>)</mo><mo>⌋</mo><mo>,</mo><mspace width=\"1em\"/><mi>n</mi><mo>≥</mo><mi>e</mi>"
                   "<mo>=</mo><mi>N</mi><mo>/</mo><mn>2</mn>")
            + "<p>(<var>N</var> buckets per sign, capped at <var>N</var> − 1).</p>")


def _xpos_formula() -> str:
    return ("<p>xPos (Sun et al. 2022) is RoPE with a decay: the query at <var>p</var> is also scaled by "
            "ζ<sub>i</sub><sup>p/s</sup> and the key by ζ<sub>i</sub><sup>−p/s</sup>, so their product decays as "
            "ζ<sub>i</sub><sup>Δ/s</sup> with the offset alone:</p>"
            + _eqs("<msub><mi>ζ</mi><mi>i</mi></msub><mo>=</mo><mfrac><mrow><mn>2</mn><mi>i</mi><mo>/</mo><mi>r</mi>"
                   "<mo>+</mo><mi>γ</mi></mrow><mrow><mn>1</mn><mo>+</mo><mi>γ</mi></mrow></mfrac><mo>,</mo><mspace "
                   "width=\"1em\"/><mi>γ</mi><mo>=</mo><mn>0.4</mn><mo>,</mo><mi>s</mi><mo>=</mo><mn>512</mn>")
            + "<p>The two factors grow and shrink without bound with <var>p</var>: in float32 they overflow long "
              "before the product would, which is why posenc checks the positions.</p>")


def _time_formula() -> str:
    return ("<p>Diffusion models embed the timestep <var>t</var> as the seed's sinusoid with a different ladder "
            "(diffusers' <code>get_timestep_embedding</code>, half = dim/2 frequencies):</p>"
            + _eqs("<msub><mi>ω</mi><mi>k</mi></msub><mo>=</mo><mi>exp</mi><mo>(</mo><mo>−</mo><mi>ln</mi><mo>(</mo>"
                   "<mi>max_period</mi><mo>)</mo><mo>·</mo><mfrac><mi>k</mi><mrow><mi>half</mi><mo>−</mo><mi>shift</mi>"
                   "</mrow></mfrac><mo>)</mo><mo>,</mo><mspace width=\"1em\"/><mi>emb</mi><mo>=</mo><mo>[</mo>"
                   "<mi>sin</mi>"
                   "<mo>(</mo><mi>t</mi><mi>ω</mi><mo>)</mo><mo>|</mo><mi>cos</mi><mo>(</mo><mi>t</mi><mi>ω</mi><mo>)</mo>"
                   "<mo>]</mo>")
            + "<p>The flags: <code>downscale_freq_shift</code> (1 by default: the last frequency is not exactly "
              "1/max_period), <code>flip_sin_to_cos</code> (cos half first, as guided-diffusion), "
              "<code>scale</code>. Flux multiplies t ∈ [0, 1] by 1000 first, then takes [cos | sin] with shift 0.</p>")


def _nerf_formula() -> str:
    return ("<p>Neural fields (NeRF and its successors) encode a coordinate <var>x</var> by L bands, each "
            "doubling the last:</p>"
            + _eqs("<mi>γ</mi><mo>(</mo><mi>x</mi><mo>)</mo><mo>=</mo><mo>(</mo><mi>sin</mi><mo>(</mo><msup><mn>2</mn>"
                   "<mn>0</mn></msup><mi>π</mi><mi>x</mi><mo>)</mo><mo>,</mo><mi>cos</mi><mo>(</mo><msup><mn>2</mn><mn>0"
                   "</mn></msup><mi>π</mi><mi>x</mi><mo>)</mo><mo>,</mo><mo>…</mo><mo>,</mo><mi>sin</mi><mo>(</mo><msup>"
                   "<mn>2</mn><mrow><mi>L</mi><mo>−</mo><mn>1</mn></mrow></msup><mi>π</mi><mi>x</mi><mo>)</mo><mo>,</mo>"
                   "<mi>cos</mi><mo>(</mo><msup><mn>2</mn><mrow><mi>L</mi><mo>−</mo><mn>1</mn></mrow></msup><mi>π</mi>"
                   "<mi>x</mi><mo>)</mo><mo>)</mo>")
            + "<p>bmild/nerf leaves π out (bands 2<sup>k</sup>), nerfstudio uses 2π·2<sup>e</sup>, tiny-cuda-nn "
              "π·2<sup>k</sup>. A high band turns by more than π per float32 step of <var>x</var>: past it, it is "
              "noise.</p>")


def _rope_refs() -> list[dict[str, Any]]:
    from ..rope import YaRN, rope_cos_sin, rope_frequencies

    out = []
    ps = [0.0, 1.0, 7.0, 1000.0, 65535.0, 999999.0, 123456789.0]
    for head, base, sc, what in ((64, 10000.0, None, "RoPE, head 64, base 10000"),
                                 (128, 500000.0, YaRN(8.0, 4096), "YaRN factor 8, head 128, base 500000")):
        f = rope_frequencies(head, base=base, scaling=sc)
        c, s = rope_cos_sin(np.array(ps), head, base=base, scaling=sc, dtype=np.float64)
        out.append({"claim": f"exact.js gives posenc.rope_cos_sin's cos and sin ({what}, 7 positions)",
                    "w0": f.ladder.w0.tolist(), "w1": f.ladder.w1.tolist(), "w2": f.ladder.w2.tolist(),
                    "af": f.attention_factor, "positions": ps, "cos": c.tolist(), "sin": s.tolist()})
    return out


def _scaling_refs() -> list[dict[str, Any]]:
    from ..rope import rope_cos_sin, rope_frequencies
    from .rope_data import scaling_of

    out = []
    ps = [0.0, 5.0, 4096.0, 100000.0]
    for kind in ("linear", "ntk", "yarn", "llama3"):
        sc = scaling_of(kind, 8.0)
        f = rope_frequencies(64, base=500000.0, scaling=sc)
        c, s = rope_cos_sin(np.array(ps), 64, base=500000.0, scaling=sc, dtype=np.float64)
        out.append({"claim": f"exact.js gives posenc's cos and sin for {kind}, factor 8 (4 positions, 32 pairs)",
                    "w0": f.ladder.w0.tolist(), "w1": f.ladder.w1.tolist(), "w2": f.ladder.w2.tolist(),
                    "af": f.attention_factor, "positions": ps, "cos": c.tolist(), "sin": s.tolist()})
    return out


def _mrope_refs() -> list[dict[str, Any]]:
    from ..rope import rope_cos_sin, rope_frequencies

    f = rope_frequencies(128, base=1000000.0)
    ps = [0.0, 3.0, 250.0, 32767.0]
    c, s = rope_cos_sin([[p, p, p] for p in ps], 128, base=1000000.0, sections=(16, 24, 24), dtype=np.float64)
    return [{"claim": "a text token (t = h = w) in M-RoPE (16, 24, 24): exact.js on the plain ladder gives "
                      "posenc's M-RoPE cos and sin, bit for bit",
             "w0": f.ladder.w0.tolist(), "w1": f.ladder.w1.tolist(), "w2": f.ladder.w2.tolist(), "af": 1.0,
             "positions": ps, "cos": c.tolist(), "sin": s.tolist()}]


def _time_refs() -> list[dict[str, Any]]:
    from ..timesteps import timestep_embedding
    from ..timesteps.conventions import get

    lad = get("diffusers").plan(64).ladder
    ts = [0.0, 1.0, 500.0, 999.0]
    e = timestep_embedding(np.array(ts), 64, dtype=np.float64)
    return [{"claim": "exact.js gives posenc.timestep_embedding's sin and cos (diffusers, dim 64, 4 timesteps)",
             "w0": lad.w0.tolist(), "w1": lad.w1.tolist(), "w2": lad.w2.tolist(), "af": 1.0, "positions": ts,
             "sin": e[:, :32].tolist(), "cos": e[:, 32:].tolist()}]


def _time_precision() -> str:
    from ..parity.precision import POSITIONS, timestep_precision

    e = timestep_precision(256)
    rows = []
    for t in (1, 10, 100, 1000, 10**4, 10**5, 10**6):
        j = int(np.nonzero(POSITIONS == t)[0][0])
        cells = "".join(f'<td class="num" data-t="{t}" data-kind="{k}" data-value="{float(e[k][j])!r}">'
                        f"{float(e[k][j]):.2e}</td>" for k in ("f32", "bf16", "f16"))
        rows.append(f'<tr><th scope="row">{t:,}</th>{cells}<td class="num">0</td></tr>'.replace(",", "\u202f"))
    return ("<p>How far the usual implementations are from the exact embedding (dim 256, diffusers' defaults), "
            "for timesteps 1 … 10<sup>6</sup>: diffusers' own float32 path (t.float() times float32 frequencies: "
            "the angle rounds to float32 before sin and cos see it), and the exact embedding stored as a "
            f"bfloat16 or float16 table. Over diffusers' range, t ≤ 999, the float32 error stays below "
            f"{float(e['f32'][POSITIONS <= 999].max()):.1e} (the bfloat16 table's is {float(e['bf16'].max()):.1e}); "
            f"at t = 10<sup>6</sup> it is {float(e['f32'][-1]):.1e}: a continuous-time model that feeds times far "
            "beyond 999 meets the growing curve.</p>"
            '<div class="scroll"><table class="prec" id="ts-prec"><caption>Largest |error| over the 256 channels, '
            "computed by posenc when the page was built</caption><thead><tr><th scope=\"col\">t</th>"
            '<th scope="col">diffusers float32</th><th scope="col">bfloat16 table</th><th scope="col">float16 table'
            '</th><th scope="col">exact (posenc)</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table></div>")


def _fig(key: str, caption: str, make: Callable[[], Any]) -> FamilyFigure:
    return FamilyFigure(key, caption, make)


def _plots() -> Any:
    from .. import plot

    return plot


FAMILIES: tuple[Family, ...] = (
    Family("rope", "RoPE", "Rotary embeddings (RoPE): the worked examples",
           "The seed's rotation by an offset, applied to queries and keys: one pair turning, the score that depends "
           "on the offset alone, the two layouts, partial rotary, and what float32 does at position 10⁶.",
           _rope_formula, rope_cases.cases,
           (_fig("rope", "Left: one pair of q turning with the position. Right: the score of q and k at p and p + Δ "
                 "for three reference positions p: the curves coincide.", lambda: _plots().plot_rope(64)),
            _fig("precision", "The precision view at head 128, base 500000: the float32 angle's error grows with "
                 "the position, the bfloat16 and float16 tables hold their rounding, the exact curve is zero.",
                 lambda: _plots().plot_precision(128))),
           explorer="rope", refs=_rope_refs),
    Family("scalings", "Scalings", "Long-context scalings of RoPE: the worked examples",
           "Linear, NTK-aware, dynamic NTK, YaRN with its bands and attention factor, Llama 3.1's smoothing, "
           "LongRoPE's switch and the proportional ladder: what each does to every pair, computed by posenc.",
           _scaling_formula, rope_cases.scaling_cases,
           (_fig("scalings", "ω_i after the scaling over ω_i before, per pair: linear divides all, NTK grows the "
                 "division from 1 to the factor, YaRN and Llama 3.1 keep the fast pairs and divide the slow ones.",
                 lambda: _plots().plot_scalings(128)),),
           explorer="scaling", refs=_scaling_refs),
    Family("mrope", "M-RoPE", "Multi-axis RoPE (M-RoPE) and grids: the worked examples",
           "One position per axis, sections of pairs per axis, a text token that is plain RoPE, and the n-D "
           "sinusoid grids of vision towers.",
           _mrope_formula, grid_cases,
           (_fig("sections", "Which axis each of 64 pairs turns with, sections (24, 20, 20): contiguous as Qwen2-VL "
                 "lays them (top), interleaved as Qwen3-VL (bottom).", lambda: _plots().plot_sections()),),
           refs=_mrope_refs),
    Family("alibi", "ALiBi", "ALiBi: the worked examples",
           "Slopes for a head count that is not a power of two, the bias, BLOOM's different tensor with the same "
           "softmax, and the penalty past the training length.",
           _alibi_formula, lambda: bias_cases.cases(["ALIBI"]),
           (_fig("alibi", "ALiBi's bias −m_h·d against the distance, one line per head of 12.",
                 lambda: _plots().plot_alibi()),)),
    Family("t5", "T5 buckets", "T5's relative buckets: the worked examples",
           "Exact buckets for small offsets, logarithmic ones beyond, one bucket for everything past max_distance.",
           _t5_formula, lambda: bias_cases.cases(["T5"]),
           (_fig("buckets", "T5's bucket of each offset: one step per offset up to 7, then logarithmic steps, flat "
                 "past 128.", lambda: _plots().plot_buckets()),)),
    Family("xpos", "xPos", "xPos: the worked examples",
           "RoPE with a decay per pair that depends on the offset alone, and the overflow of its two factors.",
           _xpos_formula, lambda: bias_cases.cases(["XPOS"]),
           (_fig("xpos", "xPos's decay of q·k against the offset, one line per pair (log scale).",
                 lambda: _plots().plot_xpos()),)),
    Family("timesteps", "Timesteps", "Diffusion timestep embeddings: the worked examples",
           "diffusers' downscale_freq_shift and flip_sin_to_cos, Flux's t·1000, and how far diffusers' float32 "
           "embedding is from the exact one.",
           _time_formula, lambda: time_cases.cases(["SHIFT", "FLIP"]),
           (_fig("timesteps", "diffusers' embedding of t = 0 … 1000 (dim 128): the sin half, then the cos half.",
                 lambda: _plots().plot_timesteps()),
            _fig("flux", "Flux's embedding of t = 0 … 1 (dim 128): t·1000, cos half first.",
                 lambda: _plots().plot_timesteps(convention="flux", t_max=1.0)),
            _fig("t-precision", "The precision view for timesteps: diffusers' float32 embedding against the "
                 "exact one, t = 1 … 10⁶, with the bfloat16 and float16 tables; the exact curve is zero.",
                 lambda: _plots().plot_timestep_precision())),
           explorer="timestep", precision=_time_precision, refs=_time_refs),
    Family("nerf", "NeRF bands", "Neural-field frequency bands: the worked examples",
           "Bands that double, the three conventions (π or not), and the band past which float32 coordinates "
           "give noise.",
           _nerf_formula, lambda: time_cases.cases(["NERFBAND"]),
           (_fig("nerf", "sin(2^k·π·x) for the first four bands over x in [−1, 1].",
                 lambda: _plots().plot_nerf_bands()),)),
)

#: (file, navigation label) of every page of the site, the sinusoid first.
SITE: tuple[tuple[str, str], ...] = (("index.html", "Sinusoid"), *((f"{f.slug}.html", f.nav) for f in FAMILIES))
