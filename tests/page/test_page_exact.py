"""The explorer computes in the page; here is the proof that it computes posenc's numbers, bit for bit.

Over every (d_model, base) its sliders reach and a grid of positions (the
small ones, the seed's, large integers up to 10**9 and beyond, fractions,
negatives), the page's sin/cos equal ``posenc.encode`` in every bit, its
kernel equals ``posenc.similarity``, its context facts equal
``posenc.context_report``, and its number formatting equals posenc's
(``posenc.cli._base.fixed``, i.e. Python's ``format``), ties and signed
zeros included. Spot values are also checked against mpmath.
"""

from __future__ import annotations

import base64
import math
from decimal import Decimal

import mpmath
import numpy as np
import pytest

import posenc
from posenc.cli._base import fixed
from posenc.page.data import BASES, CONTEXTS, D_MODELS, MAX_DELTA

_RNG = np.random.default_rng(20240614)
POSITIONS = np.concatenate([
    np.arange(0, 64),
    [1000, 1005, 9999, 10000, 99991, 10**6 - 1, 10**6, 123456789, 10**9 - 1, 10**9, 2**31 - 1, 2.0**40 + 3],
    [0.25, 0.5, 2 * math.pi, 12345.5, 1e-3, 3.0000001],
    [-1, -7, -50, -1000.5],
    _RNG.integers(0, 10**9, 24),
    _RNG.uniform(0, 1e4, 12),
]).astype(np.float64)

_GRID_JS = """([bi, di, ps]) => {
  const P = window.posencPage, L = P.ladders[bi][di];
  const n = L.lad.n, out = new Float64Array(ps.length * 2 * n);
  ps.forEach((p, r) => out.set(P.pe(p, L), r * 2 * n));
  const bytes = new Uint8Array(out.buffer);
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
  return btoa(text);
}"""


def _floats(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f8")


def test_sin_cos_equal_posenc_bit_for_bit(opened):
    checked = 0
    for bi, b in enumerate(BASES):
        for di, d in enumerate(D_MODELS):
            got = _floats(opened.page.evaluate(_GRID_JS, [bi, di, POSITIONS.tolist()])).reshape(len(POSITIONS), d)
            want = posenc.encode(POSITIONS, d, base=b, dtype=np.float64)
            differ = got.view(np.int64) != want.view(np.int64)
            assert not differ.any(), (b, d, POSITIONS[np.nonzero(differ)[0][:5]])
            checked += got.size
    assert checked == len(POSITIONS) * len(BASES) * sum(D_MODELS)


def test_kernel_equals_posenc_similarity(opened):
    deltas = np.arange(-MAX_DELTA, MAX_DELTA + 1)
    for bi, b in enumerate(BASES):
        for di, d in enumerate(D_MODELS):
            got = np.array(opened.page.evaluate(
                "([bi, di]) => Array.from(window.posencPage.kernelOf(window.posencPage.ladders[bi][di]))", [bi, di]))
            want = posenc.similarity(1000, 1000 + deltas, d, base=b)
            assert np.array_equal(got, want), (b, d)


def test_context_facts_equal_posenc_context_report(opened):
    some = [BASES.index(b) for b in (100.0, 10000.0, 500000.0, 1e6)]  # every width and context; min_base: all
    got = opened.page.evaluate("""(some) => { const P = window.posencPage, out = [];
        some.forEach(bi => P.data.d_models.forEach((_, di) => P.data.contexts.forEach((_, ci) =>
          out.push(P.contextFacts(bi, di, ci))))); return out; }""", some)
    want = [(BASES[bi], d, c) for bi in some for d in D_MODELS for c in CONTEXTS]
    assert len(got) == len(want)
    for g, (b, d, c) in zip(got, want, strict=True):
        r = posenc.context_report(c, d, b)
        assert (g["lmax"], g["loops"], g["wrapped"], g["wraps"]) == (
            r.max_wavelength, float(r.loops[-1]), r.wrapped_channels, r.wraps), (b, d, c)
        assert g["minBase"] == r.min_base


TRICKY = [0.0078125, -0.0078125, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, -0.0, 0.0, -1e-9, 1e-9, 1e-300, 0.9999999999,
          -0.99999999995, 123456.7890125, 60611.47, 617.117, 1.0, -1.0, 255.99875, 2.0**-30, 5e-7, -5e-7]


def test_number_formatting_equals_posenc(opened):
    values = TRICKY + _RNG.normal(0, 1, 400).tolist() + (_RNG.normal(0, 1, 200) * 1e4).tolist()
    for digits in (0, 1, 2, 4, 6, 8):
        got = opened.page.evaluate("([vs, f]) => vs.map(v => window.posencPage.fixed(v, f))", [values, digits])
        # -0.0 does not survive JSON; the page's own -0.0 is asked for separately
        assert got == [fixed(v, digits) for v in values], digits
        assert opened.page.evaluate("(f) => window.posencPage.fixed(-0, f)", digits) == fixed(-0.0, digits)


@pytest.mark.parametrize(("pos", "d", "base"),
                         [(10**9, 512, 10000.0), (123456789, 64, 500000.0), (2**31 - 1, 8, 100.0)])
def test_large_positions_against_mpmath(opened, pos, d, base):
    """The digits the page shows at large positions are the true ones (mpmath, 50 digits), not naive float64's."""
    bi, di = BASES.index(base), D_MODELS.index(d)
    got = _floats(opened.page.evaluate(_GRID_JS, [bi, di, [float(pos)]]))
    with mpmath.workdps(50):
        for j in (0, 1, 2, 3, d - 2, d - 1):
            i = j // 2
            angle = mpmath.mpf(pos) * mpmath.power(mpmath.mpf(base), -mpmath.mpf(2 * i) / d)
            true = mpmath.sin(angle) if j % 2 == 0 else mpmath.cos(angle)
            assert abs(got[j] - float(true)) <= 2.0**-52, (j, got[j], true)
            assert fixed(got[j], 8) == fixed(Decimal(mpmath.nstr(true, 45)), 8), (j, got[j], true)
