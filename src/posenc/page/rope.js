/* The RoPE and scalings explorers, their precision view and the pages' self-test.
 *
 * cos and sin come from exact.js (posenc's exact path, bit for bit) on posenc's own ladders, written
 * into the page by posenc/page/rope_data.py. On top of them this script performs only the float64
 * operations posenc performs: cos·af, a·cos − b·sin and b·cos + a·sin (posenc.apply_rope), the score
 * summed as np.sum sums (exact.js pairwiseSum), and, for the precision view, the float32 product
 * (p·inv_freq).float() (Math.fround of float32 operands: the IEEE float32 product) and the float16 /
 * bfloat16 roundings of common.js. tests/page/test_page_families.py compares every number with posenc
 * and NumPy.
 */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const K = JSON.parse($("posenc-constants").textContent);
  const EX = makeExact(K);
  const C = makeCommon(EX);

  function decode(data) {
    const take = C.float64Reader(data.ladders);
    const out = {};
    data.keys.forEach((key, j) => {
      const e = data.entries[j];
      const w0 = take(e.n), w1 = take(e.n), w2 = take(e.n);
      out[key] = { lad: EX.ladder(w0, w1, w2), af: e.af, base: e.base, n: e.n, key };
    });
    return out;
  }

  function grouped(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f"); }

  /* cos and sin of p·ω_i times the attention factor, float64 [n] each: posenc.rope_cos_sin */
  function cosSin(p, L) {
    const s = new Float64Array(L.n), c = new Float64Array(L.n);
    EX.sincos(p, L.lad, s, c);
    if (L.af !== 1.0) for (let i = 0; i < L.n; i++) { c[i] = c[i] * L.af; s[i] = s[i] * L.af; }
    return [c, s];
  }

  /* posenc.apply_rope of one head x [h] at position p; pairs by layout, channels >= r unchanged */
  function pairIndex(layout, r, i) { return layout === "half" ? [i, i + r / 2] : [2 * i, 2 * i + 1]; }

  function rotate(x, p, L, layout) {
    const [c, s] = cosSin(p, L), r = 2 * L.n, out = Float64Array.from(x);
    for (let i = 0; i < L.n; i++) {
      const [j1, j2] = pairIndex(layout, r, i), a = x[j1], b = x[j2];
      out[j1] = a * c[i] - b * s[i];
      out[j2] = b * c[i] + a * s[i];
    }
    return out;
  }

  function dot(u, v) {  // np.sum(u * v): the products, then numpy's pairwise sum
    const w = new Float64Array(u.length);
    for (let j = 0; j < u.length; j++) w[j] = u[j] * v[j];
    return EX.pairwiseSum(w, 0, w.length);
  }

  /* ---------- the precision view: error against posenc's exact value, max over pairs, cos and sin */
  const PREC_POSITIONS = (function () {
    const out = [];
    for (let k = 0; k <= 120; k++) {
      const p = Math.round(10 ** (k / 20));
      if (!out.length || out[out.length - 1] !== p) out.push(p);
    }
    return out;
  })();

  const precisionAt = C.precisionAt;

  function precision(L) {  // depends on the ladder alone: computed once per ladder
    if (!L.prec) L.prec = PREC_POSITIONS.map((p) => ({ p, ...precisionAt(p, L) }));
    return L.prec;
  }

  /* ---------- SVG */
  const SVGNS = document.querySelector("svg").namespaceURI;  // the parser's SVG namespace: the page holds no URL
  function el(name, attrs, text) {
    const e = document.createElementNS(SVGNS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const scale = (a0, a1, b0, b1) => (v) => b0 + (v - a0) * (b1 - b0) / (a1 - a0);
  const poly = (pts) => pts.map(([x, y], j) => (j ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1)).join("");

  const CURVES = [["f32", "float32 angle (p·inv_freq).float()", "c-f32"], ["bf16", "bfloat16 table", "c-bf16"],
                  ["f16", "float16 table", "c-f16"]];

  function drawPrecision(prefix, L) {
    const rows = precision(L);
    const svg = $(prefix + "-prec-svg");
    svg.replaceChildren();
    let top = 0;
    for (const r of rows) top = Math.max(top, r.f32, r.bf16, r.f16);
    top = top > 0 ? top * 1.1 : 1;
    const X = scale(0, 6, 58, 400), Y = scale(0, top, 190, 14);
    svg.append(el("rect", { x: 58, y: 14, width: 342, height: 176, class: "frame" }));
    const sup = ["1", "10", "10²", "10³", "10⁴", "10⁵", "10⁶"];
    for (let e = 0; e <= 6; e++) {
      svg.append(el("line", { x1: X(e), x2: X(e), y1: 14, y2: 190, class: "grid" }));
      svg.append(el("text", { x: X(e), y: 206, class: "tick mid" }, sup[e]));
    }
    for (const t of [0, top / 2, top / 1.1]) {
      svg.append(el("text", { x: 52, y: Y(t) + 4, class: "tick end" }, t === 0 ? "0" : t.toExponential(1)));
    }
    for (const [key, , cls] of CURVES) {
      svg.append(el("path", { d: poly(rows.map((r) => [X(Math.log10(r.p)), Y(r[key])])), class: "curve " + cls }));
    }
    svg.append(el("path", { d: poly([[X(0), Y(0)], [X(6), Y(0)]]), class: "curve c-exact" }));
    svg.append(el("text", { x: 232, y: 218, class: "tick mid" }, "position p (log axis)"));
    svg.setAttribute("aria-label", `error against position 1 to 10^6; at 10^6 float32 angle ` +
      `${C.sci(rows[rows.length - 1].f32)}, bfloat16 ${C.sci(rows[rows.length - 1].bf16)}`);
    const decades = rows.filter((r) => [1, 10, 100, 1000, 1e4, 1e5, 1e6].includes(r.p));
    $(prefix + "-prec-body").innerHTML = decades.map((r) =>
      `<tr><th scope="row">${grouped(r.p)}</th>` + CURVES.map(([key]) =>
        `<td class="num" data-p="${r.p}" data-kind="${key}" data-value="${r[key]}">${C.sci(r[key])}</td>`).join("") +
      `<td class="num">0</td></tr>`).join("");
    return rows;
  }

  /* ---------- the `posenc parity` table of the current setting (posenc/page/parity_view.py, built with the page) */
  const PARITY = {};
  function drawParity(prefix, key, note) {
    const box = $(prefix + "-parity");
    if (!box) return;
    if (!PARITY[prefix]) PARITY[prefix] = JSON.parse($(prefix + "-parity-data").textContent);
    const P = PARITY[prefix], T = key === null ? undefined : P.tables[key];
    if (!T) { box.innerHTML = `<p class="hint" id="${prefix}-parity-none">${note}</p>`; return; }
    const head = P.positions.map((p) => `<th scope="col">${grouped(p)}</th>`).join("");
    const rows = Object.entries(T.errors).map(([name, errs]) => `<tr><th scope="row">${name}</th>` +
      errs.map((v, j) => `<td class="num" data-impl="${name}" data-p="${P.positions[j]}" ` +
        `data-value="${v === null ? "NaN" : v}">${v === null ? "—" : C.sci(v)}</td>`).join("") + "</tr>");
    const missing = Object.entries(T.unavailable || P.unavailable || {}).map(([n, why]) => `<li>${n}: ${why}</li>`).join("");
    const differ = T.disagreements.map((line) => `<li>${line}</li>`).join("");
    box.innerHTML = `<div class="scroll"><table class="prec" id="${prefix}-parity-table" data-key="${key}"><caption>` +
      "What <code>posenc parity</code> prints for this setting's config.json, computed by posenc.parity when the " +
      "page was built: the largest |cos − exact|, |sin − exact| over the pairs at each position</caption><thead><tr>" +
      `<th scope="col">implementation</th>${head}</tr></thead><tbody>${rows.join("")}</tbody></table></div>` +
      (missing ? `<p>Not measured when the page was built:</p><ul id="${prefix}-parity-missing">${missing}</ul>` : "") +
      `<p id="${prefix}-parity-differ">${differ ? "Settings on which they disagree:" : "No setting differs from " +
        "transformers' definition beyond the implementations' rounding."}</p>` + (differ ? `<ul>${differ}</ul>` : "") +
      (note ? `<p class="hint">${note}</p>` : "");
  }

  function precisionHtmlLegend() { return CURVES.map(([, label, cls]) => `<span class="key ${cls}">${label}</span>`); }

  const timings = [];
  const api = { exact: EX, common: C, cosSin, rotate, dot, precision, precisionAt, PREC_POSITIONS, timings };

  /* ---------- the RoPE explorer */
  function ropeExplorer() {
    const D = JSON.parse($("rope-data").textContent), LAD = decode(D);
    const ctl = { pos: $("r-pos"), posNum: $("r-pos-num"), off: $("r-off"), head: $("r-head"), base: $("r-base"),
                  frac: $("r-frac"), layout: $("r-layout"), pair: $("r-pair") };
    function settings() {
      const h = D.head_dims[Number(ctl.head.value)], fr = D.fractions[Number(ctl.frac.value)];
      const r = Math.round(h * fr), bi = Number(ctl.base.value), L = LAD[`${r}|${bi}`];
      return { pos: Number(ctl.posNum.value), off: Number(ctl.off.value), h, r, fr, bi, base: D.bases[bi], L,
               layout: ctl.layout.value, pair: Math.min(Number(ctl.pair.value), L.n - 1) };
    }
    const qOf = (h) => Float64Array.from({ length: h }, (_, j) => (j + 1) / h);
    const kOf = (h) => Float64Array.from({ length: h }, (_, j) => 1 - j / h);
    function score(S, pq, pk) { return dot(rotate(qOf(S.h), pq, S.L, S.layout), rotate(kOf(S.h), pk, S.L, S.layout)); }

    function update() {
      const t0 = performance.now();
      const S = settings();
      ctl.pair.max = String(S.L.n - 1);
      if (Number(ctl.pair.value) > S.L.n - 1) ctl.pair.value = String(S.L.n - 1);
      $("r-head-out").textContent = String(S.h);
      $("r-base-out").textContent = grouped(S.base);
      $("r-frac-out").textContent = `${S.r} of ${S.h}`;
      $("r-off-out").textContent = String(S.off);
      $("r-pair-out").textContent = String(S.pair);
      ctl.head.setAttribute("aria-valuetext", String(S.h));
      ctl.base.setAttribute("aria-valuetext", String(S.base));
      ctl.frac.setAttribute("aria-valuetext", `${S.r} of ${S.h} channels`);
      const [c, s] = cosSin(S.pos, S.L), i = S.pair;
      const q = qOf(S.h), qr = rotate(q, S.pos, S.L, S.layout);
      const [j1, j2] = pairIndex(S.layout, S.r, i);
      $("r-pair-facts").innerHTML =
        `<dt>ω<sub>${i}</sub> = base<sup>−2i/r</sup></dt><dd class="num" id="r-omega">${S.L.lad.w0[i]}</dd>` +
        `<dt>cos(ω<sub>${i}</sub>·p)</dt><dd class="num" id="r-cos">${C.fixed(c[i], 8)}</dd>` +
        `<dt>sin(ω<sub>${i}</sub>·p)</dt><dd class="num" id="r-sin">${C.fixed(s[i], 8)}</dd>` +
        `<dt>channels of pair ${i}</dt><dd class="num" id="r-channels">${j1}, ${j2}</dd>` +
        `<dt>q<sub>${j1}</sub>, q<sub>${j2}</sub> → rotated</dt><dd class="num"><span id="r-q1">${C.fixed(q[j1], 6)}</span>, ` +
        `${C.fixed(q[j2], 6)} → <span id="r-o1">${C.fixed(qr[j1], 8)}</span>, <span id="r-o2">${C.fixed(qr[j2], 8)}</span></dd>`;
      drawPair(S, q, qr, j1, j2);
      drawChannels(S, j1, j2);
      const sc = score(S, S.pos, S.pos + S.off), sc0 = score(S, 0, S.off);
      $("r-score-facts").innerHTML =
        `<dt>⟨R(p)q, R(p+Δ)k⟩ at p = ${grouped(S.pos)}, Δ = ${S.off}</dt><dd class="num" id="r-score">${C.fixed(sc, 10)}</dd>` +
        `<dt>the same at p = 0</dt><dd class="num" id="r-score0">${C.fixed(sc0, 10)}</dd>` +
        `<dt>difference (float64 rounding only)</dt><dd class="num" id="r-score-diff">${C.sci(Math.abs(sc - sc0))}</dd>`;
      drawScore(S);
      drawPrecision("r", S.L);
      drawParity("r", S.r === S.h ? `${S.h}|${S.bi}` : null,
                 "The parity tables here are for full rotary configs: choose all the channels.");
      $("r-status").textContent = `p ${S.pos}, head ${S.h}, base ${S.base}: cos ${C.fixed(c[i], 8)}`;
      timings.push(performance.now() - t0);
    }

    function drawPair(S, q, qr, j1, j2) {
      const svg = $("r-pair-svg");
      svg.replaceChildren();
      const cx = 110, cy = 110, R = 90, m = Math.max(Math.hypot(q[j1], q[j2]), 1e-9);
      svg.append(el("circle", { cx, cy, r: R, class: "unit" }));
      svg.append(el("line", { x1: cx - R - 8, x2: cx + R + 8, y1: cy, y2: cy, class: "axis" }));
      svg.append(el("line", { x1: cx, x2: cx, y1: cy - R - 8, y2: cy + R + 8, class: "axis" }));
      for (const [v, cls, label] of [[[q[j1], q[j2]], "from", "q"], [[qr[j1], qr[j2]], "to", "R(p)q"]]) {
        const x = cx + R * v[0] / m, y = cy - R * v[1] / m;
        svg.append(el("line", { x1: cx, y1: cy, x2: x, y2: y, class: "arrow " + cls }));
        svg.append(el("circle", { cx: x, cy: y, r: 4, class: "tip " + cls }));
        svg.append(el("text", { x: cx + 0.55 * (x - cx) + 4, y: cy + 0.55 * (y - cy) - 6, class: "tick strong start" },
                      label));
      }
      svg.append(el("text", { x: 232, y: 40, class: "tick start" }, `pair ${S.pair}: channels ${j1}, ${j2}`));
      svg.append(el("text", { x: 232, y: 60, class: "tick start" }, `turned by ω·p`));
      svg.append(el("text", { x: 232, y: 80, class: "tick start" }, `length kept`));
    }

    function drawChannels(S, j1, j2) {
      const svg = $("r-chan-svg");
      svg.replaceChildren();
      const w = 400 / S.h;
      for (let j = 0; j < S.h; j++) {
        const cls = j === j1 ? "ch ch-a" : j === j2 ? "ch ch-b" : j >= S.r ? "ch ch-pass" : "ch";
        svg.append(el("rect", { x: 10 + j * w, y: 20, width: Math.max(w - 1, 1), height: 30, class: cls }));
      }
      svg.append(el("text", { x: 10, y: 66, class: "tick start" }, "channel 0"));
      svg.append(el("text", { x: 410, y: 66, class: "tick end" }, `${S.h - 1}`));
      if (S.r < S.h) svg.append(el("text", { x: 10 + S.r * w + 2, y: 14, class: "tick start" }, "not rotated →"));
      svg.setAttribute("aria-label", `${S.layout} layout: pair ${S.pair} is channels ${j1} and ${j2}; ` +
        `${S.h - S.r} channels pass unchanged`);
    }

    const atZero = {};  // the score at (0, Δ) per ladder and layout: it does not move with p
    function drawScore(S) {
      const m = D.max_offset, svg = $("r-score-svg");
      svg.replaceChildren();
      const qr = rotate(qOf(S.h), S.pos, S.L, S.layout), k = kOf(S.h), at = [];
      for (let d = -m; d <= m; d++) at.push(dot(qr, rotate(k, S.pos + d, S.L, S.layout)));
      const key = `${S.L.key}|${S.h}|${S.layout}`;
      if (!atZero[key]) {
        const q0 = rotate(qOf(S.h), 0, S.L, S.layout);
        atZero[key] = [];
        for (let d = -m; d <= m; d++) atZero[key].push(dot(q0, rotate(k, d, S.L, S.layout)));
      }
      const at0 = atZero[key];
      let lo = Infinity, hi = -Infinity;
      for (const v of at0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      if (hi - lo < 1e-12) { hi += 1; lo -= 1; }
      const X = scale(-m, m, 46, 410), Y = scale(lo, hi, 176, 14);
      svg.append(el("rect", { x: 46, y: 14, width: 364, height: 162, class: "frame" }));
      svg.append(el("path", { d: poly(at0.map((v, j) => [X(j - m), Y(v)])), class: "curve c-exact thick" }));
      svg.append(el("path", { d: poly(at.map((v, j) => [X(j - m), Y(v)])), class: "curve c-f32 dashed" }));
      svg.append(el("line", { x1: X(S.off), x2: X(S.off), y1: 14, y2: 176, class: "marker" }));
      for (const [t, side] of [[-m, "start"], [0, "mid"], [m, "end"]]) {
        svg.append(el("text", { x: X(t), y: 194, class: "tick " + side }, `Δ = ${t}`));
      }
      svg.append(el("text", { x: 40, y: 22, class: "tick end" }, hi.toFixed(1)));
      svg.append(el("text", { x: 40, y: 176, class: "tick end" }, lo.toFixed(1)));
    }

    ctl.pos.addEventListener("input", () => { ctl.posNum.value = ctl.pos.value; update(); });
    ctl.posNum.addEventListener("input", () => {
      if (ctl.posNum.value === "" || !ctl.posNum.checkValidity()) return;
      ctl.pos.value = String(Math.min(Number(ctl.posNum.value), Number(ctl.pos.max)));
      update();
    });
    for (const c of [ctl.off, ctl.head, ctl.base, ctl.frac, ctl.layout, ctl.pair]) c.addEventListener("input", update);
    update();
    return { data: D, ladders: LAD, settings, update, score };
  }

  /* ---------- the scalings explorer */
  function scalingExplorer() {
    const D = JSON.parse($("scaling-data").textContent), LAD = decode(D);
    const ctl = { kind: $("s-kind"), base: $("s-base"), factor: $("s-factor"), seq: $("s-seq"), beta: $("s-beta"),
                  pos: $("s-pos"), posNum: $("s-pos-num"), pair: $("s-pair") };
    function settings() {
      const ki = Number(ctl.kind.value), [kind, label, knob] = D.kinds[ki];
      const bi = Number(ctl.base.value), fi = Number(ctl.factor.value);
      const k = knob === "seq" ? Number(ctl.seq.value) : knob === "beta" ? Number(ctl.beta.value) : 0;
      const L = LAD[`${kind}|${bi}|${fi}|${k}`], plain = LAD[`none|${bi}|0|0`];
      return { kind, label, knob, bi, fi, k, L, plain, base: D.bases[bi], factor: D.factors[fi],
               seq: D.seq_lens[Number(ctl.seq.value)], beta: D.betas[Number(ctl.beta.value)],
               pos: Number(ctl.posNum.value), pair: Math.min(Number(ctl.pair.value), L.n - 1) };
    }

    function update() {
      const t0 = performance.now();
      const S = settings();
      ctl.pair.max = String(S.L.n - 1);
      if (Number(ctl.pair.value) > S.L.n - 1) ctl.pair.value = String(S.L.n - 1);
      $("s-base-out").textContent = grouped(S.base);
      $("s-factor-out").textContent = String(S.factor);
      $("s-seq-out").textContent = grouped(S.seq);
      $("s-beta-out").textContent = String(S.beta);
      $("s-pair-out").textContent = String(S.pair);
      ctl.seq.disabled = S.knob !== "seq";
      ctl.beta.disabled = S.knob !== "beta";
      ctl.factor.disabled = S.kind === "none";
      const n = S.L.n, ratio = new Float64Array(n);
      let kept = 0, divided = 0;
      for (let i = 0; i < n; i++) {
        ratio[i] = S.L.lad.w0[i] / S.plain.lad.w0[i];
        if (ratio[i] === 1) kept++;
        else if (ratio[i] === 1 / S.factor) divided++;
      }
      drawLadder(S, ratio);
      const [c, s] = cosSin(S.pos, S.L), i = S.pair;
      $("s-facts").innerHTML =
        `<dt>effective base</dt><dd class="num" id="s-eff-base">${S.L.base}</dd>` +
        `<dt>attention factor (multiplies cos and sin)</dt><dd class="num" id="s-af">${S.L.af}</dd>` +
        `<dt>pairs kept (ω unchanged)</dt><dd class="num" id="s-kept">${kept} of ${n}</dd>` +
        `<dt>pairs divided by the factor</dt><dd class="num" id="s-divided">${divided} of ${n}</dd>` +
        `<dt>pairs in between</dt><dd class="num" id="s-between">${n - kept - divided} of ${n}</dd>`;
      $("s-pair-facts").innerHTML =
        `<dt>ω<sub>${i}</sub> after the scaling</dt><dd class="num" id="s-omega">${S.L.lad.w0[i]}</dd>` +
        `<dt>ω<sub>${i}</sub> / ω<sub>${i}</sub>(plain)</dt><dd class="num" id="s-ratio">${C.fixed(ratio[i], 6)}</dd>` +
        `<dt>af·cos(ω<sub>${i}</sub>·p), p = ${grouped(S.pos)}</dt><dd class="num" id="s-cos">${C.fixed(c[i], 8)}</dd>` +
        `<dt>af·sin(ω<sub>${i}</sub>·p)</dt><dd class="num" id="s-sin">${C.fixed(s[i], 8)}</dd>`;
      drawPrecision("s", S.L);
      const pk = S.kind === "none" ? `none|${S.bi}|0|0` : `${S.kind}|${S.bi}|${S.fi}|${S.knob === "beta" ? S.k : 0}`;
      drawParity("s", ["ntk", "proportional"].includes(S.kind) ? null : pk,
                 S.kind === "dynamic" ? "posenc parity measures dynamic NTK at the length its largest position " +
                   "needs (10⁶), not at the sequence length above." : S.kind === "ntk" || S.kind === "proportional"
                   ? "No transformers config states this variant here (NTK-aware is no rope_type; proportional is " +
                     "Gemma 4's own), so posenc parity has no table for it." : "");
      $("s-status").textContent = `${S.label}, factor ${S.factor}: ${kept} kept, ${divided} divided`;
      timings.push(performance.now() - t0);
    }

    function drawLadder(S, ratio) {
      const svg = $("s-ladder-svg"), n = ratio.length, lo = -Math.log2(32) - 0.3;
      svg.replaceChildren();
      const X = scale(-0.5, n - 0.5, 52, 410), Y = scale(lo, 0.3, 176, 14);
      svg.append(el("rect", { x: 52, y: 14, width: 358, height: 162, class: "frame" }));
      for (const e of [0, -1, -2, -3, -4, -5]) {
        svg.append(el("line", { x1: 52, x2: 410, y1: Y(e), y2: Y(e), class: "grid" }));
        svg.append(el("text", { x: 46, y: Y(e) + 4, class: "tick end" }, e === 0 ? "1" : `1/${2 ** -e}`));
      }
      for (let i = 0; i < n; i++) {
        const r = ratio[i], cls = r === 1 ? "nowrap" : r === 1 / S.factor ? "wrap-dot" : "ramp";
        svg.append(el("circle", { cx: X(i), cy: Y(Math.log2(r)), r: 3.5, class: cls }));
      }
      svg.append(el("text", { x: 230, y: 194, class: "tick mid" }, `pair i = 0 … ${n - 1}: ω_i / ω_i(plain), log scale`));
      svg.setAttribute("aria-label", `${S.label}: the ratio of each pair's frequency to plain RoPE's`);
    }

    ctl.pos.addEventListener("input", () => { ctl.posNum.value = ctl.pos.value; update(); });
    ctl.posNum.addEventListener("input", () => {
      if (ctl.posNum.value === "" || !ctl.posNum.checkValidity()) return;
      ctl.pos.value = String(Math.min(Number(ctl.posNum.value), Number(ctl.pos.max)));
      update();
    });
    for (const c of [ctl.kind, ctl.base, ctl.factor, ctl.seq, ctl.beta, ctl.pair]) c.addEventListener("input", update);
    update();
    return { data: D, ladders: LAD, settings, update };
  }

  /* ---------- the timesteps explorer: posenc.timestep_embedding with diffusers' flags */
  function timestepExplorer() {
    const D = JSON.parse($("timestep-data").textContent), LAD = decode(D);
    const ctl = { pos: $("t-pos"), posNum: $("t-pos-num"), dim: $("t-dim"), shift: $("t-shift"), flip: $("t-flip"),
                  conv: $("t-conv"), tdt: $("t-tdt") };
    function settings() {
      const dim = D.dims[Number(ctl.dim.value)], flux = ctl.conv.value === "flux", v = Number(ctl.posNum.value);
      if (!flux) {
        const shift = Number(ctl.shift.value);
        return { t: v, time: v, dim, shift, flip: ctl.flip.value === "1", flux, L: LAD[`${dim}|${shift}`] };
      }
      const t = v / D.flux_scale, mode = ctl.tdt.value;
      // time_dtype float32: posenc.timesteps.conventions.reference_times, float32(float32(t)·float32(1000))
      const time = mode === "exact" ? t : Math.fround(Math.fround(t) * Math.fround(D.flux_factor));
      return { t, time, dim, shift: 0, flip: true, flux, mode, L: LAD[`flux|${dim}|${mode}`] };
    }
    function embedding(S) {  // [sin | cos], or [cos | sin] flipped: dim values
      const n = S.L.n, s = new Float64Array(n), c = new Float64Array(n), out = new Float64Array(2 * n);
      EX.sincos(S.time, S.L.lad, s, c);
      out.set(S.flip ? c : s, 0);
      out.set(S.flip ? s : c, n);
      return out;
    }
    const num = (v) => (Object.is(v, -0) ? "-0" : String(v));
    function update() {
      const t0 = performance.now();
      const S = settings(), v = embedding(S), n = S.L.n;
      $("t-dim-out").textContent = String(S.dim);
      ctl.dim.setAttribute("aria-valuetext", String(S.dim));
      ctl.shift.disabled = S.flux; ctl.flip.disabled = S.flux; ctl.tdt.disabled = !S.flux;
      const rows = [0, 1, 2, 3, n - 1, n, 2 * n - 2, 2 * n - 1].map((j) => {
        const first = j < n, fn = (first !== S.flip) ? "sin" : "cos", k = first ? j : j - n;
        return `<tr><th scope="row">${j}</th><td>${fn}(t·ω<sub>${k}</sub>)</td>` +
          `<td class="num" id="t-ch-${j}" data-channel="${j}" data-value="${num(v[j])}">${C.fixed(v[j], 8)}</td></tr>`;
      });
      $("t-body").innerHTML = rows.join("");
      const what = !S.flux ? `exp(−ln(10000)·1/(${n} − ${S.shift}))`
        : S.mode === "exact" ? `1000·exp(−ln(10000)·1/${n}) (the factor folded in)` : `exp(−ln(10000)·1/${n})`;
      $("t-facts").innerHTML = (S.flux ? `<dt>Flux's t (the control ÷ ${grouped(D.flux_scale)})</dt>` +
          `<dd class="num" id="t-flux-t" data-value="${S.t}">${S.t}</dd><dt>the time the sinusoid sees` +
          `${S.mode === "exact" ? " (t, the ladder holds ×1000)" : ": float32(t)·1000 in float32"}</dt>` +
          `<dd class="num" id="t-time" data-value="${S.time}">${S.time}</dd>` : "") +
        `<dt>ω<sub>1</sub> = ${what}</dt><dd class="num" id="t-omega1">${S.L.lad.w0[1]}</dd>` +
        `<dt>ω<sub>${n - 1}</sub> (the slowest)</dt><dd class="num" id="t-omega-last">${S.L.lad.w0[n - 1]}</dd>`;
      drawPrecision("t", S.L);
      $("t-status").textContent = `t ${S.t}, dim ${S.dim}: channel 0 ${C.fixed(v[0], 8)}`;
      timings.push(performance.now() - t0);
    }
    ctl.pos.addEventListener("input", () => { ctl.posNum.value = ctl.pos.value; update(); });
    ctl.posNum.addEventListener("input", () => {
      if (ctl.posNum.value === "" || !ctl.posNum.checkValidity()) return;
      ctl.pos.value = String(Math.min(Number(ctl.posNum.value), Number(ctl.pos.max)));
      update();
    });
    for (const c of [ctl.dim, ctl.shift, ctl.flip, ctl.conv, ctl.tdt]) c.addEventListener("input", update);
    update();
    return { data: D, ladders: LAD, settings, update };
  }

  /* ---------- this page's self-test */
  const checks = [["every printed number of the worked cases is its double, formatted again here", C.digitsCheck],
                  ["every claim of the worked cases was checked against posenc when the page was built", C.casesCheck]];
  const refs = $("selftest-refs") ? JSON.parse($("selftest-refs").textContent) : [];
  for (const ref of refs) {
    checks.push([ref.claim, () => {
      const L = EX.ladder(Float64Array.from(ref.w0), Float64Array.from(ref.w1), Float64Array.from(ref.w2));
      const n = ref.w0.length, s = new Float64Array(n), c = new Float64Array(n);
      let bad = 0;
      ref.positions.forEach((p, r) => {
        EX.sincos(p, L, s, c);
        for (let i = 0; i < n; i++) {
          if (c[i] * ref.af !== ref.cos[r][i] || s[i] * ref.af !== ref.sin[r][i]) bad++;
        }
      });
      return [bad === 0, `${ref.positions.length * n * 2 - bad} of ${ref.positions.length * n * 2} values equal bit for bit`];
    }]);
  }
  if ($("rope-data")) api.rope = ropeExplorer();
  if ($("scaling-data")) api.scaling = scalingExplorer();
  if ($("timestep-data")) api.timestep = timestepExplorer();
  Object.assign(api, makeExplorers({ EX, C, $, decode, el, timings, grouped }));
  C.selfTest(checks);
  window.posencFamily = api;
  void precisionHtmlLegend;
})();
