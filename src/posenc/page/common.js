/* The family pages' shared script: number formatting, the float16/bfloat16/float32 roundings of the
 * precision view, and the self-test that runs when a page opens.
 *
 * Roundings are exact: a double is scaled by a power of two (exact), rounded half to even with
 * exact.js's rint, and scaled back, so the result is the IEEE rounding NumPy's astype(float16) and
 * torch's .to(bfloat16) of a float32 make. Math.fround is the IEEE float32 rounding itself.
 */
"use strict";

function makeCommon(EX) {
  /* posenc's float64 words as a page's data holds them (base64, little-endian): take(n) reads the next n. */
  function float64Reader(b64) {
    const text = atob(b64), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const view = new DataView(bytes.buffer);
    let at = 0;
    return (n) => {
      const a = new Float64Array(n);
      for (let i = 0; i < n; i++) a[i] = view.getFloat64(8 * (at + i), true);
      at += n;
      return a;
    };
  }

  /* Python's format(x, ".{f}f") with no sign on zero (posenc's CLI `fixed`). */
  function fixed(x, f) {
    const a = Math.abs(x);
    let s = a.toFixed(f);
    // toFixed rounds a tie away from zero; Python rounds it to even. A double's decimal
    // expansion is finite, so a tie shows as "…5" followed by zeros only.
    const exact = a.toFixed(100);
    const cut = exact.indexOf(".") + 1 + f;
    if (/^50*$/.test(exact.slice(cut))) {
      const down = exact.slice(0, f ? cut : cut - 1);
      if (Number(s.slice(-1)) % 2 === 1) s = down;
    }
    const zero = /^[0.]*$/.test(s);
    return (x < 0 && !zero) ? "-" + s : s;
  }

  function expo(x) {  // the binary exponent e with 2**e <= |x| < 2**(e+1), |x| > 0
    const a = Math.abs(x);
    let e = Math.floor(Math.log2(a));
    if (2 ** e > a) e -= 1;
    if (2 ** (e + 1) <= a) e += 1;
    return e;
  }

  /* x rounded to a format with `mant` fraction bits and smallest normal exponent `emin` (half to even). */
  function roundTo(x, mant, emin) {
    if (x === 0 || !Number.isFinite(x)) return x;
    const e = Math.max(expo(x), emin);
    const q = 2 ** (e - mant);
    return EX.rint(x / q) * q;
  }

  const f16 = (x) => roundTo(x, 10, -14);             // IEEE half, straight from the double
  const bf16 = (x) => roundTo(Math.fround(x), 7, -126);  // bfloat16 of the float32 table

  function sci(x) {  // 3 significant digits, as the tables show errors
    return x === 0 ? "0" : x.toExponential(2).replace("+", "");
  }

  /* The self-test: every [data-check] on the page, each a function of the page's own script. */
  function selfTest(checks) {
    const list = document.getElementById("selftest-list");
    if (!list) return;
    let good = 0;
    const rows = [];
    for (const [claim, fn] of checks) {
      let ok = false, detail = "";
      try { [ok, detail] = fn(); } catch (e) { detail = String(e); }
      if (ok) good++;
      rows.push(`<li class="check ${ok ? "passed" : "failed"}"><span class="mark" aria-hidden="true">` +
        `${ok ? "✓" : "✗"}</span> <span class="claim">${claim}</span> <span class="state">` +
        `${ok ? "passed" : "failed"}</span> <span class="detail">${detail}</span></li>`);
    }
    list.innerHTML = rows.join("");
    const sum = document.getElementById("selftest-summary");
    sum.textContent = `${good} of ${checks.length} checks passed in this browser.`;
    sum.className = "summary " + (good === checks.length ? "good" : "bad");
    document.body.dataset.selftest = good === checks.length ? "green" : "red";
  }

  /* The printed digits of every worked case are its double, formatted here again. */
  function digitsCheck() {
    const cells = [...document.querySelectorAll("td[data-value][data-digits]")];
    const norm = (t) => (/^-[0.]*$/.test(t) ? t.slice(1) : t);  // Python writes -0.00, posenc's fixed 0.00
    const bad = cells.filter((td) => fixed(Number(td.dataset.value), Number(td.dataset.digits)) !== norm(td.textContent));
    return [cells.length > 0 && bad.length === 0, `${cells.length - bad.length} of ${cells.length} numbers`];
  }

  function casesCheck() {
    const all = document.querySelectorAll("li.check[data-built]"), passed =
      document.querySelectorAll("li.check.passed[data-built]");
    return [all.length > 0 && all.length === passed.length, `${passed.length} of ${all.length} claims`];
  }

  /* The precision view at one position: the largest error over the pairs of (cos, sin) of the float32
   * angle, of a bfloat16 table and of a float16 table, against the exact value (posenc/parity/precision.py). */
  const ONE = EX.ladder(Float64Array.of(1), Float64Array.of(0), Float64Array.of(0));  // ω = 1: sin/cos of an angle
  function precisionAt(p, L) {
    const n = L.n, s = new Float64Array(n), c = new Float64Array(n), s1 = new Float64Array(1), c1 = new Float64Array(1);
    EX.sincos(p, L.lad, s, c);
    const p32 = Math.fround(p);
    let f32 = 0, b16 = 0, h16 = 0;
    for (let i = 0; i < n; i++) {
      const a = Math.fround(p32 * Math.fround(L.lad.w0[i]));  // transformers: (inv_freq.float() @ position.float())
      EX.sincos(a, ONE, s1, c1, 0, 1);
      f32 = Math.max(f32, Math.abs(c1[0] - c[i]), Math.abs(s1[0] - s[i]));
      b16 = Math.max(b16, Math.abs(bf16(c[i]) - c[i]), Math.abs(bf16(s[i]) - s[i]));
      h16 = Math.max(h16, Math.abs(f16(c[i]) - c[i]), Math.abs(f16(s[i]) - s[i]));
    }
    return { f32, bf16: b16, f16: h16 };
  }

  return { fixed, float64Reader, f16, bf16, sci, selfTest, digitsCheck, casesCheck, expo, precisionAt };
}
