"""Fuzz every public function with hostile arguments (issue 10): a correct result, or a PosEncError naming the value.

:data:`CASES` is the table: one :class:`Case` per public callable of
``posenc`` — its arguments as a hypothesis strategy of keyword dicts, and a
check of the result against the formula (an mpmath reference or an
identity written here). A new public function adds one row; the last test
fails until it does. Allowed outcomes, and nothing else:

- a result that passes its check;
- PosEncError whose message names an argument or shows its value;
- TypeError, only for a plainly wrong Python type where the signature has
  none to check (an object with no ``shape``; a config that is no mapping
  is a PosEncError).

Examples per function: the "posenc" hypothesis profile (tests/conftest.py,
POSENC_HYPOTHESIS_EXAMPLES, 60 by default); inputs are small or far beyond
any machine, so the whole file runs in seconds.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
import mpmath
import numpy as np
import pytest
from hypothesis import given

import posenc
from hostile import bases, d_models, dtypes, junk, layouts, lengths, names_the_value, positions, reals, small_ints
from posenc import PosEncError, conventions
from reference import omega, sin_cos, ulp_error

mpmath.mp.dps = 60


@dataclass(frozen=True)
class Case:
    """One public callable: how to call it with hostile arguments and how to judge what comes back."""

    call: Callable[..., Any]
    args: st.SearchStrategy[dict[str, Any]]
    check: Callable[[Any, dict[str, Any]], None]


def _kw(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword dicts; every field is sometimes left out (the default), except positional ones (ALL CAPS)."""
    required = {k.lower(): v for k, v in fields.items() if k.isupper()}
    optional = {k: v for k, v in fields.items() if not k.isupper()}
    return st.fixed_dictionaries(required, optional=optional)


# ---------------------------------------------------------------- checks: the result against the formula


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
    if p.size == 0:
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
    r = int(kw.get("rotary_dim") or x.shape[-1])
    np.testing.assert_array_equal(out[..., r:], x[..., r:])  # the tail, bit for bit
    if np.isfinite(x).all() and np.abs(x).max(initial=0) < 1e3:
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
    assert sorted(map(tuple, np.atleast_2d(out.T).T.tolist())) == sorted(map(tuple, np.atleast_2d(w.T).T.tolist()))


def _check_hf(cfg: Any, kw: dict[str, Any]) -> None:
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


def _check_get(c: Any, kw: dict[str, Any]) -> None:
    assert isinstance(c, conventions.Convention)


# ---------------------------------------------------------------- the table

_ENC = dict(base=bases(), layout=layouts(("interleaved", "split")), dtype=dtypes())
_ROPE = dict(base=bases(), rotary_dim=st.one_of(st.none(), d_models(32)),
             seq_len=st.one_of(st.none(), small_ints(1, 10**5), reals, junk))


def _scalings() -> st.SearchStrategy[Any]:
    """None, a scaling built from hostile fields (when it constructs), or something that is no scaling."""
    def build(cls: type, kw: dict[str, Any]) -> Any:
        try:
            return cls(**kw)
        except (PosEncError, TypeError):
            return None
    built = st.one_of(*(st.builds(build, st.just(c), a) for c, a in _SCALING_ARGS.items()))
    return st.one_of(st.none(), built, st.sampled_from(["yarn", 2.0, {"factor": 2}]), junk)


_FACTOR = st.one_of(st.floats(0.5, 64), st.sampled_from([1.0, 4.0, 8.0, 2.0**-52, 2.0**52]), reals, junk)
_LEN = st.one_of(small_ints(1, 1 << 17), st.sampled_from([0, 10**400, 2**53 + 1]), reals, junk)
_OPT_REAL = st.one_of(st.none(), st.floats(0, 4), reals)
_SCALING_ARGS: dict[type, st.SearchStrategy[dict[str, Any]]] = {
    posenc.Linear: _kw(FACTOR=_FACTOR),
    posenc.NTK: _kw(FACTOR=_FACTOR),
    posenc.DynamicNTK: _kw(FACTOR=_FACTOR, ORIGINAL_MAX=_LEN),
    posenc.YaRN: _kw(FACTOR=_FACTOR, ORIGINAL_MAX=_LEN, beta_fast=_FACTOR, beta_slow=_FACTOR, mscale=_OPT_REAL,
                     mscale_all_dim=_OPT_REAL, attention_factor=_OPT_REAL, truncate=st.one_of(st.booleans(), junk)),
    posenc.Llama3: _kw(FACTOR=_FACTOR, LOW_FREQ_FACTOR=_FACTOR, HIGH_FREQ_FACTOR=_FACTOR, ORIGINAL_MAX=_LEN),
    posenc.LongRoPE: _kw(SHORT_FACTOR=st.one_of(st.lists(_FACTOR, max_size=4), junk),
                         LONG_FACTOR=st.one_of(st.lists(_FACTOR, max_size=4), junk), ORIGINAL_MAX=_LEN,
                         attention_factor=_OPT_REAL, factor=st.one_of(st.none(), _FACTOR)),
}

_HF_KEYS = st.dictionaries(
    st.sampled_from(["rope_type", "type", "factor", "rope_theta", "original_max_position_embeddings", "beta_fast",
                     "mscale", "mscale_all_dim", "low_freq_factor", "high_freq_factor", "short_factor",
                     "long_factor", "attention_factor", "truncate", "partial_rotary_factor", "bogus", 3]),
    st.one_of(st.sampled_from(["linear", "dynamic", "yarn", "llama3", "longrope", "su", "default", ["linear"]]),
              _FACTOR, st.lists(_FACTOR, max_size=4), junk),
    max_size=6,
)
_HF = st.one_of(
    st.fixed_dictionaries({}, optional={
        "head_dim": d_models(256), "hidden_size": st.one_of(small_ints(1, 8192), reals),
        "num_attention_heads": st.one_of(small_ints(1, 64), reals), "rope_theta": bases(),
        "max_position_embeddings": _LEN, "partial_rotary_factor": st.one_of(st.floats(0, 1.5), reals),
        "rope_scaling": st.one_of(_HF_KEYS, junk), "rope_parameters": _HF_KEYS,
        "original_max_position_embeddings": _LEN,
    }),
    junk,
)

_FREQS = st.builds(lambda h: posenc.rope_frequencies(h), st.integers(1, 16).map(lambda k: 2 * k))
_X = st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.complex64]).flatmap(
    lambda dt: st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(1, 9).map(lambda k: 2 * k)).map(
        lambda s: np.random.default_rng(sum(s)).standard_normal(s).astype(dt)))

CASES: dict[str, Case] = {
    "encode": Case(posenc.encode, _kw(POSITIONS=positions(), D_MODEL=d_models(), **_ENC), _check_encode),
    "table": Case(posenc.table, _kw(LENGTH=lengths(), D_MODEL=d_models(), start=st.one_of(
        small_ints(-(2**31), 2**31), st.sampled_from([2**53 - 3, -(2**53), 1.5]), junk), **_ENC), _check_table),
    "frequencies": Case(posenc.frequencies, _kw(D_MODEL=d_models(), base=bases()), _check_frequencies),
    "wavelengths": Case(posenc.wavelengths, _kw(D_MODEL=d_models(), base=bases()), _check_wavelengths),
    "max_wavelength": Case(posenc.max_wavelength, _kw(D_MODEL=d_models(), base=bases()), _check_max_wavelength),
    "min_base": Case(posenc.min_base, _kw(CONTEXT=reals, D_MODEL=d_models()), _check_min_base),
    "context_report": Case(posenc.context_report, _kw(CONTEXT=reals, D_MODEL=d_models(), base=bases()),
                           _check_context_report),
    "shift_matrix": Case(posenc.shift_matrix, _kw(K=positions(), D_MODEL=d_models(), base=bases(),
                                                  layout=layouts(("interleaved", "split")), dtype=dtypes()),
                         _check_shift_matrix),
    "shift": Case(posenc.shift, _kw(ENCODING=st.one_of(_X, positions()), K=positions(), base=bases(),
                                    layout=layouts(("interleaved", "split"))), _check_shift),
    "similarity": Case(posenc.similarity, _kw(P=positions(), Q=positions(), D_MODEL=d_models(), base=bases(),
                                              per_channel=st.booleans()), _check_similarity),
    "aliasing": Case(posenc.aliasing, _kw(P=positions(), Q=positions(), D_MODEL=d_models(), base=bases(),
                                          layout=layouts(("interleaved", "split")), atol=reals), _check_aliasing),
    "min_separation": Case(posenc.min_separation, _kw(
        N=st.one_of(small_ints(2, 300), st.sampled_from([1, 0, -5, 2**40, 2**53, 2**60, 10**400, 2.5]), junk),
        D_MODEL=d_models(16), base=bases()), _check_min_separation),
    "rope_frequencies": Case(posenc.rope_frequencies, _kw(HEAD_DIM=d_models(), scaling=_scalings(), **_ROPE),
                             _check_freqs),
    "rope_cos_sin": Case(posenc.rope_cos_sin, _kw(POSITIONS=positions(), HEAD_DIM=d_models(32), scaling=_scalings(),
                                                  dtype=dtypes(), **_ROPE), _check_rope_cos_sin),
    "rope_table": Case(posenc.rope_table, _kw(FREQS=st.one_of(_FREQS, junk), START=st.one_of(
        small_ints(-(2**31), 2**31), st.sampled_from([2**53 - 2, 1.5])), LENGTH=lengths(), dtype=dtypes()),
        _check_rope_table),
    "apply_rope": Case(posenc.apply_rope, _kw(X=st.one_of(_X, positions()), POSITIONS=positions(),
                                              scaling=_scalings(), layout=layouts(("half", "interleaved")),
                                              **_ROPE), _check_apply_rope),
    "rope_context_report": Case(posenc.rope_context_report, _kw(CONTEXT=reals, HEAD_DIM=d_models(32),
                                                                scaling=_scalings(), **_ROPE), _check_rope_context),
    "qk_permutation": Case(posenc.qk_permutation, _kw(
        HEAD_DIM=d_models(16), N_HEADS=st.one_of(small_ints(1, 8), st.sampled_from([0, 10**12, 10**400]), junk),
        FROM_LAYOUT=layouts(("half", "interleaved")), TO_LAYOUT=layouts(("half", "interleaved")),
        rotary_dim=st.one_of(st.none(), d_models(16))), _check_permutation),
    "permute_qk_weights": Case(posenc.permute_qk_weights, _kw(
        W=st.one_of(_X.map(lambda a: a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a), positions()),
        N_HEADS=st.one_of(small_ints(1, 4), st.sampled_from([0, 10**400]), junk),
        FROM_LAYOUT=layouts(("half", "interleaved")), TO_LAYOUT=layouts(("half", "interleaved"))),
        _check_permute_weights),
    "from_hf_config": Case(posenc.from_hf_config, _kw(CONFIG=_HF), _check_hf),
    **{cls.__name__: Case(cls, args, _check_scaling) for cls, args in _SCALING_ARGS.items()},
    "conventions.get": Case(conventions.get, _kw(CONVENTION=st.one_of(st.sampled_from(conventions.NAMES), junk,
                                                                     st.text(max_size=8))), _check_get),
    "conventions.Vaswani": Case(conventions.Vaswani, _kw(base=bases(), layout=layouts(("interleaved", "split"))),
                                _check_convention),
    "conventions.Tensor2Tensor": Case(conventions.Tensor2Tensor, _kw(
        min_timescale=st.one_of(st.floats(0.1, 10), reals), max_timescale=st.one_of(st.floats(1, 1e5), reals),
        start_index=st.one_of(small_ints(-100, 100), reals)), _check_convention),
    "conventions.Fairseq": Case(conventions.Fairseq, _kw(padding_idx=st.one_of(small_ints(0, 5), reals, junk)),
                                _check_convention),
    "conventions.Keras": Case(conventions.Keras, _kw(max_wavelength=bases()), _check_convention),
}

#: Public names that are results or data, not things to call with hostile input.
NOT_CALLED = {"Aliasing", "ContextReport", "RopeConfig", "RopeContextReport", "RopeFrequencies", "Separation",
              "conventions", "LAYOUTS", "ROPE_LAYOUTS", "PosEncError", "__version__"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_arguments(name):
    case = CASES[name]

    @given(case.args)
    def attempt(kw: dict[str, Any]) -> None:
        try:
            result = case.call(**kw)
        except PosEncError as exc:
            message = str(exc)
            assert "\n" not in message.strip() or len(message) < 2000
            assert names_the_value(message, kw.keys(), kw.values()), (message, kw)
            return
        case.check(result, kw)

    attempt()


def test_every_public_callable_is_fuzzed():
    public = {n for n in posenc.__all__ if n not in NOT_CALLED}
    assert public <= set(CASES), sorted(public - set(CASES))
    presets = {f"conventions.{c.__name__}" for c in vars(conventions).values()
               if inspect.isclass(c) and issubclass(c, conventions.Convention) and c is not conventions.Convention
               and dataclasses.fields(c)}  # presets without fields take no input to fuzz
    assert presets <= set(CASES), sorted(presets - set(CASES))
