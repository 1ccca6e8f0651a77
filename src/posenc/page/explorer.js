/* The explorer: reads the controls, computes with exact.js, writes the numbers and draws the panels.
 *
 * Every number it shows is either posenc's own (the ladders, wavelengths and
 * smallest bases written into the page by posenc) or computed by exact.js,
 * the twin of posenc's exact path; one IEEE operation at most is added on
 * top (φ = ω_i·k, turns = context/λ), the same one posenc performs.
 * Numbers are written the way Python's format(x, ".Nf") writes them.
 */
"use strict";

(function () {
  const DATA = JSON.parse(document.getElementById("posenc-data").textContent);
  const EX = makeExact(DATA.constants);
  const C = makeCommon(EX);  // common.js: the float64 reader and Python's fixed-point formatting
  const fixed = C.fixed;
  const $ = (id) => document.getElementById(id);
  const SVGNS = $("wave-svg").namespaceURI;  // the parser's SVG namespace: the page holds no URL at all

  /* ---------- posenc's ladders, decoded once */
  const LADDERS = (function () {
    const take = C.float64Reader(DATA.ladders);
    return DATA.bases.map(() => DATA.d_models.map((d) => {
      const n = d / 2;
      const w0 = take(n), w1 = take(n), w2 = take(n), lam = take(n);
      return { lad: EX.ladder(w0, w1, w2), lam, kernel: null };
    }));
  })();


  function grouped(n) {  // 1048576 -> "1 048 576"
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
  }

  function baseText(b) {
    return b < 1e5 ? String(b) : grouped(b);
  }

  /* ---------- the settings */
  const ctl = {
    pos: $("pos"), posNum: $("pos-num"), d: $("d-model"), base: $("base"),
    shift: $("shift"), pair: $("pair"), context: $("context"),
  };

  function settings() {
    const di = Number(ctl.d.value), bi = Number(ctl.base.value);
    const d = DATA.d_models[di];
    const n = d / 2;
    return {
      pos: Number(ctl.posNum.value), di, bi, d, n, base: DATA.bases[bi],
      k: Number(ctl.shift.value), pair: Math.min(Number(ctl.pair.value), n - 1),
      ci: Number(ctl.context.value), context: DATA.contexts[Number(ctl.context.value)],
      L: LADDERS[bi][di],
    };
  }

  function pe(p, L) {  // PE(p) interleaved, float64 [d]
    const n = L.lad.n, s = new Float64Array(n), c = new Float64Array(n), out = new Float64Array(2 * n);
    EX.sincos(p, L.lad, s, c);
    for (let i = 0; i < n; i++) { out[2 * i] = s[i]; out[2 * i + 1] = c[i]; }
    return out;
  }

  function pairAt(p, L, i) {  // [sin, cos] of p·ω_i
    const s = new Float64Array(1), c = new Float64Array(1);
    EX.sincos(p, L.lad, s, c, i, i + 1);
    return [s[0], c[0]];
  }

  function kernelOf(L) {  // Σ cos(ω_i·Δ) for Δ = -max_delta … max_delta, once per ladder
    if (!L.kernel) {
      const m = DATA.max_delta, s = new Float64Array(L.lad.n), c = new Float64Array(L.lad.n);
      L.kernel = new Float64Array(2 * m + 1);
      for (let j = 0; j <= m; j++) {  // posenc takes |Δ|, so -Δ gives the same bits: compute half
        L.kernel[m + j] = L.kernel[m - j] = EX.kernel(j, L.lad, s, c);
      }
    }
    return L.kernel;
  }

  /* ---------- drawing helpers (coordinates only: no number shown comes from here) */
  function el(name, attrs, text) {
    const e = document.createElementNS(SVGNS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function scale(a0, a1, b0, b1) {
    return (v) => b0 + (v - a0) * (b1 - b0) / (a1 - a0);
  }

  function poly(points) {
    return points.map(([x, y], j) => (j ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1)).join("");
  }

  function frame(svg, x0, x1, y0, y1) {
    svg.append(el("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, class: "frame" }));
  }

  /* ---------- the panels */
  function drawPE(S) {
    const v = pe(S.pos, S.L);
    const shown = S.d <= 16 ? [...Array(S.d).keys()]
      : [...Array(8).keys(), -1, ...Array.from({ length: 8 }, (_, j) => S.d - 8 + j)];
    const rows = shown.map((j) => {
      if (j < 0) return `<tr class="gap"><td colspan="3">… channels 8 … ${S.d - 9} …</td></tr>`;
      const i = j >> 1, fn = j % 2 ? "cos" : "sin";
      return `<tr><th scope="row">${j}</th><td>${fn}(ω<sub>${i}</sub>·pos)</td>` +
        `<td class="num" data-channel="${j}">${fixed(v[j], 8)}</td></tr>`;
    });
    $("pe-body").innerHTML = rows.join("");
    $("pe-caption").textContent = S.d <= 16
      ? `all ${S.d} channels, to 8 decimals`
      : `the first and last 8 of ${S.d} channels, to 8 decimals`;
    $("pe-lead").innerHTML = `pos = <b>${S.pos}</b>, d<sub>model</sub> = ${S.d}, base ${baseText(S.base)}: ` +
      `${S.n} pairs, every value in [−1, 1].`;
    return v;
  }

  function drawWave(S, v) {
    const svg = $("wave-svg");
    svg.replaceChildren();
    const lo = Math.max(0, S.pos - 6), hi = lo + 12;
    const X = scale(lo - 0.5, hi + 0.5, 40, 410), Y = scale(-1.2, 1.2, 180, 12);
    frame(svg, 40, 410, 12, 180);
    svg.append(el("line", { x1: 40, x2: 410, y1: Y(0), y2: Y(0), class: "axis" }));
    for (const t of [-1, 1]) svg.append(el("text", { x: 34, y: Y(t) + 4, class: "tick end" }, String(t)));
    const turn = 2 * Math.PI;  // drawing only: where the angle passes a multiple of 2π
    for (let m = Math.ceil((lo - 0.5) / turn); m * turn <= hi + 0.5; m++) {
      const x = X(m * turn);
      svg.append(el("line", { x1: x, x2: x, y1: 12, y2: 180, class: "period" }));
      const late = x > 340;  // a label near the right edge goes on the line's left
      svg.append(el("text", { x: late ? x - 3 : x + 3, y: 26, class: "tick period-label " + (late ? "end" : "start") },
                    m === 1 ? "2π" : `${m}·2π`));
    }
    const pts = [], s = new Float64Array(1), c = new Float64Array(1);
    for (let t = lo - 0.5; t <= hi + 0.5 + 1e-9; t += 0.05) {
      EX.sincos(t, S.L.lad, s, c, 0, 1);
      pts.push([X(t), Y(s[0])]);
    }
    svg.append(el("path", { d: poly(pts), class: "curve" }));
    for (let p = lo; p <= hi; p++) {
      const [sv] = pairAt(p, S.L, 0);
      const here = p === S.pos;
      svg.append(el("circle", { cx: X(p), cy: Y(sv), r: here ? 7 : 4, class: here ? "dot here" : "dot" }));
      if (p % 2 === lo % 2 || here) {
        svg.append(el("text", { x: X(p), y: 196, class: "tick mid" + (here ? " strong" : "") }, grouped(p)));
      }
    }
    const turns = S.pos / S.L.lam[0];
    $("wave-readout").innerHTML = `sin(pos) = <b class="num" id="wave-sin">${fixed(v[0], 8)}</b>, ` +
      `cos(pos) = <b class="num" id="wave-cos">${fixed(v[1], 8)}</b>: the angle is pos radians, ` +
      `<span class="num" id="wave-turns">${fixed(turns, 2)}</span> turns of 2π.`;
    svg.setAttribute("aria-label", `sin of positions ${lo} to ${hi}; pos ${S.pos} marked at ${fixed(v[0], 4)}`);
  }

  /* The tips of a small rotation, magnified in a box on the right of the rotation panel. */
  function drawZoom(svg, a, b, raw, gap) {
    const zx = 240, zy = 20, zw = 170;
    const half = Math.max(gap, 0.002) * 0.8, mx = (a[1] + b[1]) / 2, my = (a[0] + b[0]) / 2;
    const ZX = scale(mx - half, mx + half, zx, zx + zw), ZY = scale(my - half, my + half, zy + zw, zy);
    frame(svg, zx, zx + zw, zy, zy + zw);
    const clip = "rot-zoom-clip";
    const cp = el("clipPath", { id: clip });
    cp.append(el("rect", { x: zx, y: zy, width: zw, height: zw }));
    svg.append(cp);
    const g = el("g", { "clip-path": `url(#${clip})` });
    g.append(el("path", { d: poly(raw.map(([sn, cs]) => [ZX(cs), ZY(sn)])), class: "arc" }));
    for (const [v, cls, name] of [[a, "from", "pos"], [b, "to", "pos + k"]]) {
      g.append(el("circle", { cx: ZX(v[1]), cy: ZY(v[0]), r: 5, class: "tip " + cls }));
      const right = ZX(v[1]) < zx + zw / 2;
      g.append(el("text", { x: ZX(v[1]) + (right ? 9 : -9), y: ZY(v[0]) + 4,
                            class: "tick strong " + (right ? "start" : "end") }, name));
    }
    svg.append(g);
    svg.append(el("text", { x: zx + 4, y: zy + zw + 16, class: "tick" }, "the tips, magnified"));
  }

  function drawRotation(S) {
    const i = S.pair, L = S.L;
    const a = pairAt(S.pos, L, i), b = pairAt(S.pos + S.k, L, i), t = pairAt(S.k, L, i);
    const phi = L.lad.w0[i] * S.k;  // posenc's φ = ω_i·k (plot_rotation), one float64 product
    const svg = $("rot-svg");
    svg.replaceChildren();
    // the tips of a small rotation sit a few pixels apart: then a magnified view goes on the right
    const gap = Math.hypot(a[0] - b[0], a[1] - b[1]), zoomed = gap < 0.6;
    const R = 90, cx = zoomed ? 110 : 210, cy = 110;
    const P = (sn, cs, r = 1) => [cx + R * r * cs, cy - R * r * sn];
    svg.append(el("circle", { cx, cy, r: R, class: "unit" }));
    svg.append(el("line", { x1: cx - R - 8, x2: cx + R + 8, y1: cy, y2: cy, class: "axis" }));
    svg.append(el("line", { x1: cx, x2: cx, y1: cy - R - 8, y2: cy + R + 8, class: "axis" }));
    const raw = [], path = [], s = new Float64Array(1), c = new Float64Array(1);
    const turns = Math.abs(phi) / (2 * Math.PI);
    for (let j = 0; j <= 120; j++) {
      EX.sincos(S.pos + S.k * j / 120, L.lad, s, c, i, i + 1);
      raw.push([s[0], c[0]]);
      const r = turns > 0.9 ? 0.85 - 0.45 * j / 120 : 0.55;  // several turns: a spiral, inward
      path.push(P(s[0], c[0], r));
    }
    svg.append(el("path", { d: poly(path), class: "arc" }));
    for (const [v, cls] of [[a, "from"], [b, "to"]]) {
      const [x, y] = P(v[0], v[1]);
      svg.append(el("line", { x1: cx, y1: cy, x2: x, y2: y, class: "arrow " + cls }));
      svg.append(el("circle", { cx: x, cy: y, r: 4, class: "tip " + cls }));
    }
    if (zoomed) drawZoom(svg, a, b, raw, gap);
    const way = S.k === 0 ? "no turn" : (S.k > 0 ? "counter-clockwise" : "clockwise");
    $("rot-body").innerHTML =
      `<tr><th scope="row">pos = ${S.pos}</th><td class="num" id="rot-from-sin">${fixed(a[0], 8)}</td>` +
      `<td class="num" id="rot-from-cos">${fixed(a[1], 8)}</td></tr>` +
      `<tr><th scope="row">pos + k = ${S.pos + S.k}</th><td class="num" id="rot-to-sin">${fixed(b[0], 8)}</td>` +
      `<td class="num" id="rot-to-cos">${fixed(b[1], 8)}</td></tr>`;
    $("rot-readout").innerHTML = `Pair ${i} turns once every λ<sub>${i}</sub> = ` +
      `<span class="num" id="rot-lambda">${fixed(L.lam[i], 2)}</span> positions; ` +
      `φ = ω<sub>${i}</sub>·k = <b class="num" id="rot-phi">${fixed(phi, 6)}</b> rad (${way}). ` +
      `T<sub>k</sub> acts on the pair as [[cos φ, sin φ], [−sin φ, cos φ]] with ` +
      `cos φ = <span class="num" id="rot-cos-phi">${fixed(t[1], 8)}</span>, ` +
      `sin φ = <span class="num" id="rot-sin-phi">${fixed(t[0], 8)}</span>, whatever pos is.`;
    svg.setAttribute("aria-label", `pair ${i} rotated from pos ${S.pos} (blue) to ${S.pos + S.k} (orange) ` +
      `by ${fixed(phi, 4)} rad`);
  }

  function drawKernel(S) {
    const K = kernelOf(S.L), m = DATA.max_delta;
    let lo = Infinity;
    for (const v of K) lo = Math.min(lo, v);
    lo = Math.min(lo, 0);
    const svg = $("kernel-svg");
    svg.replaceChildren();
    const X = scale(-m, m, 46, 410), Y = scale(lo, S.n, 176, 14);
    frame(svg, 46, 410, 14, 176);
    svg.append(el("line", { x1: 46, x2: 410, y1: Y(0), y2: Y(0), class: "axis" }));
    // one value per integer offset: a thin line through dots (for small d_model they alias visibly)
    svg.append(el("path", { d: poly(Array.from(K, (v, j) => [X(j - m), Y(v)])), class: "curve thin" }));
    const dots = Array.from(K, (v, j) => `M${X(j - m).toFixed(1)} ${Y(v).toFixed(1)}h0`).join("");
    svg.append(el("path", { d: dots, class: "samples" }));
    svg.append(el("text", { x: 40, y: Y(S.n) + 4, class: "tick end" }, String(S.n)));
    svg.append(el("text", { x: 40, y: Y(0) + 4, class: "tick end" }, "0"));
    for (const [t, side] of [[-m, "start"], [0, "mid"], [m, "end"]]) {
      svg.append(el("text", { x: X(t), y: 194, class: "tick " + side }, `Δ = ${t}`));
    }
    const kv = K[S.k + m];
    svg.append(el("line", { x1: X(S.k), x2: X(S.k), y1: 14, y2: 176, class: "marker" }));
    svg.append(el("circle", { cx: X(S.k), cy: Y(kv), r: 6, class: "dot here" }));
    $("kernel-readout").innerHTML = `PE(pos)·PE(pos + k) = Σ<sub>i</sub> cos(ω<sub>i</sub>·k) = ` +
      `<b class="num" id="kernel-value">${fixed(kv, 6)}</b> at k = ${S.k}, for every pos ` +
      `(its peak, at Δ = 0, is d<sub>model</sub>/2 = ${S.n}).`;
    svg.setAttribute("aria-label", `kernel over offsets ${-m} to ${m}; at k = ${S.k} it is ${fixed(kv, 3)}`);
  }

  /* posenc.context_report, from posenc's wavelengths: loops = context / λ_i, one float64 division each */
  function contextFacts(bi, di, ci) {
    const lam = LADDERS[bi][di].lam, n = lam.length, c = DATA.contexts[ci];
    let wrapped = 0;
    for (let i = 0; i < n; i++) if (c / lam[i] > 1.0) wrapped++;
    const loops = c / lam[n - 1];
    return { lmax: lam[n - 1], loops, wrapped, wraps: loops > 1.0, minBase: DATA.min_base[ci][di] };
  }

  function drawLadder(S) {
    const lam = S.L.lam, n = S.n, c = S.context;
    const { lmax, loops, wrapped, wraps, minBase: mb } = contextFacts(S.bi, S.di, S.ci);
    const svg = $("ladder-svg");
    svg.replaceChildren();
    const top = Math.log10(Math.max(lmax, c) * 4), bot = Math.log10(lam[0] / 2);
    const X = scale(-0.5, Math.max(n - 0.5, 1), 52, 410), Y = scale(bot, top, 176, 14);
    frame(svg, 52, 410, 14, 176);
    for (let e = Math.ceil(bot); e <= top; e++) {
      svg.append(el("line", { x1: 52, x2: 410, y1: Y(e), y2: Y(e), class: "grid" }));
      svg.append(el("text", { x: 46, y: Y(e) + 4, class: "tick end" }, e < 4 ? String(10 ** e) : `1e${e}`));
    }
    svg.append(el("line", { x1: 52, x2: 410, y1: Y(Math.log10(c)), y2: Y(Math.log10(c)), class: "context" }));
    svg.append(el("text", { x: 56, y: Y(Math.log10(c)) - 5, class: "tick" }, `context ${grouped(c)}`));
    const r = n > 64 ? 2 : 3.5;
    for (let i = 0; i < n; i++) {
      const x = X(i), y = Y(Math.log10(lam[i]));
      svg.append(c / lam[i] > 1.0
        ? el("path", { d: `M${x - r} ${y - r}L${x + r} ${y + r}M${x - r} ${y + r}L${x + r} ${y - r}`, class: "wrap" })
        : el("circle", { cx: x, cy: y, r, class: "nowrap" }));
    }
    svg.append(el("text", { x: 230, y: 194, class: "tick mid" }, `pair i = 0 … ${n - 1}`));
    $("ladder-facts").innerHTML =
      `<dt>λ<sub>max</sub> = 2π·b<sup>(d−2)/d</sup></dt><dd class="num" id="lambda-max">${fixed(lmax, 1)}</dd>` +
      `<dt>turns of the slowest pair over ${grouped(c)} tokens</dt><dd class="num" id="loops">${fixed(loops, 2)}</dd>` +
      `<dt>pairs that turn more than once</dt><dd class="num" id="wrapped">${wrapped} of ${n}</dd>` +
      `<dt>smallest base that does not wrap</dt><dd class="num" id="min-base">${grouped(Math.ceil(mb))}</dd>`;
    $("verdict").className = "verdict " + (wraps ? "bad" : "good");
    $("verdict").textContent = wraps
      ? `Wraps: base ${baseText(S.base)} is too small for ${grouped(c)} tokens (λ_max ${fixed(lmax, 1)} < ` +
        `${grouped(c)}); use base ≥ ${grouped(Math.ceil(mb))}.`
      : `Does not wrap: base ${baseText(S.base)} suffices for ${grouped(c)} tokens (λ_max ${fixed(lmax, 1)} ≥ ` +
        `${grouped(c)}).`;
    svg.setAttribute("aria-label", `wavelengths of ${n} pairs on a log scale against a context of ${c}; ` +
      `${wrapped} wrap`);
  }

  /* ---------- keeping the controls in step */
  function syncLabels(S) {
    ctl.d.setAttribute("aria-valuetext", String(S.d));
    $("d-model-out").textContent = String(S.d);
    ctl.base.setAttribute("aria-valuetext", baseText(S.base));
    $("base-out").textContent = baseText(S.base);
    $("shift-out").textContent = String(S.k);
    ctl.pair.max = String(S.n - 1);
    if (Number(ctl.pair.value) > S.n - 1) ctl.pair.value = String(S.n - 1);
    $("pair-out").textContent = String(S.pair);
    ctl.context.setAttribute("aria-valuetext", `${S.context} tokens`);
    $("context-out").textContent = grouped(S.context);
  }

  const timings = [];

  function update() {
    const t0 = performance.now();
    const S = settings();
    syncLabels(S);
    const v = drawPE(S);
    drawWave(S, v);
    drawRotation(S);
    drawKernel(S);
    drawLadder(S);
    $("explorer-status").textContent = `pos ${S.pos}, d_model ${S.d}, base ${baseText(S.base)}, k ${S.k}: ` +
      `PE(pos)[0] = ${fixed(v[0], 8)}`;
    timings.push(performance.now() - t0);
  }

  function clampPos(raw) {
    const p = Math.round(Number(raw));
    return Number.isFinite(p) ? Math.min(Math.max(p, 0), DATA.max_position) : 0;
  }

  ctl.pos.addEventListener("input", () => { ctl.posNum.value = ctl.pos.value; update(); });
  ctl.posNum.addEventListener("input", () => {
    if (ctl.posNum.value === "" || !ctl.posNum.checkValidity()) return;  // mid-typing: keep the last good value
    ctl.pos.value = String(Math.min(Number(ctl.posNum.value), Number(ctl.pos.max)));
    update();
  });
  ctl.posNum.addEventListener("change", () => {
    ctl.posNum.value = String(clampPos(ctl.posNum.value));
    ctl.pos.value = String(Math.min(Number(ctl.posNum.value), Number(ctl.pos.max)));
    update();
  });
  for (const c of [ctl.d, ctl.base, ctl.shift, ctl.pair, ctl.context]) c.addEventListener("input", update);
  $("controls").addEventListener("submit", (e) => e.preventDefault());

  update();
  // for the browser tests: the very functions the panels use
  window.posencPage = { exact: EX, ladders: LADDERS, fixed, kernelOf, pe, contextFacts, update, timings, data: DATA };
})();
