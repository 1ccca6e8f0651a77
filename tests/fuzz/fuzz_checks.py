"""The checks of the API fuzz (tests/fuzz/test_fuzz_api.py): each result against its formula.

Every check takes the result and the keyword arguments that produced it and
asserts what the documentation promises, from an mpmath reference or an
identity written here (never from the code under test).
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import pytest

import posenc
from posenc import PosEncError, conventions
from reference import mrope_reference, omega, sin_cos, ulp_error

mpmath.mp.dps = 60

def _dt(kw: dict[str, Any]) -> np.dtype:
    return np.dtype(kw.get("dtype", np.float32))


def _bound(dt: np.dtype) -> float:
    return 4.0 if dt == np.float64 else 1.0


def _check_encode(out: np.ndarray, kw: dict[str, Any]) -> None:
    p = np.asarray(kw["positions"], dtype=np.float64)
    d, base = int(kw["d_model"]), float(kw.get("base", 10000.0))
    dt = _dt(kw)
    assert out.shape == (*p.shape, d) and out.dtype == dt
    assert np.isfinite(out).all() and (np.abs(out) <= 1).all()
    if p.size == 0 or kw.get("convention") is not None:  # a preset's formulas: tests/sinusoidal/test_conventions.py
        return
    flat, rows = p.reshape(-1), out.reshape(-1, d)
    j = int(np.argmax(np.abs(flat)))  # the hardest position
    split = kw.get("layout", "interleaved") == "split"
    if abs(flat[j]) >= 2**31:  # the 1-ulp promise stops at 2**31; beyond, bounded and on the unit circle
        row = rows[j].astype(np.float64)
        s, c = (row[: d // 2], row[d // 2 :]) if split else (row[0::2], row[1::2])
        assert np.allclose(s**2 + c**2, 1.0, atol=1e-2)
        return
    for i in {0, d // 2 - 1}:
        s, c = sin_cos(flat[j], omega(d, base, i))
        si, ci = (i, d // 2 + i) if split else (2 * i, 2 * i + 1)
        assert ulp_error(rows[j, si], s, dt) <= _bound(dt), (flat[j], i)
        assert ulp_error(rows[j, ci], c, dt) <= _bound(dt), (flat[j], i)


def _check_table(out: np.ndarray, kw: dict[str, Any]) -> None:
    n, start = int(kw["length"]), int(kw.get("start", 0))
    args = {k: v for k, v in kw.items() if k not in ("length", "start")}
    want = posenc.encode(np.arange(start, start + n), **args)
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_array_equal(out, want)  # a table is the encoding of its positions, bit for bit


def _check_frequencies(w: np.ndarray, kw: dict[str, Any]) -> None:
    d, base = int(kw["d_model"]), float(kw.get("base", 10000.0))
    assert w.shape == (d // 2,) and w[0] == 1.0
    for i in {0, d // 2 - 1}:
        assert w[i] == float(omega(d, base, i))  # correctly rounded


def _check_wavelengths(lam: np.ndarray, kw: dict[str, Any]) -> None:
    d, base = int(kw["d_model"]), float(kw.get("base", 10000.0))
    assert lam.shape == (d // 2,)
    for i in {0, d // 2 - 1}:
        assert lam[i] == float(2 * mpmath.pi / omega(d, base, i))


def _check_max_wavelength(lam: float, kw: dict[str, Any]) -> None:
    d, base = int(kw["d_model"]), float(kw.get("base", 10000.0))
    assert lam == float(2 * mpmath.pi / omega(d, base, d // 2 - 1))


def _lam_max(d: int, b: float) -> Any:
    return 2 * mpmath.pi * mpmath.power(mpmath.mpf(b), mpmath.mpf(d - 2) / d)


def _check_min_base(b: float, kw: dict[str, Any]) -> None:
    c, d = float(kw["context"]), int(kw["d_model"])
    if c <= 2 * math.pi:
        assert b == 1.0
    elif b != math.inf:
        assert _lam_max(d, b) >= c  # it suffices ...
        assert _lam_max(d, math.nextafter(b, 0)) < c  # ... and the float below does not


def _check_context_report(r: Any, kw: dict[str, Any]) -> None:
    c, d = float(kw["context"]), int(kw["d_model"])
    assert r.loops.shape == (d // 2,) and np.isfinite(r.loops).all()
    assert r.wraps == bool(r.loops[-1] > 1.0) and r.wrapped_channels == int((r.loops > 1.0).sum())
    assert r.max_wavelength == float(_lam_max(d, float(kw.get("base", 10000.0))))
    assert r.min_base >= 1.0 and r.context == c


def _check_shift_matrix(t: np.ndarray, kw: dict[str, Any]) -> None:
    d = int(kw["d_model"])
    assert t.shape == (d, d) and t.dtype == np.dtype(kw.get("dtype", np.float64))
    t64 = t.astype(np.float64)
    tol = 1e-2 if t.dtype == np.float16 else 1e-6
    np.testing.assert_allclose(t64 @ t64.T, np.eye(d), atol=tol)  # a rotation


def _check_shift(out: np.ndarray, kw: dict[str, Any]) -> None:
    e = np.asarray(kw["encoding"])
    assert out.shape == e.shape and out.dtype == e.dtype
    if e.size and np.isfinite(e).all() and np.abs(e.astype(np.float64)).max() < 1e150:
        n = e.shape[-1] // 2
        lay = kw.get("layout", "interleaved")
        idx = (np.arange(0, 2 * n, 2), np.arange(1, 2 * n, 2)) if lay == "interleaved" else (
            np.arange(n), np.arange(n, 2 * n))
        norm = lambda a: np.hypot(a[..., idx[0]].astype(np.float64), a[..., idx[1]].astype(np.float64))  # noqa: E731
        tol = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-6}.get(e.dtype, 1e-12)
        big = np.abs(e.astype(np.float64)).max()
        np.testing.assert_allclose(norm(out), norm(e), rtol=tol, atol=tol * (big + 1e-300))


def _check_similarity(out: Any, kw: dict[str, Any]) -> None:
    d = int(kw["d_model"])
    a = np.asarray(out)
    assert np.isfinite(a).all() and (np.abs(a) <= (1 if kw.get("per_channel") else d / 2) + 1e-9).all()
    swapped = posenc.similarity(kw["q"], kw["p"], **{k: v for k, v in kw.items() if k not in ("p", "q")})
    np.testing.assert_array_equal(a, swapped)  # cos is even


def _check_aliasing(a: Any, kw: dict[str, Any]) -> None:
    d = int(kw["d_model"])
    assert a.diff.shape == (d,) and a.pair_distance.shape == (d // 2,)
    assert 0 <= a.distance <= math.sqrt(2 * d) + 1e-9
    assert (a.coincide == (a.diff <= a.atol)).all()


def _check_min_separation(s: Any, kw: dict[str, Any]) -> None:
    n, d = int(kw["n"]), int(kw["d_model"])
    assert 1 <= s.offset <= n - 1 and 0 <= s.distance <= math.sqrt(2 * d)
    k = s.offset
    want = math.sqrt(sum(4 * float(mpmath.sin(omega(d, float(kw.get("base", 1e4)), i) * k / 2)) ** 2
                         for i in range(d // 2)))
    assert s.distance == pytest.approx(want, rel=1e-9, abs=1e-12)


def _check_freqs(f: Any, kw: dict[str, Any]) -> None:
    r = int(kw.get("rotary_dim") or kw["head_dim"])
    assert f.inv_freq.shape == (r // 2,) and np.isfinite(f.inv_freq).all() and (f.inv_freq > 0).all()
    assert 0 < f.attention_factor <= 2**15 and f.base > 1
    if kw.get("scaling") is None:
        b = float(kw.get("base", 10000.0))
        assert f.inv_freq[-1] == float(omega(r, b, r // 2 - 1))


def _check_rope_cos_sin(out: Any, kw: dict[str, Any]) -> None:
    cos, sin = out
    p = np.asarray(kw["positions"], dtype=np.float64)
    r = int(kw.get("rotary_dim") or kw["head_dim"])
    assert cos.shape == sin.shape == (*p.shape, r // 2) and cos.dtype == _dt(kw)
    assert np.isfinite(cos).all() and np.isfinite(sin).all()
    f = posenc.rope_frequencies(kw["head_dim"], base=kw.get("base", 10000.0), scaling=kw.get("scaling"),
                                rotary_dim=kw.get("rotary_dim"), seq_len=kw.get("seq_len") or (
                                    None if p.size == 0 or kw.get("scaling") is None
                                    else max(1, int(np.floor(p.max())) + 1)))
    if p.size and np.abs(p).max() < 2**31:
        j = int(np.argmax(np.abs(p.reshape(-1))))
        pj = p.reshape(-1)[j]
        for i in {0, r // 2 - 1}:
            w = mpmath.mpf(f.ladder.w0[i]) + mpmath.mpf(f.ladder.w1[i]) + mpmath.mpf(f.ladder.w2[i])
            s_ref, c_ref = sin_cos(pj, w)
            af = f.attention_factor
            tol = 2.0 if af != 1.0 else _bound(_dt(kw))  # af multiplies in float64 before the one rounding
            assert ulp_error(cos.reshape(-1, r // 2)[j, i], c_ref * af, _dt(kw)) <= tol
            assert ulp_error(sin.reshape(-1, r // 2)[j, i], s_ref * af, _dt(kw)) <= tol


def _check_rope_table(out: np.ndarray, kw: dict[str, Any]) -> None:
    f, start, n = kw["freqs"], int(kw["start"]), int(kw["length"])
    dt = np.dtype(kw.get("dtype", np.float32))
    assert out.shape == (n, 2, f.rotary_dim // 2) and out.dtype == dt
    cos, sin = posenc.rope_cos_sin(np.arange(start, start + n), f.head_dim, base=10000.0, scaling=None,
                                   rotary_dim=f.rotary_dim, dtype=dt)
    np.testing.assert_array_equal(out[:, 0], cos)
    np.testing.assert_array_equal(out[:, 1], sin)


def _check_apply_rope(out: np.ndarray, kw: dict[str, Any]) -> None:
    x = np.asarray(kw["x"])
    assert out.shape == x.shape and out.dtype == x.dtype
    spec = kw.get("spec")
    if spec is not None:  # the spec holds the settings (the others were left at their defaults)
        kw = {**kw, "rotary_dim": spec.rotary_dim, "layout": spec.layout}
    r = int(kw.get("rotary_dim") or x.shape[-1])
    np.testing.assert_array_equal(out[..., r:], x[..., r:])  # the tail, bit for bit
    if kw.get("xpos") is None and np.isfinite(x).all() and np.abs(x).max(initial=0) < 1e3:
        n = r // 2
        lay = kw.get("layout", "half")
        a, b = ((slice(0, n), slice(n, r)) if lay == "half" else (slice(0, r, 2), slice(1, r, 2)))
        norm = lambda v: np.hypot(v[..., a].astype(np.float64), v[..., b].astype(np.float64))  # noqa: E731
        tol = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6}.get(x.dtype, 1e-12)
        np.testing.assert_allclose(norm(out), norm(x), rtol=tol, atol=tol * 1e3)


def _check_rope_context(r: Any, kw: dict[str, Any]) -> None:
    assert r.loops.shape == r.wavelengths.shape == (r.rotary_dim // 2,)
    assert np.isfinite(r.loops).all() and r.wrapped_channels == int((r.loops > 1).sum())
    assert r.wraps == bool(r.loops.min() > 1.0)


def _check_permutation(idx: np.ndarray, kw: dict[str, Any]) -> None:
    h, nh = int(kw["head_dim"]), int(kw["n_heads"])
    assert sorted(idx.tolist()) == list(range(h * nh))


def _check_permute_weights(out: Any, kw: dict[str, Any]) -> None:
    w = np.asarray(kw["w"])
    assert out.shape == w.shape
    rows = lambda a: sorted(map(repr, np.atleast_2d(np.asarray(a).T).T.tolist()))  # noqa: E731  (complex sorts too)
    assert rows(out) == rows(w)  # the same rows, reordered


def _check_hf(cfg: Any, kw: dict[str, Any]) -> None:
    if cfg is None:  # a NoPE layer: only with layer=
        assert kw.get("layer") is not None
        return
    assert 2 <= cfg.rotary_dim <= cfg.head_dim and cfg.rotary_dim % 2 == 0 and cfg.base > 1
    posenc.rope_frequencies(cfg.head_dim, **cfg.kwargs())  # what it read is usable (or refused by name)


def _check_scaling(s: Any, kw: dict[str, Any]) -> None:
    assert hash(s) == hash(type(s)(**kw))  # frozen, and the fields read back
    try:
        f = posenc.rope_frequencies(64, scaling=s, seq_len=8192)
    except PosEncError as exc:  # the combination with head_dim 64 may be out of range: named
        assert type(s).__name__ in str(exc) or "rotary_dim" in str(exc)
        return
    assert np.isfinite(f.inv_freq).all() and 0 < f.attention_factor <= 2**15


def _check_convention(c: Any, kw: dict[str, Any]) -> None:
    try:
        out = c.encode([0, 1, 1000], 6, dtype=np.float64)
    except PosEncError as exc:  # a preset fine in itself, whose frequencies or origin put these positions out
        assert "positions" in str(exc), str(exc)
        return
    assert out.shape == (3, 6) and np.isfinite(out).all() and (np.abs(out) <= 1).all()


def _check_register_convention(result: Any, kw: dict[str, Any]) -> None:
    """Registered: encode(..., convention=name) gives the preset's own encoding, bit for bit."""
    import posenc

    assert result is None
    preset = kw["preset"] if isinstance(kw["preset"], conventions.Convention) else kw["preset"]()
    want = preset.encode([0, 1, 7], 6, dtype=np.float64)
    assert np.array_equal(posenc.encode([0, 1, 7], 6, dtype=np.float64, convention=kw["name"]), want)


def _check_get(c: Any, kw: dict[str, Any]) -> None:
    assert isinstance(c, conventions.Convention)


def _check_alibi_slopes(m: np.ndarray, kw: dict[str, Any]) -> None:
    n = int(kw["n_heads"])
    assert m.shape == (n,) and m.dtype == np.float64 and np.isfinite(m).all() and (m > 0).all()
    if kw.get("convention", "press") in ("press", "bloom") and n & (n - 1) == 0:  # the paper: 2**(-8h/n)
        # correctly rounded, so equal to mpmath's (not to libm's pow, whose last bit varies between CPUs)
        assert m.tolist() == [float(mpmath.power(2, mpmath.mpf(-8 * h) / n)) for h in range(1, n + 1)]


def _check_alibi_bias(b: np.ndarray, kw: dict[str, Any]) -> None:
    q, k, h = int(kw["q_len"]), int(kw["k_len"]), int(kw["n_heads"])
    assert b.shape[-3:] == (h, q, k) and b.dtype == _dt(kw)
    if kw.get("causal", True) and kw.get("positions") is None:
        off = int(kw.get("offset", 0))
        later = np.arange(k)[None, :] > (off + np.arange(q))[:, None]  # keys after their query
        assert np.isneginf(b[..., later]).all() and np.isfinite(b[..., ~later]).all()
    else:
        assert not np.isnan(b).any()


def _t5_reference(r: np.ndarray, bidirectional: bool, buckets: int, max_distance: int) -> np.ndarray:
    """HF ``T5Attention._relative_position_bucket``, written here in NumPy float32 from its formula."""
    r = r.astype(np.int64)
    out = np.zeros_like(r)
    if bidirectional:
        buckets //= 2
        out += (r > 0) * buckets
        r = np.abs(r)
    else:
        r = -np.minimum(r, 0)
    exact = buckets // 2
    with np.errstate(divide="ignore"):
        large = exact + (np.log(r.astype(np.float32) / np.float32(exact)) / np.float32(math.log(max_distance / exact))
                         * np.float32(buckets - exact))
    large = np.minimum(np.where(r < exact, 0, large).astype(np.int64), buckets - 1)
    return out + np.where(r < exact, r, large)


def _check_t5_bucket(b: np.ndarray, kw: dict[str, Any]) -> None:
    r = np.asarray(kw["relative_position"])
    spec = kw.get("spec")
    if spec is not None:  # the spec holds the settings (the others were left at their defaults)
        kw = {**kw, "bidirectional": spec.bidirectional, "num_buckets": spec.num_buckets,
              "max_distance": spec.max_distance}
    nb = int(kw.get("num_buckets", 32))
    assert b.shape == r.shape and b.dtype == np.int64 and ((b >= 0) & (b < nb)).all()
    if r.size and np.abs(r.astype(np.float64)).max() < 2**24:  # float32 holds the distance exactly
        want = _t5_reference(r, bool(kw.get("bidirectional", True)), nb, int(kw.get("max_distance", 128)))
        assert (b != want).sum() <= max(1, b.size // 1000), (r[b != want], b[b != want], want[b != want])


def _check_t5_bias(out: np.ndarray, kw: dict[str, Any]) -> None:
    w = np.asarray(kw["weights"])
    q, k = int(kw["q_len"]), int(kw["k_len"])
    qp = np.asarray(kw["q_positions"]) if kw.get("q_positions") is not None else int(kw.get("offset", 0)) + np.arange(q)
    kp = np.asarray(kw["k_positions"]) if kw.get("k_positions") is not None else np.arange(k)
    assert out.shape == (w.shape[1], q, k) and out.dtype == w.dtype
    rel = kp.astype(np.int64)[None, :] - qp.astype(np.int64)[:, None]
    if np.abs(rel).max() < 2**24:  # float32 holds the distance exactly: HF's formula, written in the test
        want = _t5_reference(rel, bool(kw.get("bidirectional", True)), w.shape[0], int(kw.get("max_distance", 128)))
        # the platform's float32 log may tip a bucket where the exact quotient is an integer (_check_t5_bucket)
        wrong = ~(out == np.moveaxis(w[want], -1, 0)).all(axis=0)
        assert wrong.sum() <= max(1, wrong.size // 1000), (rel[wrong], out[:, wrong])


def _check_t5_edges(e: np.ndarray, kw: dict[str, Any]) -> None:
    nb = int(kw.get("num_buckets", 32))
    assert e.shape == ((nb // 2,) if kw.get("bidirectional", True) else (nb,)) and e[0] == 0
    used = e[e >= 0]
    assert (np.diff(used) > 0).all()
    got = posenc.t5_bucket(-used, **kw)  # a distance at an edge falls in that edge's bucket
    np.testing.assert_array_equal(got, np.flatnonzero(e >= 0))


def _zeta(r: int, xp: Any) -> np.ndarray:
    return (np.arange(0, r, 2) / r + xp.gamma) / (1 + xp.gamma)


def _check_xpos_decay(z: np.ndarray, kw: dict[str, Any]) -> None:
    off = np.asarray(kw["offsets"], dtype=np.float64)
    r, xp = int(kw["rotary_dim"]), kw.get("xpos") or posenc.XPos()
    assert z.shape == (*off.shape, r // 2) and (z >= 0).all() and not np.isnan(z).any()
    want = _zeta(r, xp) ** (off[..., None] / xp.scale_base)
    np.testing.assert_allclose(z, want, rtol=1e-12 * (1 + np.abs(off[..., None]).max(initial=0)))


def _check_xpos_scale(z: np.ndarray, kw: dict[str, Any]) -> None:
    p = np.asarray(kw["positions"], dtype=np.float64)
    r = int(kw["rotary_dim"])
    assert z.shape == (*p.shape, r // 2) and z.dtype == np.dtype(kw.get("dtype", np.float64))
    assert (z >= 0).all() and np.isfinite(z).all()


def _check_grid(g: np.ndarray, kw: dict[str, Any]) -> None:
    sizes = [int(n) for n in kw["size"]]
    assert g.shape == (math.prod(sizes), len(sizes))
    np.testing.assert_array_equal(g, np.indices(sizes).reshape(len(sizes), -1).T)


def _check_encode_nd(out: np.ndarray, kw: dict[str, Any]) -> None:
    c = np.asarray(kw["coords"], dtype=np.float64)
    d = int(kw["d_model"])
    extra = int(kw.get("cls_token", False))  # zero rows before the points
    shape = (*c.shape[:-1], d) if not extra else (*c.shape[:-2], extra + c.shape[-2], d)
    assert out.shape == shape and out.dtype == _dt(kw)
    assert np.isfinite(out).all() and (np.abs(out) <= 1).all()
    if extra:
        assert not out[..., :extra, :].any()


def _check_grid_report(r: Any, kw: dict[str, Any]) -> None:
    assert len(r.axes) == len(kw["sizes"]) and r.wraps == any(a.wraps for a in r.axes)
    for a in r.axes:
        assert np.isfinite(a.omega).all() and np.isfinite(a.loops).all()


def _check_grid_similarity(s: np.ndarray, kw: dict[str, Any]) -> None:
    assert s.shape == tuple(int(n) for n in kw["sizes"])
    assert np.isfinite(s).all() and (np.abs(s) <= 1 + 1e-12).all()
    assert s[tuple(int(i) for i in kw["patch"])] == pytest.approx(1.0, abs=1e-12)


def _check_sections(sec: Any, kw: dict[str, Any]) -> None:
    axes = sec.pair_axes()
    assert sorted(np.bincount(axes, minlength=len(sec.sizes)).tolist()) == sorted(sec.sizes)


def _check_xpos(xp: Any, kw: dict[str, Any]) -> None:
    z = xp.zeta(8)
    assert np.isfinite(z).all() and (z > 0).all()


def _check_mrope_text(seg: Any, kw: dict[str, Any]) -> None:
    assert type(seg.n) is int and seg.n == kw["n"] >= 0 and seg.tokens == seg.n


def _check_vision_grid(g: Any, kw: dict[str, Any]) -> None:
    assert all(type(v) is int and v >= 1 for v in (g.t, g.h, g.w)) and (g.t, g.h, g.w) == (kw["t"], kw["h"], kw["w"])
    assert g.time_step == float(np.float32(kw.get("time_step", 1.0))) >= 0 and g.tokens == g.t * g.h * g.w


def _check_from_processor(g: Any, kw: dict[str, Any]) -> None:
    m = int(kw.get("spatial_merge_size", 2))
    t, h, w = (int(v) for v in kw["grid_thw"])
    tps, spg = (1.0 if kw.get(k) is None else kw[k] for k in ("tokens_per_second", "second_per_grid"))  # None: default
    step = np.float32(tps) * np.float32(spg)
    assert (g.t, g.h * m, g.w * m) == (t, h, w) and g.time_step == float(step)


def _check_mrope_positions(out: Any, kw: dict[str, Any]) -> None:
    pos, delta = out
    assert pos.dtype == np.int64 and type(delta) is int
    assert (pos.tolist(), delta) == mrope_reference(kw["segments"], kw.get("advance", "max"))


def _check_mrope_decode(out: np.ndarray, kw: dict[str, Any]) -> None:
    base = np.asarray(kw["start"]).astype(np.int64) + np.asarray(kw["rope_delta"]).astype(np.int64)
    n = int(kw.get("count", 1))
    assert out.dtype == np.int64 and out.shape == (*base.shape, n, 3)
    np.testing.assert_array_equal(out, np.broadcast_to((base[..., None] + np.arange(n))[..., None], out.shape))
