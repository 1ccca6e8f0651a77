/* The M-RoPE, ALiBi, T5, xPos and NeRF explorers: every number computed here, bit for bit posenc's.
 *
 * cos and sin come from exact.js on posenc's ladders (posenc/page/family_data.py writes them in).
 * The rest is worked out here from the setting's integers:
 * - ALiBi's slopes 2^(−a/b), correctly rounded to float64 as posenc's are: a guess, then each
 *   neighbouring midpoint M decided exactly by comparing 2^(−a) with M^b as BigInts;
 * - T5's buckets in T5's float32 steps, with ln correctly rounded (posenc.exact.power.log_float32's
 *   twin: a guess proved by posenc's own exp, the rare close call decided by a BigInt exp);
 * - xPos's factors ζ^(u/scale_base): the twin of posenc's exp_dd and round_checked, and the rare
 *   close call decided exactly, (P/Q)^A against M^B as BigInts;
 * - NeRF's bands in turns: the twin of posenc.exact.core.turns_core and quadrant.
 * tests/page/test_page_explorers.py moves every control and compares with posenc.
 */
"use strict";

function makeExactMore(EX, PK, gamma) {
  /* The exact arithmetic of the explorers, no DOM: tools/fingerprint.py runs it under node (page-explorers-js). */
  /* ---------- doubles as exact rationals S·2^E (S a BigInt) */
  const BUF = new DataView(new ArrayBuffer(8));
  function parts(x) {  // x >= 0, finite
    BUF.setFloat64(0, x);
    const hi = BUF.getUint32(0), lo = BUF.getUint32(4), be = (hi >>> 20) & 0x7ff;
    const frac = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
    return be === 0 ? [frac, -1074] : [frac | (1n << 52n), be - 1075];
  }
  function bits64(x) { BUF.setFloat64(0, x); return BUF.getBigUint64(0); }
  function from64(b) { BUF.setBigUint64(0, b); return BUF.getFloat64(0); }
  const F32 = new Float32Array(1), U32 = new Uint32Array(F32.buffer);
  function next(x, up, f32) {  // the neighbour of x > 0 in float64 or float32
    if (!f32) return from64(bits64(x) + (up ? 1n : -1n));
    F32[0] = x; U32[0] += up ? 1 : -1; return F32[0];
  }
  function even(x, f32) { if (!f32) return (bits64(x) & 1n) === 0n; F32[0] = x; return (U32[0] & 1) === 0; }
  function mid(a, b) {  // (a + b)/2 exactly, as [S, E]
    const [sa, ea] = parts(a), [sb, eb] = parts(b), e = Math.min(ea, eb);
    return [(sa << BigInt(ea - e)) + (sb << BigInt(eb - e)), e - 1];
  }
  /* The float64 (or float32) nearest a value v > 0 known through cmp(M) = sign(v − M), ties to even. */
  function nearest(guess, cmp, f32) {
    let y = guess;
    for (;;) {
      const dn = next(y, false, f32), up = next(y, true, f32);
      const lo = cmp(mid(dn, y)), hi = cmp(mid(y, up));
      if (lo === 0) return even(y, f32) ? y : dn;
      if (hi === 0) return even(y, f32) ? y : up;
      if (lo < 0) y = dn; else if (hi > 0) y = up; else return y;
    }
  }
  const sgn = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  function gcd(a, b) { a = a < 0n ? -a : a; b = b < 0n ? -b : b; while (b) [a, b] = [b, a % b]; return a; }
  const shifted = (a, k) => (k >= 0 ? a << BigInt(k) : a);  // a·2^k for k >= 0, a itself below

  /* exp(S·2^E) (S >= 0) times 2^F, fixed point: Taylor on m/2^s, then s squarings; returns [value, s] */
  function expFixed(S, E, F) {
    const s = Math.max(0, S.toString(2).length + E + 12);
    const FF = BigInt(F), ONE = 1n << FF, sh = E - s + F;
    const R = sh >= 0 ? S << BigInt(sh) : S >> BigInt(-sh);
    let sum = ONE, term = ONE;
    for (let j = 1n; term > 0n; j++) { term = ((term * R) >> FF) / j; sum += term; }
    for (let i = 0; i < s; i++) sum = (sum * sum) >> FF;
    return [sum, s];
  }
  /* sign(x − exp(M)) for a double x >= 1 and M = [S, E] >= 0: more bits until the bound decides it */
  function expCmp(x, M) {
    const [xs, xe] = parts(x);
    for (let F = 256; F <= 1 << 14; F *= 2) {
      const [val, s] = expFixed(M[0], M[1], F);
      const Xf = xs << BigInt(xe + F), tol = (val >> BigInt(Math.max(F - s - 12, 0))) + 1n, d = Xf - val;
      if (d > tol) return 1;
      if (-d > tol) return -1;
    }
    throw new Error("exp undecided");  // ln of a rational other than 1 is never a midpoint
  }
  /* ln x correctly rounded to float64 (f32 false) or float32, for a double x > 1, decided exactly */
  const lnNearest = (x, f32) => nearest(f32 ? Math.fround(Math.log(x)) : Math.log(x), (M) => expCmp(x, M), f32);

  function twoSum(a, b) { const s = a + b, bb = s - a; return [s, (a - (s - bb)) + (b - bb)]; }
  function twoProd(a, ah, al, b, bh, bl) { const p = a * b; return [p, ((ah * bh - p) + ah * bl + al * bh) + al * bl]; }
  function hornerP(z) {
    const c = PK.P_C;
    let acc = c[c.length - 1] * z + c[c.length - 2];
    for (let j = c.length - 3; j >= 0; j--) acc = acc * z + c[j];
    return acc;
  }
  function expDD(xh0, xl0) {
    const xh = Math.min(Math.max(xh0, -1000), 1000), xl = Math.abs(xh0) <= 1000 ? xl0 : 0.0;
    const n = EX.rint(xh * PK.INV_C);
    const r1 = xh - n * PK.C0;
    let [s, e] = twoSum(r1, -(n * PK.C1));
    const [rh, rl] = twoSum(s, e + (xl - n * PK.C2));
    const [rhh, rhl] = EX.split(rh);
    const [z, zl] = twoProd(rh, rhh, rhl, rh, rhh, rhl);
    const tail = rl + (0.5 * zl + rh * rl) + rh * z * hornerP(rh);
    [s, e] = twoSum(rh, 0.5 * z);
    const [qh, ql] = twoSum(s, e + tail);
    const j = n - 128 * Math.floor(n / 128), m = (n - j) / 128;
    const th = PK.T_HI[j], tl = PK.T_LO[j];
    const [thh, thl] = EX.split(th), [qhh, qhl] = EX.split(qh);
    const [p, pe] = twoProd(th, thh, thl, qh, qhh, qhl);
    [s, e] = twoSum(th, p);
    let [hi, lo] = twoSum(s, e + (pe + tl + tl * qh + th * ql));
    const k1 = Math.trunc(m / 2), k2 = m - k1;  // ldexp in two exact steps (2^m alone may overflow)
    hi = hi * 2 ** k1 * 2 ** k2; lo = lo * 2 ** k1 * 2 ** k2;
    const normal = Math.abs(hi) >= 2.2250738585072014e-308;
    return [normal ? hi : 0.0, normal && Number.isFinite(hi) ? lo : 0.0];
  }
  function roundChecked(hi, lo, f32) {  // [y, hard]
    const y = f32 ? Math.fround(hi) : hi;
    const d = (hi - y) + lo;
    if (!(Number.isFinite(y) && hi > 0)) return [y, false];
    const nb = next(y, d >= 0, f32);
    const margin = 0.5 * Math.abs(nb - y) - Math.abs(d);
    const tol = PK.EPS * Math.abs(hi) + 2 ** -52 * Math.abs(d);
    return [margin < 0 ? nb : y, Math.abs(margin) <= tol];
  }
  /* posenc.exact.power.log_float32 for one float32 x >= 1 */
  function logFloat32(x) {
    if (x === 1) return 0;
    let y = Math.fround(Math.log(x));
    const margin = 2 ** -50;
    for (let it = 0; it < 4; it++) {
      const below = (y + next(y, false, true)) * 0.5, above = (y + next(y, true, true)) * 0.5;
      const eLo = expDD(below, 0)[0], eHi = expDD(above, 0)[0];
      if (eLo * (1 + margin) < x && x < eHi * (1 - margin)) return y;
      if (x > eHi * (1 + margin)) y = next(y, true, true);
      else if (x < eLo * (1 - margin)) y = next(y, false, true);
      else break;
    }
    return lnNearest(x, true);
  }

  /* ---------- ALiBi: slopes 2^(−a/b), correctly rounded */
  function pow2Neg(a, b) {  // 2^(−a/b), a, b > 0 integers
    const g = Number(gcd(BigInt(a), BigInt(b)));
    a /= g; b /= g;
    if (b === 1) { let v = 1; for (let k = 0; k < a; k++) v *= 0.5; return v; }
    const B = BigInt(b);
    return nearest(Math.pow(2, -a / b), ([S, E]) => {  // sign(2^(−a/b) − S·2^E): 2^(−a) against S^b·2^(Eb)
      const T = -a - E * b, lhs = shifted(1n, T), rhs = shifted(S ** B, -T);
      return sgn(lhs, rhs);
    }, false);
  }
  function slopeExponents(n, conv, bmax) {  // [a, b]: slope 2^(−a/b), posenc.bias.alibi_variants
    if (conv === "mpt") {
      let big = 1; while (big < n) big *= 2;
      let e = []; for (let k = 1; k <= big; k++) e.push([bmax * k, big]);
      if (big !== n) e = e.filter((_, j) => j % 2 === 1).concat(e.filter((_, j) => j % 2 === 0)).slice(0, n);
      return e;
    }
    let p = 1; while (p * 2 <= n) p *= 2;
    const e = []; for (let k = 1; k <= p; k++) e.push([8 * k, p]);
    for (let k = 1; e.length < n; k += 2) e.push([8 * k, 2 * p]);
    return e;
  }
  /* ---------- T5: buckets in T5's float32 steps */
  function t5Setting(nb, md, bidi) {  // posenc.bias.T5Buckets, or the reason posenc refuses it
    if (bidi && nb < 4) {
      return { refused: `num_buckets must be >= 4 when bidirectional (each direction needs an exact bucket), got ${nb}` };
    }
    if (!(2 * md > nb)) {
      return { refused: `max_distance must be > num_buckets/2 = ${nb / 2} (the logarithmic buckets start there), got ${md}` };
    }
    const n = bidi ? Math.floor(nb / 2) : nb, e = Math.floor(n / 2);
    const den = Math.fround(lnNearest(md / e, false));  // float32(ln(max_distance/max_exact) in float64)
    return { nb, md, bidi, n, e, den };
  }
  function distBucket(S, d) {  // d >= 0
    if (d < S.e) return d;
    const x = Math.fround(Math.fround(d) / S.e);
    const q = Math.fround(logFloat32(x) / S.den), big = S.e + Math.trunc(Math.fround(q * (S.n - S.e)));
    return Math.min(big, S.n - 1);
  }
  const t5Bucket = (S, rel) => (S.bidi ? (rel > 0 ? S.n : 0) + distBucket(S, Math.abs(rel))
                                       : distBucket(S, 0 - Math.min(rel, 0)));  // 0 − …: an int, never −0
  function t5Edges(S) {  // posenc.t5_bucket_edges: bisection on the non-decreasing bucket of the distance
    const out = [];
    for (let b = 0; b < S.e; b++) out.push(b);
    for (let b = S.e; b < S.n; b++) {
      let lo = S.e, hi = Math.max(S.md, S.e);
      while (lo < hi) { const m = Math.floor((lo + hi) / 2); if (distBucket(S, m) < b) lo = m + 1; else hi = m; }
      out.push(distBucket(S, lo) === b ? lo : -1);
    }
    return out;
  }
  /* ---------- xPos: ζ_i^(±(p − c)/scale_base), correctly rounded */
  function xposFactor(u, i, E, sb, r, f32) {
    const lh = E.lh[i], ll = E.ll[i];
    const [uh, ul] = EX.split(u), [lhh, lhl] = EX.split(lh);
    const [p, e] = twoProd(u, uh, ul, lh, lhh, lhl);
    const [rh, rl] = expDD(p, e + u * ll);
    const [y, hard] = roundChecked(rh, rl, f32);
    return hard ? powerNearest(u, i, sb, r, y, f32) : y;
  }
  function powerNearest(u, i, sb, r, guess, f32) {  // posenc.exact.power.nearest_power(ζ_i, u/sb): exact
    const [G, gE] = parts(gamma), Dn = 1n << BigInt(-gE), R = BigInt(r);
    const P = 2n * BigInt(i) * Dn + R * G, Q = R * (Dn + G);  // ζ_i = (2i/r + γ)/(1 + γ) = P/Q
    const [Sb, sE] = parts(sb), U = BigInt(u);
    let A = sE >= 0 ? U : U << BigInt(-sE), B = sE >= 0 ? Sb << BigInt(sE) : Sb;
    const g = gcd(A, B); A /= g; B /= g;
    const Aa = A < 0n ? -A : A, top = A < 0n ? Q ** Aa : P ** Aa, bottom = A < 0n ? P ** Aa : Q ** Aa, b = Number(B);
    return nearest(guess, ([S, E]) => {  // ζ^(A/B) against S·2^E: (P/Q)^A against S^B·2^(EB)
      const k = E * b;
      return sgn(shifted(top, -k), shifted(bottom * S ** B, k));
    }, f32);
  }
  return { parts, nearest, expCmp, lnNearest, twoSum, twoProd, expDD, roundChecked, logFloat32, pow2Neg,
           slopeExponents, t5Setting, distBucket, t5Bucket, t5Edges, xposFactor, powerNearest };
}

function makeExplorers(X) {
  const { EX, C, $, decode, el, timings, grouped } = X;
  const api = {};
  const XD = $("xpos-data") ? JSON.parse($("xpos-data").textContent) : null;
  const PK = XD ? XD.exp : $("t5-data") ? JSON.parse($("t5-data").textContent).exp : null;
  const M = makeExactMore(EX, PK, XD ? XD.gamma : 0.4);
  const { twoSum, pow2Neg, slopeExponents, t5Setting, t5Bucket, t5Edges, logFloat32, lnNearest, xposFactor,
          powerNearest, expDD } = M;

  function bindPosition(prefix, update) {  // a slider and a number field for one value
    const s = $(prefix), n = $(prefix + "-num");
    s.addEventListener("input", () => { n.value = s.value; update(); });
    n.addEventListener("input", () => {
      if (n.value === "" || !n.checkValidity()) return;
      s.value = String(Math.max(Number(s.min), Math.min(Number(n.value), Number(s.max))));
      update();
    });
  }
  const num = (v) => (Object.is(v, -0) ? "-0" : String(v));  // the double's shortest text, -0 kept
  const dd = (label, id, v, shown) => `<dt>${label}</dt><dd class="num" id="${id}" data-value="${num(v)}">${shown}</dd>`;
  const timed = (fn) => () => { const t0 = performance.now(); fn(); timings.push(performance.now() - t0); };
  const AXES = ["t", "h", "w"];

  /* ---------- M-RoPE: pair i turns with the position of its section's axis */
  function mrope() {
    const D = JSON.parse($("mrope-data").textContent), LAD = decode(D);
    const ctl = ["m-pos", "m-pos-num", "m-h", "m-w", "m-sec", "m-layout", "m-base", "m-pair"].map($);
    function axesOf(sizes, layout) {  // posenc.rope.sections.Sections.pair_axes, or null where posenc refuses
      const n = sizes.length, total = sizes.reduce((a, b) => a + b, 0), out = new Array(total).fill(0);
      if (layout === "contiguous") { let j = 0; sizes.forEach((s, a) => { for (let k = 0; k < s; k++) out[j++] = a; }); return out; }
      for (let a = 1; a < n; a++) {
        if (a + n * (sizes[a] - 1) >= total) return null;
        for (let k = 0; k < sizes[a]; k++) out[a + n * k] = a;
      }
      return out;
    }
    const update = timed(() => {
      const sizes = D.sections[Number($("m-sec").value)], layout = $("m-layout").value;
      const bi = Number($("m-base").value), L = LAD[String(bi)], i = Number($("m-pair").value);
      const pos = [Number($("m-pos-num").value), Number($("m-h").value), Number($("m-w").value)];
      $("m-h-out").textContent = String(pos[1]); $("m-w-out").textContent = String(pos[2]);
      $("m-base-out").textContent = grouped(D.bases[bi]); $("m-pair-out").textContent = String(i);
      const axes = axesOf(sizes, layout);
      $("m-refused").textContent = axes ? "" : `posenc refuses interleaved sections (${sizes.join(", ")}): axis 0 ` +
        "must hold at least as many pairs as any other (their pairs would run past the last one)";
      const svg = $("m-strip-svg");
      svg.replaceChildren();
      if (!axes) { $("m-facts").innerHTML = ""; return; }
      const a = axes[i], p = pos[a], s = new Float64Array(1), c = new Float64Array(1);
      EX.sincos(p, L.lad, s, c, i, i + 1);
      const count = [0, 1, 2].map((k) => axes.filter((x) => x === k).length);
      $("m-facts").innerHTML = `<dt>pair ${i} serves axis</dt><dd class="num" id="m-axis">${AXES[a]}</dd>` +
        dd(`its position p<sub>${AXES[a]}</sub>`, "m-p", p, grouped(p)) +
        dd(`ω<sub>${i}</sub> = base<sup>−2i/128</sup>`, "m-omega", L.lad.w0[i], String(L.lad.w0[i])) +
        dd(`cos(ω<sub>${i}</sub>·p<sub>${AXES[a]}</sub>)`, "m-cos", c[0], C.fixed(c[0], 8)) +
        dd(`sin(ω<sub>${i}</sub>·p<sub>${AXES[a]}</sub>)`, "m-sin", s[0], C.fixed(s[0], 8)) +
        `<dt>pairs per axis (t, h, w)</dt><dd class="num" id="m-count">${count.join(", ")}</dd>`;
      const w = 400 / axes.length;
      axes.forEach((x, j) => svg.append(el("rect", { x: 10 + j * w, y: j === i ? 8 : 16, width: Math.max(w - 1, 1),
        height: j === i ? 40 : 24, class: `ax ax-${AXES[x]}` })));
      svg.append(el("text", { x: 10, y: 64, class: "tick start" }, "pair 0 (fastest)"));
      svg.append(el("text", { x: 410, y: 64, class: "tick end" }, `${axes.length - 1} (slowest)`));
      svg.setAttribute("aria-label", `${layout} sections ${sizes.join(", ")}: pair ${i} serves ${AXES[a]}`);
    });
    bindPosition("m-pos", update);
    for (const c of ctl.slice(2)) if (c.id !== "m-pos-num") c.addEventListener("input", update);
    update();
    return { data: D, update };
  }

  function alibi() {
    const D = JSON.parse($("alibi-data").textContent), cache = {};
    const update = timed(() => {
      const n = Number($("a-heads").value), conv = $("a-conv").value, bmax = D.bias_max[Number($("a-bmax").value)];
      $("a-head").max = String(n - 1);
      if (Number($("a-head").value) > n - 1) $("a-head").value = String(n - 1);
      const h = Number($("a-head").value), d = Number($("a-dist-num").value);
      $("a-heads-out").textContent = String(n); $("a-head-out").textContent = String(h);
      $("a-bmax-out").textContent = String(bmax); $("a-bmax").disabled = conv !== "mpt";
      const key = `${n}|${conv}|${bmax}`;
      if (!cache[key]) cache[key] = slopeExponents(n, conv, bmax).map(([a, b]) => [a, b, pow2Neg(a, b)]);
      const sl = cache[key], [a, b, m] = sl[h];
      const bias = m * -d;  // posenc: the float64 product m·t, t = j − i = −d
      $("a-facts").innerHTML = dd(`slope m<sub>${h}</sub> = 2<sup>−${a}/${b}</sup>`, "a-slope", m, String(m)) +
        dd(`bias −m·d at distance d = ${grouped(d)} (float64)`, "a-bias", bias, String(bias)) +
        dd("the same in float32 (posenc's default dtype)", "a-bias32", Math.fround(bias), String(Math.fround(bias))) +
        dd("distance where the penalty reaches 1 (weight × e<sup>−1</sup>)", "a-reach", 1.0 / m, String(1.0 / m));
      $("a-slopes-body").innerHTML = sl.map(([sa, sb, v], j) => `<tr${j === h ? ' class="chosen"' : ""}><th scope="row">` +
        `${j}</th><td>2<sup>−${sa}/${sb}</sup></td><td class="num" data-head="${j}" data-value="${v}">${v}</td></tr>`).join("");
      const svg = $("a-svg"), X = (j) => 46 + (j + 0.5) * 364 / n, Y = (v) => 14 + 162 * Math.min(-Math.log2(v), 20) / 20;
      svg.replaceChildren(el("rect", { x: 46, y: 14, width: 364, height: 162, class: "frame" }));
      for (const e of [0, 5, 10, 15, 20]) {
        const sup = String(e).replace(/\d/g, (c) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[Number(c)]);
        svg.append(el("text", { x: 40, y: 18 + 162 * e / 20, class: "tick end" }, e ? `2⁻${sup}` : "1"));
      }
      sl.forEach(([, , v], j) => svg.append(el("circle", { cx: X(j), cy: Y(v), r: j === h ? 5 : 3,
        class: j === h ? "tip to" : "tip from" })));
      svg.append(el("text", { x: 228, y: 194, class: "tick mid" }, `head 0 … ${n - 1}: slope, log scale`));
    });
    bindPosition("a-dist", update);
    for (const id of ["a-heads", "a-head", "a-conv", "a-bmax"]) $(id).addEventListener("input", update);
    update();
    return { data: D, update, pow2Neg, exponents: slopeExponents };
  }

  function t5() {
    const D = JSON.parse($("t5-data").textContent), cache = {};
    const update = timed(() => {
      const nb = D.buckets[Number($("b-nb").value)], md = D.distances[Number($("b-md").value)];
      const bidi = $("b-bidi").value === "1", rel = Number($("b-rel-num").value);
      $("b-nb-out").textContent = String(nb); $("b-md-out").textContent = grouped(md);
      const key = `${nb}|${md}|${bidi}`;
      if (!cache[key]) { const S = t5Setting(nb, md, bidi); cache[key] = S.refused ? S : { ...S, edges: t5Edges(S) }; }
      const S = cache[key];
      $("b-refused").textContent = S.refused ? `posenc refuses: ${S.refused}` : "";
      if (S.refused) { $("b-facts").innerHTML = ""; $("b-edges-body").innerHTML = ""; return; }
      const near = [-2, -1, 1, 2].map((k) => rel + k).filter((r) => Math.abs(r) <= D.max_offset);
      $("b-facts").innerHTML = dd(`bucket of j − i = ${grouped(rel)}`, "b-bucket", t5Bucket(S, rel), String(t5Bucket(S, rel))) +
        `<dt>buckets per direction n, exact ones e</dt><dd class="num" id="b-ne">${S.n}, ${S.e}</dd>` +
        dd("float32(ln(max_distance / e))", "b-den", S.den, String(S.den)) +
        `<dt>neighbours ${near.map(grouped).join(", ")}</dt><dd class="num" id="b-near">` +
        near.map((r) => t5Bucket(S, r)).join(", ") + "</dd>";
      $("b-edges-body").innerHTML = S.edges.map((v, b) => `<tr><th scope="row">${b}</th>` +
        `<td class="num" data-bucket="${b}" data-value="${v}">${v < 0 ? "none" : grouped(v)}</td></tr>`).join("");
    });
    bindPosition("b-rel", update);
    for (const id of ["b-nb", "b-md", "b-bidi"]) $(id).addEventListener("input", update);
    update();
    return { data: D, update, t5Setting, t5Bucket, t5Edges, logFloat32, lnNearest };
  }

  function xpos() {
    const D = XD, LAD = {};
    const take = C.float64Reader(D.ladders);
    let shared = null;
    D.keys.forEach((key, j) => {
      const n = D.entries[j].n;
      if (key.endsWith("|0")) {  // a new rotary dim: its ladder and ζ come first
        const w0 = take(n), w1 = take(n), w2 = take(n);
        shared = { lad: EX.ladder(w0, w1, w2), zeta: take(n) };
      }
      LAD[key] = { ...shared, lh: take(n), ll: take(n), n };
    });
    const update = timed(() => {
      const r = D.rotary[Number($("x-rot").value)], si = Number($("x-sb").value), sb = D.scale_bases[si];
      const N = D.seq_lens[Number($("x-seq").value)], p = Number($("x-pos-num").value), role = $("x-role").value;
      const E = LAD[`${r}|${si}`];
      $("x-pair").max = String(E.n - 1);
      if (Number($("x-pair").value) > E.n - 1) $("x-pair").value = String(E.n - 1);
      const i = Number($("x-pair").value), c = Math.floor(N / 2), u = (p - c) * (role === "q" ? 1.0 : -1.0);
      for (const [id, v] of [["x-rot", r], ["x-sb", sb], ["x-seq", N], ["x-pair", i]]) $(id + "-out").textContent = grouped(v);
      let rate = 0;
      for (let j = 0; j < E.n; j++) rate = Math.max(rate, Math.abs(E.lh[j]));
      const fits = (dt) => !(Math.abs(u) * rate > D.limits[dt]);
      const s1 = new Float64Array(1), c1 = new Float64Array(1);
      EX.sincos(p, E.lad, s1, c1, i, i + 1);
      let html = dd(`ζ<sub>${i}</sub> = (2i/r + 0.4)/1.4`, "x-zeta", E.zeta[i], String(E.zeta[i])) +
        `<dt>centre c = N // 2; u = ${role === "q" ? "" : "−"}(p − c)</dt><dd class="num" id="x-u">${grouped(c)}; ${u}</dd>`;
      if (fits("float64")) {
        const f = xposFactor(u, i, E, sb, r, false), cf = c1[0] * f, sf = s1[0] * f;
        html += dd(`factor ζ<sub>${i}</sub><sup>u/${sb}</sup> (float64)`, "x-f64", f, String(f)) +
          dd(`cos(ω<sub>${i}</sub>·p)·factor`, "x-cos", cf, String(cf)) + dd(`sin(ω<sub>${i}</sub>·p)·factor`, "x-sin", sf, String(sf));
      } else {
        html += `<dt>float64</dt><dd id="x-f64">posenc refuses: the factors leave float64's range</dd>`;
      }
      html += fits("float32") ? dd("the factor in float32 (xpos_scale, dtype float32)", "x-f32",
                                   xposFactor(u, i, E, sb, r, true), String(xposFactor(u, i, E, sb, r, true)))
        : `<dt>float32</dt><dd id="x-f32">posenc refuses: |u| = ${Math.abs(u)} takes the factors out of float32's ` +
          `range (at most ${Math.floor(D.limits.float32 / rate)} fits)</dd>`;
      $("x-facts").innerHTML = html;
      const svg = $("x-svg");
      svg.replaceChildren(el("rect", { x: 46, y: 14, width: 364, height: 162, class: "frame" }));
      const X = (d) => 46 + 364 * d / 4096, Y = (v) => 176 - 162 * v;
      for (const j of [0, Math.floor(E.n / 4), Math.floor(E.n / 2), E.n - 1]) {
        const pts = [];
        for (let d = 0; d <= 4096; d += 128) pts.push([X(d), Y(xposFactor(d, j, E, sb, r, false))]);
        svg.append(el("path", { d: pts.map(([a, b], k) => (k ? "L" : "M") + a.toFixed(1) + " " + b.toFixed(1)).join(""),
          class: "curve " + (j === 0 ? "c-f32" : "c-exact") }));
      }
      svg.append(el("text", { x: 228, y: 194, class: "tick mid" }, `ζ^(Δ/${sb}), Δ = 0 … 4096; red: pair 0; n/4, n/2, n−1`));
      svg.append(el("text", { x: 40, y: 18, class: "tick end" }, "1"));
      svg.append(el("text", { x: 40, y: 176, class: "tick end" }, "0"));
    });
    bindPosition("x-pos", update);
    for (const id of ["x-rot", "x-sb", "x-seq", "x-role", "x-pair"]) $(id).addEventListener("input", update);
    update();
    return { data: D, update, factor: xposFactor, exactFactor: (u, i, E, sb, r, f32) => powerNearest(u, i, sb, r, xposFactor(u, i, E, sb, r, f32), f32), expDD, ladders: LAD };
  }

  /* ---------- NeRF bands: in radians, or in turns where ω_k/2π is a power of two */
  function nerf() {
    const D = JSON.parse($("nerf-data").textContent), LAD = {}, take = C.float64Reader(D.ladders);
    const whole = {};  // the 24-band ladder of each preset whose n bands are its prefix
    D.keys.forEach((k, j) => {
      const e = D.entries[j], conv = k.split("|")[0];
      if (!e.prefix) {
        const w0 = take(e.n), w1 = take(e.n), w2 = take(e.n);
        LAD[k] = { lad: EX.ladder(w0, w1, w2), n: e.n };
        if (e.n === D.max_bands) whole[conv] = LAD[k];
      }
      LAD[k] = { ...(LAD[k] || {}), n: e.n, turns: e.turns, conv, prefix: e.prefix };
    });
    for (const k of Object.keys(LAD)) if (LAD[k].prefix) LAD[k].lad = whole[LAD[k].conv].lad;
    const TP = EX.ladder(Float64Array.of(D.two_pi[0]), Float64Array.of(D.two_pi[1]), Float64Array.of(D.two_pi[2]));
    function band(x, L, k) {  // [sin, cos] of band k at x: posenc.fields.encoding
      const s = new Float64Array(1), c = new Float64Array(1), tau = L.turns[k];
      if (!tau) { EX.sincos(x, L.lad, s, c, k, k + 1); return [s[0], c[0]]; }
      const hi = x * tau;  // exact: τ a power of two
      const [r, e] = twoSum(hi - EX.rint(hi), 0.0);  // turns_core
      const kq = EX.rint(4.0 * r);
      const [f, g] = twoSum(r - 0.25 * kq, e);
      const q = kq - 4.0 * Math.floor(kq * 0.25);
      EX.sincos(f, TP, s, c, 0, 1, g);
      let sn = s[0], cs = c[0];
      if (q === 1 || q === 3) [sn, cs] = [cs, sn];  // quadrant
      if (q >= 2) sn = -sn;
      if (q === 1 || q === 2) cs = -cs;
      return [sn + 0.0, cs + 0.0];
    }
    function channels(conv, n, k) {  // the output channels of band k's sin and cos (one coordinate)
      const [order, at, keep] = D.orders[conv], first = keep && at === "first" ? 1 : 0;
      return order === "blocks" ? [first + k, first + n + k] : [first + 2 * k, first + 2 * k + 1];
    }
    const update = timed(() => {
      const conv = $("n-conv").value, n = Number($("n-bands").value), L = LAD[`${conv}|${n}`];
      $("n-band").max = String(n - 1);
      if (Number($("n-band").value) > n - 1) $("n-band").value = String(n - 1);
      const x = Number($("n-x-num").value), kb = Number($("n-band").value);
      $("n-bands-out").textContent = String(n); $("n-band-out").textContent = String(kb);
      const rows = [];
      for (let k = 0; k < n; k++) {
        const [s, c] = band(x, L, k), [js, jc] = channels(conv, n, k);
        rows.push(`<tr${k === kb ? ' class="chosen"' : ""}><th scope="row">${k}</th><td class="num">${js}, ${jc}</td>` +
          `<td class="num">${L.turns[k] ? "2π·" + L.turns[k] : L.lad.w0[k].toPrecision(8)}</td>` +
          `<td class="num" data-band="${k}" data-kind="sin" data-value="${num(s)}">${C.fixed(s, 8)}</td>` +
          `<td class="num" data-band="${k}" data-kind="cos" data-value="${num(c)}">${C.fixed(c, 8)}</td>` +
          `<td class="num" data-band="${k}" data-kind="sin32" data-value="${num(Math.fround(s))}">${Math.fround(s).toPrecision(8)}</td></tr>`);
      }
      $("n-body").innerHTML = rows.join("");
      const [s, c] = band(x, L, kb);
      $("n-facts").innerHTML = dd(`ω<sub>${kb}</sub>`, "n-omega", L.lad.w0[kb], String(L.lad.w0[kb])) +
        `<dt>taken</dt><dd id="n-how">${L.turns[kb] ? `in turns: x·${L.turns[kb]} mod 1, exactly` : "in radians: (x·ω) mod π/2"}</dd>` +
        dd(`sin(ω<sub>${kb}</sub>·x)`, "n-sin", s, String(s)) + dd(`cos(ω<sub>${kb}</sub>·x)`, "n-cos", c, String(c));
    });
    $("n-x").addEventListener("input", () => { $("n-x-num").value = String(Number($("n-x").value) / 1024); update(); });
    $("n-x-num").addEventListener("input", () => {
      const v = $("n-x-num").value;
      if (v === "" || !$("n-x-num").checkValidity() || !Number.isFinite(Number(v))) return;
      $("n-x").value = String(Math.max(-4096, Math.min(4096, Math.round(Number(v) * 1024))));
      update();
    });
    for (const id of ["n-conv", "n-bands", "n-band"]) $(id).addEventListener("input", update);
    update();
    return { data: D, update, band };
  }

  if ($("mrope-data")) api.mrope = mrope();
  if ($("alibi-data")) api.alibi = alibi();
  if ($("t5-data")) api.t5 = t5();
  if (XD) api.xpos = xpos();
  if ($("nerf-data")) api.nerf = nerf();
  api.exact2 = M;
  return api;
}
