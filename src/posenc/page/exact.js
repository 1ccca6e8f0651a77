/* posenc's exact path, in the page: sin and cos of p·ω_i, the same bits as posenc.encode.
 *
 * A line-by-line twin of src/posenc/exact/core.py (reduce_core, refold,
 * sincos_core) and of the quadrant step of exact/angles.py. Those use only
 * IEEE float64 additions, multiplications, rint and floor, with no libm and
 * no fused multiply-add; JavaScript numbers are IEEE float64 and never
 * contract a*b+c, so the same operations in the same order give the same
 * bits. The constants (π/2 in four words, the Taylor coefficients) and every
 * ladder (ω_i as three words) are written into the page by posenc itself
 * (posenc/page/data.py); nothing here is a typed-in number except
 * 2**52 in rint. tests/page/test_page_exact.py compares the bits with
 * posenc.encode and posenc.similarity over a grid of settings.
 */
"use strict";

function makeExact(K) {
  const SPLITTER = K.SPLITTER, TWO_OVER_PI = K.TWO_OVER_PI;
  const [P0, P1, P2, P3] = K.HALF_PI;
  const SIN_C = K.SIN_C, COS_C = K.COS_C;
  const TWO52 = 4503599627370496;  // 2**52: above it every double is an integer

  function split(a) {
    const t = SPLITTER * a;
    const hi = t - (t - a);
    return [hi, a - hi];
  }
  const [P0H, P0L] = split(P0);
  const [P1H, P1L] = split(P1);

  function twoProd(a, ah, al, b, bh, bl) {
    const p = a * b;
    const e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return [p, e];
  }

  function twoSum(a, b) {
    const s = a + b;
    const bb = s - a;
    return [s, (a - (s - bb)) + (b - bb)];
  }

  // numpy.rint: round half to even, sign kept (adding 2**52 rounds in the FPU's default mode)
  function rint(x) {
    const a = Math.abs(x);
    if (!(a < TWO52)) return x;
    const r = (a + TWO52) - TWO52;
    return (x < 0 || Object.is(x, -0)) ? -r : r;
  }

  function horner(c, z) {
    let acc = c[c.length - 1] * z + c[c.length - 2];
    for (let j = c.length - 3; j >= 0; j--) acc = acc * z + c[j];
    return acc;
  }

  // exact/core.py reduce_core: θ = (p + plo)·(w0 + w1 + w2) = k·π/2 + (x + y)
  function reduce(p, ph, pl, plo, qh, ql, hasLo, w0, w1, w2, w0h, w0l, w1h, w1l) {
    const [h0, l0] = twoProd(p, ph, pl, w0, w0h, w0l);
    const [h1, l1] = twoProd(p, ph, pl, w1, w1h, w1l);
    const k = rint(h0 * TWO_OVER_PI);
    const [kh, kl] = split(k);
    const [a0, b0] = twoProd(k, kh, kl, P0, P0H, P0L);
    const [a1, b1] = twoProd(k, kh, kl, P1, P1H, P1L);
    let [s, e] = twoSum(h0, -a0);
    let small = (l1 - b1) + (p * w2 - k * P2) - k * P3;
    let err;
    [s, err] = twoSum(s, l0); e = e + err;
    [s, err] = twoSum(s, -b0); e = e + err;
    [s, err] = twoSum(s, h1); e = e + err;
    [s, err] = twoSum(s, -a1); e = e + err;
    if (hasLo) {
      const [c0, d0] = twoProd(plo, qh, ql, w0, w0h, w0l);
      small = small + d0 + plo * w1;
      [s, err] = twoSum(s, c0); e = e + err;
    }
    const [x, y] = twoSum(s, e + small);
    return [k, x, y];
  }

  // exact/core.py refold: |x| > 0.8 folds back by a neighbouring multiple of π/2
  function refold(x, y) {
    const k2 = rint(x * TWO_OVER_PI);
    const [k2h, k2l] = split(k2);
    const [t0, u0] = twoProd(k2, k2h, k2l, P0, P0H, P0L);
    let err;
    [x, err] = twoSum(x, -t0);
    y = y + err - u0 - k2 * P1;
    return [k2, ...twoSum(x, y)];
  }

  // exact/core.py sincos_core: sin and cos of x + y, |x + y| <= 1
  function sincosCore(x, y) {
    const [xh, xl] = split(x);
    const [zh, zl] = twoProd(x, xh, xl, x, xh, xl);
    let poly = horner(SIN_C, zh);
    const hz = 0.5 * zh;
    const sinR = x + (x * zh * poly + y * (1.0 - hz));
    poly = horner(COS_C, zh);
    const w = 1.0 - hz;
    const cosR = w + ((((1.0 - w) - hz) - 0.5 * zl) + (zh * zh * poly - x * y));
    return [sinR, cosR];
  }

  /* A ladder ω_i = w0 + w1 + w2 (three Float64Arrays) with its Veltkamp halves. */
  function ladder(w0, w1, w2) {
    const n = w0.length;
    const w0h = new Float64Array(n), w0l = new Float64Array(n);
    const w1h = new Float64Array(n), w1l = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      [w0h[i], w0l[i]] = split(w0[i]);
      [w1h[i], w1l[i]] = split(w1[i]);
    }
    return { n, w0, w1, w2, w0h, w0l, w1h, w1l };
  }

  /* sin and cos of (p + plo)·ω_i for pairs i in [from, to), into sinOut/cosOut (exact/angles.py). */
  function sincos(p, lad, sinOut, cosOut, from = 0, to = lad.n, plo = null) {
    const [ph, pl] = split(p);
    const hasLo = plo !== null;
    const lo = hasLo ? plo : 0.0;
    const [qh, ql] = split(lo);
    for (let i = from; i < to; i++) {
      let [k, x, y] = reduce(p, ph, pl, lo, qh, ql, hasLo, lad.w0[i], lad.w1[i], lad.w2[i],
                             lad.w0h[i], lad.w0l[i], lad.w1h[i], lad.w1l[i]);
      if (Math.abs(x) > 0.8) {
        const [k2, x2, y2] = refold(x, y);
        k = k + k2; x = x2; y = y2;
      }
      const [sinR, cosR] = sincosCore(x, y);
      const q = k - 4.0 * Math.floor(k * 0.25);
      let s = (q === 1 || q === 3) ? cosR : sinR;
      let c = (q === 1 || q === 3) ? sinR : cosR;
      if (q >= 2) s = -s;
      if (q === 1 || q === 2) c = -c;
      sinOut[i - from] = s;
      cosOut[i - from] = c;
    }
  }

  /* numpy's pairwise summation (np.add.reduce over a contiguous float64 row). */
  function pairwiseSum(a, lo, n) {
    if (n < 8) {
      let res = -0.0;
      for (let i = 0; i < n; i++) res += a[lo + i];
      return res;
    }
    if (n <= 128) {
      const r = [];
      for (let j = 0; j < 8; j++) r.push(a[lo + j]);
      let i = 8;
      for (; i < n - (n % 8); i += 8) for (let j = 0; j < 8; j++) r[j] += a[lo + i + j];
      let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
      for (; i < n; i++) res += a[lo + i];
      return res;
    }
    let n2 = Math.floor(n / 2);
    n2 -= n2 % 8;
    return pairwiseSum(a, lo, n2) + pairwiseSum(a, lo + n2, n - n2);
  }

  /* PE(p)·PE(p + delta) = Σ_i cos(ω_i·|delta|), as posenc.similarity forms and sums it. */
  function kernel(delta, lad, scratchS, scratchC) {
    const off = Math.abs(delta);
    sincos(off, lad, scratchS, scratchC, 0, lad.n, 0.0);
    return pairwiseSum(scratchC, 0, lad.n);
  }

  return { split, rint, ladder, sincos, pairwiseSum, kernel };
}
