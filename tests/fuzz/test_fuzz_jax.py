"""Fuzz every public name of posenc.jax with hostile arguments: the NumPy API's values, or a PosEncError naming one.

:data:`JAX_CASES` holds rows of the same :class:`~test_fuzz_api.Case` as the
NumPy table, judged the same way (:func:`~test_fuzz_api.judge`). A call the
JAX form accepts is checked against the NumPy API on the same arguments
(float32 bits where both compute the value; the JAX forms are exact for
every int32 and float32 position, so where the NumPy API refuses an angle past
2**53 the JAX values need only be on the unit circle). A new name in
``posenc.jax.__all__`` fails the first test until it has a row.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import hypothesis.strategies as st
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from test_fuzz_api import _CONVENTION, _ROPE, Case, _kw, _scalings, drawn, judge

import posenc
import posenc.jax as pj
from hostile import bases, d_models, junk, layouts, positions, small_ints
from posenc import PosEncError

_TIMESTEP = st.one_of(st.sampled_from(["diffusers", "ddpm", "guided-diffusion", "flux"]), st.text(max_size=5), junk)
_FIELD = st.one_of(st.sampled_from(["nerf", "nerfstudio", "tcnn"]), st.text(max_size=5), junk)
_OUT = st.one_of(st.sampled_from([jnp.float32, jnp.bfloat16, "float16", np.float64]), junk)
_BOOL = st.one_of(st.booleans(), junk)


def _numpy(fn: Any, *args: Any, **kw: Any) -> Any:
    """The NumPy API's answer, or None where it refuses (posenc.jax may be exact where NumPy's 2**53 limit stops)."""
    try:
        return fn(*args, **kw)
    except PosEncError:
        return None


def _host(v: Any) -> Any:
    """What posenc.jax computed on: a NumPy array of int64 (int32 values) or float64 (float32 values)."""
    a = np.asarray(jnp.asarray(v) if not isinstance(v, np.ndarray) else v)
    return a.astype(np.int64) if a.dtype.kind in "iu" else a.astype(np.float32).astype(np.float64)


def _agree(got: Any, want: Any, kw: dict[str, Any], unit: bool = True) -> None:
    g = np.asarray(got, np.float32)
    if want is None:  # refused by NumPy only: a value of the formula still, never garbage
        assert np.isnan(g).all() or not unit or (np.abs(g[np.isfinite(g)]) <= 1).all()
        return
    w = np.asarray(want, np.float32)
    assert g.shape == w.shape, (g.shape, w.shape)
    if np.dtype(getattr(got, "dtype", np.float32)) == np.float32:
        assert np.array_equal(g, w, equal_nan=True), kw  # ±0 of a dyadic field band may differ in sign only
    else:  # bfloat16 / float16: the float32 value rounded once more
        np.testing.assert_allclose(g, w, rtol=2**-7, atol=2**-7)


def _check_encode(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("base", "layout", "convention") if k in kw}
    _agree(out, _numpy(posenc.encode, _host(kw["positions"]), kw["d_model"], **opts), kw)


def _check_encode_nd(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("base", "convention", "cls_token") if k in kw}
    _agree(out, _numpy(posenc.encode_nd, _host(kw["coords"]), kw["d_model"], **opts), kw)


def _check_table(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("start", "base", "layout", "convention") if k in kw}
    _agree(out, posenc.table(kw["length"], kw["d_model"], **opts), kw)


def _check_timestep(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("convention",) if k in kw}
    _agree(out, _numpy(posenc.timestep_embedding, _host(kw["t"]), kw["dim"], **opts), kw)


def _check_nerf(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("convention", "include_input") if k in kw}
    want = _numpy(posenc.nerf_encoding, _host(kw["x"]), kw["n_freqs"], **opts)
    assert want is None or np.asarray(out).shape == want.shape
    if want is not None:
        np.testing.assert_array_equal(np.asarray(out, np.float32), want.astype(np.float32)) if np.dtype(
            out.dtype) == np.float32 else np.testing.assert_allclose(np.asarray(out, np.float32), want, atol=2**-7,
                                                                     rtol=2**-7)


def _quarter_turns(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where 4·B·v is an integer (exact, in Fractions): cos or sin is exactly 0 there, ``[points, 2m]``."""
    pts = x.reshape(-1, b.shape[1])
    quarter = [[(4 * sum((Fraction(float(u)) * Fraction(float(w)) for u, w in zip(p, row, strict=True)),
                         Fraction(0))).denominator == 1 for row in b] for p in pts]
    q = np.array(quarter, dtype=bool).reshape(len(pts), b.shape[0])
    return np.concatenate([q, q], axis=-1)


def _check_fourier(out: Any, kw: dict[str, Any]) -> None:
    # the JAX form is exact for every finite float32; both forms give an exact +0 where the formula is 0 (B·v a
    # multiple of 1/4); below 2**-60 both hold an absolute bound only (their phases are cut at 2**-128 and
    # ~2**-106 turns), so there the two need not share bits
    x, b = _host(kw["x"]), _host(kw["b"])
    want = _numpy(posenc.fourier_features, x, b)
    g = np.asarray(out, np.float32)
    if want is None:
        assert np.isnan(g).all() or (np.abs(g[np.isfinite(g)]) <= 1).all()
        return
    assert g.shape == want.shape, (g.shape, want.shape)
    zero = _quarter_turns(x.reshape(1) if x.ndim == 0 else x, b).reshape(want.shape) & (np.abs(want) < 2.0**-20)
    assert (g[zero] == 0).all() and (want[zero] == 0).all()
    if np.dtype(out.dtype) == np.float32:
        tiny = (np.abs(want) < 2.0**-60) & ~zero
        assert np.array_equal(g[~tiny].view(np.uint32), np.asarray(want, np.float32)[~tiny].view(np.uint32))
        assert (np.abs(g[tiny] - want[tiny]) < 2.0**-80).all()
    else:  # bfloat16 / float16: the float32 value rounded once more
        np.testing.assert_allclose(g, want, rtol=2**-7, atol=2**-7)


def _check_positions(out: Any, kw: dict[str, Any]) -> None:
    # the checked array holds the values given, unmoved: int32 for integers, float32 for floats
    host = np.asarray(kw["values"])
    assert out.dtype in (jnp.int32, jnp.float32) and out.shape == host.shape
    assert np.array_equal(np.asarray(out).astype(np.float64), host.astype(np.float64))


def _rope_opts(kw: dict[str, Any]) -> dict[str, Any]:
    return {k: kw[k] for k in ("base", "scaling", "rotary_dim", "seq_len") if k in kw}


def _check_cos_sin(out: Any, kw: dict[str, Any]) -> None:
    want = _numpy(posenc.rope_cos_sin, _host(kw["positions"]), kw["head_dim"], **_rope_opts(kw))
    for g, w in zip(out, want if want is not None else (None, None), strict=True):
        _agree(g, w, kw, unit=False)


def _check_frequencies(f: Any, kw: dict[str, Any]) -> None:
    want = posenc.rope_frequencies(kw["head_dim"], **_rope_opts(kw))
    assert np.array_equal(f.ladder.w0, want.ladder.w0) and f.attention_factor == want.attention_factor


def _check_apply(out: Any, kw: dict[str, Any]) -> None:
    x = np.asarray(kw["x"], np.float64)
    want = _numpy(posenc.apply_rope, x, _host(kw["positions"]), layout=kw.get("layout", "half"), **_rope_opts(kw))
    if want is not None:
        np.testing.assert_allclose(np.asarray(out, np.float64), want, rtol=1e-5, atol=1e-5)


def _check_rotate(out: Any, kw: dict[str, Any]) -> None:
    x, c, s = (np.asarray(kw[k], np.float64) for k in ("x", "cos", "sin"))
    r = kw["rotary_dim"]
    want = posenc.apply_rope(x, np.zeros(x.shape[-2]), layout=kw["layout"], rotary_dim=r)  # θ = 0: x itself
    if np.all(c == 1) and np.all(s == 0):
        np.testing.assert_allclose(np.asarray(out, np.float64), want, rtol=1e-6)


def _check_alibi(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("offset", "convention", "causal") if k in kw}
    want = posenc.alibi_bias(kw["q_len"], kw["k_len"], kw["n_heads"], **opts)
    np.testing.assert_array_equal(np.asarray(out, np.float32), want.astype(np.float32))


def _check_bucket(out: Any, kw: dict[str, Any]) -> None:
    opts = {k: kw[k] for k in ("bidirectional", "num_buckets", "max_distance") if k in kw}
    want = _numpy(posenc.t5_bucket, _host(kw["relative_position"]), **opts)
    if want is not None:
        np.testing.assert_array_equal(np.asarray(out), want)


def _check_t5_bias(out: Any, kw: dict[str, Any]) -> None:
    w = np.asarray(kw["weights"], np.float32)
    opts = {k: kw[k] for k in ("offset", "bidirectional", "max_distance") if k in kw}
    rel = np.arange(kw["k_len"])[None, :] - (np.arange(kw["q_len"]) + opts.get("offset", 0))[:, None]
    bucket = posenc.t5_bucket(rel,
                              bidirectional=opts.get("bidirectional", True), num_buckets=w.shape[0],
                              max_distance=opts.get("max_distance", 128))
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.moveaxis(w[bucket], -1, 0))


def _check_rotary_module(m: Any, kw: dict[str, Any]) -> None:
    h = m.head_dim
    q = jnp.ones((1, 3, 2, h), jnp.float32)
    pos = jnp.arange(3)[None, :]  # [b, s] (the fuzz's sections are all refused: text positions only)
    qr, kr = m(q, q, pos)
    want = pj.apply_rope(q, pos[..., None], spec=m.spec, seq_len=m.seq_len)  # the settings the module checked
    assert np.array_equal(np.asarray(qr), np.asarray(want)) and np.array_equal(np.asarray(kr), np.asarray(want))


def _check_sinusoidal_module(m: Any, kw: dict[str, Any]) -> None:
    x = jnp.zeros((2, m.d_model), jnp.float32)
    convention, settings = m.settings  # the convention and the settings passed (beside a convention: none)
    assert {k for k, _ in settings} <= {"base", "layout"} and (convention is None or not settings)
    want = pj.encode(jnp.arange(2), m.d_model, convention=convention, **dict(settings))
    assert np.array_equal(np.asarray(m(x)), np.asarray(x + want))


_ROPE_J = {**_ROPE, "scaling": _scalings()}  # the NumPy table's RoPE fields, and its scalings
_X = st.one_of(st.integers(-3, 3).map(lambda n: np.ones((2, 3, 8)) * n), st.just(np.ones((4, 8), np.float32)), junk)
_POINTS = st.sampled_from([np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), np.float32(0.75),
                           np.arange(-4, 4, dtype=np.int32).reshape(4, 2), np.zeros((0, 2), np.float32)])
_MATRIX = st.sampled_from([np.ones((4, 2), np.float32), np.float32([[1.5, -2.0]]), np.arange(6.0).reshape(3, 2),
                           np.float32([[2.0**70, -(2.0**-80)]]), np.int32([[3, -7]]), np.float32([[0.5], [3.0]]),
                           np.ones((2, 3), np.float32), np.ones(2, np.float32)])
_SMALL = st.one_of(small_ints(0, 6), st.sampled_from([-1, 2**31, 10**400]), junk)

JAX_CASES: dict[str, Case] = {
    "encode": Case(pj.encode, _kw(POSITIONS=positions(), D_MODEL=d_models(), base=bases(),
                                  layout=layouts(("interleaved", "split")), convention=_CONVENTION, dtype=_OUT),
                   _check_encode),
    "encode_nd": Case(pj.encode_nd, _kw(
        COORDS=st.integers(0, 3).flatmap(lambda k: positions() if k == 0 else _POINTS), D_MODEL=d_models(),
        base=bases(), convention=st.one_of(st.none(), st.sampled_from(posenc.conventions_nd.NAMES), junk),
        cls_token=st.one_of(st.booleans(), small_ints(0, 3), junk), dtype=_OUT), _check_encode_nd),
    "table": Case(pj.table, _kw(LENGTH=_SMALL, D_MODEL=d_models(), start=st.one_of(small_ints(-5, 5), junk),
                                base=bases(), convention=_CONVENTION, dtype=_OUT), _check_table),
    "timestep_embedding": Case(pj.timestep_embedding, _kw(T=positions(), DIM=d_models(), convention=_TIMESTEP,
                                                          dtype=_OUT), _check_timestep),
    "nerf_encoding": Case(pj.nerf_encoding, _kw(
        X=positions(), N_FREQS=st.one_of(small_ints(0, 12), st.sampled_from([-1, 31, 40, 54, 10**400]), junk),
        convention=_FIELD, include_input=st.one_of(st.none(), _BOOL), dtype=_OUT), _check_nerf),
    "fourier_features": Case(pj.fourier_features, _kw(  # the matched x and B three draws in four
        X=st.integers(0, 3).flatmap(lambda k: positions() if k == 0 else _POINTS),
        B=st.integers(0, 3).flatmap(lambda k: st.one_of(positions(), junk) if k == 0 else _MATRIX), dtype=_OUT),
                             _check_fourier),
    "positions": Case(pj.positions, _kw(VALUES=positions()), _check_positions),
    "rope_cos_sin": Case(pj.rope_cos_sin, _kw(POSITIONS=positions(), HEAD_DIM=d_models(), **_ROPE_J, dtype=_OUT),
                         _check_cos_sin),
    "rope_frequencies": Case(pj.rope_frequencies, _kw(HEAD_DIM=d_models(), **_ROPE_J), _check_frequencies),
    "apply_rope": Case(pj.apply_rope, _kw(X=_X, POSITIONS=positions(), layout=layouts(("half", "interleaved")),
                                          **_ROPE_J), _check_apply),
    "rotate": Case(pj.rotate, _kw(X=_X, COS=st.just(jnp.ones(4)), SIN=st.just(jnp.zeros(4)),
                                  LAYOUT=layouts(("half", "interleaved")), ROTARY_DIM=d_models(16)), _check_rotate),
    "alibi_bias": Case(pj.alibi_bias, _kw(Q_LEN=_SMALL, K_LEN=_SMALL, N_HEADS=_SMALL,
                                          offset=st.one_of(small_ints(0, 4), junk),
                                          convention=st.one_of(st.sampled_from(["press", "bloom", "mpt"]), junk),
                                          causal=_BOOL), _check_alibi),
    "t5_bucket": Case(pj.t5_bucket, _kw(RELATIVE_POSITION=positions(), bidirectional=_BOOL,
                                        num_buckets=st.one_of(small_ints(1, 40), junk),
                                        max_distance=st.one_of(small_ints(1, 200), junk)), _check_bucket),
    "t5_bias": Case(pj.t5_bias, _kw(WEIGHTS=st.one_of(st.just(np.arange(16.0).reshape(8, 2)), junk), Q_LEN=_SMALL,
                                    K_LEN=_SMALL, offset=st.one_of(small_ints(0, 4), junk), bidirectional=_BOOL,
                                    max_distance=st.one_of(small_ints(1, 200), junk)), _check_t5_bias),
    "RotaryEmbedding": Case(lambda **kw: pj.RotaryEmbedding(**kw), _kw(HEAD_DIM=d_models(), **_ROPE_J,
                                                                       layout=layouts(("half", "interleaved"))),
                            _check_rotary_module),
    "SinusoidalEmbedding": Case(lambda **kw: pj.SinusoidalEmbedding(**kw), _kw(
        D_MODEL=d_models(), base=bases(), layout=layouts(("interleaved", "split")), convention=_CONVENTION),
        _check_sinusoidal_module),
}



def test_every_jax_public_name_is_fuzzed():
    assert set(pj.__all__) == set(JAX_CASES)


#: every new shape compiles the row builder once (~0.3 s): a third of the profile's examples keeps the file in minutes
JAX_EXAMPLES = max(5, settings().max_examples // 3)


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_jax_hostile_arguments(name):
    case = JAX_CASES[name]

    @settings(max_examples=JAX_EXAMPLES)
    @given(drawn(case.args))
    def attempt(kw: dict[str, Any]) -> None:
        judge(case, kw)

    attempt()
