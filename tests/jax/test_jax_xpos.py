"""xPos in posenc.jax.apply_rope: NumPy's bits for concrete positions, 32-bit rows in the graph for traced ones.

References: NumPy posenc (:func:`posenc.rope.xpos.xpos_scale`, :func:`posenc.apply_rope`,
its refusals) and mpmath (ζ_i^(u/scale_base) from ζ_i = (2i/r + γ)/(1 + γ),
cos(ω_i p) from ω_i = base**(−2i/r), written here).
"""

from __future__ import annotations

import doctest
import inspect
from typing import Any

import numpy as np
import pytest

import posenc
from posenc import PosEncError, RopeConfig, XPos
from posenc.rope.frequencies import spec_frequencies
from posenc.rope.xpos import xpos_cos_sin, xpos_scale

jax = pytest.importorskip("jax")
pytest.importorskip("jax.extend")  # jaxprs_in_params, for the graph walk
mpmath = pytest.importorskip("mpmath")
import jax.numpy as jnp  # noqa: E402
from jaxprs import jaxpr_items  # noqa: E402

import posenc.jax as pj  # noqa: E402
from posenc.jax._xpos import jax_xpos_cos_sin, reach, traced_factors, xpos_bounds  # noqa: E402

#: the documented bound: a traced value differs from the correctly rounded one only this close to a boundary
BOUNDARY = 2.0**-55


def _nearest_f32(v: Any) -> np.float32:
    """The float32 nearest to the mpmath value v (ties to even), decided in mpmath."""
    c = np.float32(float(v))
    cands = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    dist = [abs(mpmath.mpf(float(x)) - v) for x in cands]
    best = min(dist)
    won = [x for x, d in zip(cands, dist, strict=True) if d == best]
    return won[0] if len(won) == 1 else next(x for x in won if not x.view(np.uint32) & 1)


def _boundary_distance(v: Any) -> float:
    """|v − m|/|v| for the float32 midpoint m nearest to v (mpmath)."""
    c = np.float32(float(v))
    lo, hi = np.nextafter(c, np.float32(-np.inf)), np.nextafter(c, np.float32(np.inf))
    mids = [(mpmath.mpf(float(a)) + mpmath.mpf(float(b))) / 2 for a, b in ((lo, c), (c, hi))]
    return float(min(abs(v - m) for m in mids) / abs(v))


def _zeta(xpos: XPos, r: int, i: int) -> Any:
    g = mpmath.mpf(xpos.gamma)
    return (mpmath.mpf(2 * i) / r + g) / (1 + g)


#: (rotary dim, variant, stride of u): every offset in range (stride 1), or every 7th for the wide one
BATTERY = [
    (128, XPos(center=False), 1),
    (64, XPos(gamma=0.1, scale_base=128.0, center=False), 1),
    (32, XPos(gamma=1.0, scale_base=2048.0, center=False), 1),  # holds exact ties: (11/16)**7 has 25 bits
    (16, XPos(gamma=0.4, scale_base=100000.0, center=False), 4099),  # |u| to 7e6
]


@pytest.mark.parametrize(("r", "xpos", "stride"), BATTERY, ids=[f"r{b[0]}-{b[1].gamma}-{b[1].scale_base:g}"
                                                                   for b in BATTERY])
def test_traced_factors_are_numpys_float32_bits_but_at_a_rounding_boundary(r: int, xpos: XPos, stride: int) -> None:
    a = int(reach(xpos, r, "float32"))
    u = np.arange(-a, a + 1, stride)
    mismatched = 0
    for role in ("q", "k"):
        want = xpos_scale(u, r, xpos=xpos, role=role, dtype=np.float32)
        got = np.asarray(jax.jit(lambda p, role=role: traced_factors(p, xpos, r, role=role))(jnp.asarray(u, jnp.int32)))
        assert got.dtype == np.float32 and np.isfinite(got).all()
        bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
        mismatched += len(bad)
        for j, i in bad:
            with mpmath.workdps(60):
                e = (u[j] if role == "q" else -u[j]) / mpmath.mpf(xpos.scale_base)
                exact = _zeta(xpos, r, int(i)) ** e
                # the exception the contract allows: within 2**-55 of a boundary, one ulp away
                assert _boundary_distance(exact) < BOUNDARY, (role, u[j], i)
                assert abs(int(got[j, i].view(np.uint32)) - int(want[j, i].view(np.uint32))) == 1
    # measured: 0 for the first two, 4 for the third (its two exact ties, each role), 0 for the last
    assert mismatched <= (4 if xpos.gamma == 1.0 else 0)


def test_traced_factors_are_correctly_rounded_on_an_mpmath_sample() -> None:
    rng = np.random.default_rng(7)
    cases = [(64, XPos(), 700), (128, XPos(gamma=0.25, scale_base=300.0), -1234), (32, XPos(center=False), 0)]
    for r, xpos, middle in cases:
        a = int(reach(xpos, r, "float32"))
        p = middle + rng.integers(-a, a + 1, 60)
        for role in ("q", "k"):
            got = np.asarray(traced_factors(jnp.asarray(p, jnp.int32), xpos, r, middle=middle, role=role))
            for j in range(len(p)):
                for i in rng.integers(0, r // 2, 3):
                    with mpmath.workdps(50):
                        u = (int(p[j]) - middle) * (1 if role == "q" else -1)
                        exact = _zeta(xpos, r, int(i)) ** (mpmath.mpf(u) / mpmath.mpf(xpos.scale_base))
                        if _boundary_distance(exact) >= BOUNDARY:
                            assert got[j, i] == _nearest_f32(exact), (r, role, p[j], i)


def test_traced_rows_are_correctly_rounded_on_an_mpmath_sample() -> None:
    rng = np.random.default_rng(11)
    r, base, xpos, seq_len = 64, 10000.0, XPos(), 20000
    freqs = spec_frequencies(RopeConfig(r, base=base), None)
    ints = rng.integers(0, seq_len, 40)
    reals = (rng.random(40) * seq_len).astype(np.float32)
    for p in (ints.astype(np.int32), reals):
        for role in ("q", "k"):
            cos, sin = jax.jit(lambda q, role=role: jax_xpos_cos_sin(q, freqs, xpos, role, seq_len, jnp.float32))(
                jnp.asarray(p))
            cos, sin = np.asarray(cos), np.asarray(sin)
            for j in range(len(p)):
                for i in rng.integers(0, r // 2, 4):
                    with mpmath.workdps(60):
                        pos = mpmath.mpf(float(p[j]))
                        w = mpmath.mpf(base) ** (-mpmath.mpf(2 * int(i)) / r)
                        u = (pos - seq_len // 2) * (1 if role == "q" else -1)
                        f = _zeta(xpos, r, int(i)) ** (u / mpmath.mpf(xpos.scale_base))
                        for got, exact in ((cos[j, i], mpmath.cos(w * pos) * f), (sin[j, i], mpmath.sin(w * pos) * f)):
                            if _boundary_distance(exact) >= BOUNDARY:
                                assert got == _nearest_f32(exact), (role, p[j], i)


def _apply(role: str, **kw: Any) -> Any:
    return jax.jit(lambda a, b: pj.apply_rope(a, b, xpos=kw["xpos"], role=role, spec=kw["spec"],
                                              seq_len=kw["seq_len"]))


@pytest.mark.parametrize("role", ["q", "k"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_apply_rope_with_xpos_gives_numpys_bits_over_a_battery_of_positions(role: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    cfg, xpos, seq_len = RopeConfig(128), XPos(), 40000
    # factors within 2**±100: every product x·row stays a normal float32, which XLA on the CPU would flush to
    # zero where it is subnormal (NumPy keeps it): the rotation's arithmetic, not the rows' (those are checked
    # to the edge of the range below)
    c, a = seq_len // 2, int(reach(XPos(), 128, "float32") * 100 / 126)
    p = np.concatenate([np.arange(0, 300), rng.integers(c - a, c + a + 1, 1500), [c - a, c + a, c]])
    if dtype == "float32":
        p = np.concatenate([p, rng.random(500) * 2 * a + (c - a)]).astype(np.float32)
    x = rng.standard_normal((2, len(p), 128)).astype(np.float32)
    want = posenc.apply_rope(x, p, spec=cfg, xpos=xpos, role=role, seq_len=seq_len)
    got = {
        "eager": np.asarray(pj.apply_rope(jnp.asarray(x), jnp.asarray(p), spec=cfg, xpos=xpos, role=role,
                                          seq_len=seq_len)),
        "jit": np.asarray(_apply(role, spec=cfg, xpos=xpos, seq_len=seq_len)(jnp.asarray(x), jnp.asarray(p))),
    }
    assert {k: int((v.view(np.uint32) != want.view(np.uint32)).sum()) for k, v in got.items()} == {"eager": 0, "jit": 0}


def test_concrete_positions_take_numpys_default_centre() -> None:
    cfg, p = RopeConfig(16), np.array([0, 5, 99, 3000])
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    want = posenc.apply_rope(x, p, spec=cfg, xpos=XPos(), role="k")  # seq_len max(p) + 1: centre 1500
    got = np.asarray(pj.apply_rope(jnp.asarray(x), p, spec=cfg, xpos=XPos(), role="k"))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_subnormal_and_tiny_rows_are_numpys_bits() -> None:
    xpos, r = XPos(gamma=1.0, scale_base=1.0, center=False), 8  # ζ_0 = 1/2: factors down to 2**-126
    freqs = spec_frequencies(RopeConfig(r), None)
    u = np.arange(-126, 127)
    for role in ("q", "k"):
        want = xpos_cos_sin(u.astype(np.float64), freqs, xpos, role, None, np.dtype(np.float32), np.dtype(np.float32))
        got = jax.jit(lambda q, role=role: jax_xpos_cos_sin(q, freqs, xpos, role, None, jnp.float32))(
            jnp.asarray(u, jnp.int32))
        for w, g in zip(want, got, strict=True):
            assert (np.abs(w[w != 0]) < np.finfo(np.float32).tiny).any()  # subnormal rows are in the battery
            assert np.array_equal(np.asarray(g).view(np.uint32), w.view(np.uint32))


def _numpy_refuses(x: np.ndarray, p: Any, **kw: Any) -> str | None:
    try:
        posenc.apply_rope(x, p, **kw)
    except PosEncError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("x_dtype", ["float32", "float16", "bfloat16"])
def test_concrete_out_of_range_is_numpys_refusal(x_dtype: str) -> None:
    cfg, xpos, seq_len = RopeConfig(32), XPos(), 1000
    like = "float16" if x_dtype == "float16" else "float32"
    a = int(reach(xpos, 32, like))
    x = np.ones((2, 32), np.float16 if x_dtype == "float16" else np.float32)
    for p in ([500, 500 + a + 1], [500 - a - 1, 0]):
        message = _numpy_refuses(x, p, spec=cfg, xpos=xpos, role="q", seq_len=seq_len)
        assert message is not None and "leave" in message
        for given in (p, jnp.asarray(p, jnp.int32)):
            with pytest.raises(PosEncError) as err:
                pj.apply_rope(jnp.asarray(x, x_dtype), given, spec=cfg, xpos=xpos, role="q", seq_len=seq_len)
            assert str(err.value) == message
    inside = [500 - a, 500 + a]
    assert _numpy_refuses(x, inside, spec=cfg, xpos=xpos, role="k", seq_len=seq_len) is None
    assert np.isfinite(np.asarray(pj.apply_rope(jnp.asarray(x, x_dtype), inside, spec=cfg, xpos=xpos, role="k",
                                                seq_len=seq_len), np.float32)).all()


@pytest.mark.parametrize("x_dtype", ["float32", "float16"])
@pytest.mark.parametrize("xpos", [XPos(), XPos(gamma=0.3, scale_base=64.0, center=False)], ids=["paper", "uncentred"])
def test_traced_out_of_range_positions_are_nan_rows_exactly_where_numpy_refuses(x_dtype: str, xpos: XPos) -> None:
    cfg, seq_len = RopeConfig(32), 3001
    c = xpos.middle(seq_len) if xpos.center else 0
    like = np.dtype("float16" if x_dtype == "float16" else "float32")
    lo_i, hi_i, lo_f, hi_f = xpos_bounds(xpos, 32, c, like.name)
    down, up = np.float32(-np.inf), np.float32(np.inf)
    ints = np.array([lo_i - 1, lo_i, c, hi_i, hi_i + 1], np.int32)
    reals = np.array([np.nextafter(np.float32(lo_f), down), lo_f, np.float32(c) + np.float32(0.25), hi_f,
                      np.nextafter(np.float32(hi_f), up)], np.float32)
    freqs = spec_frequencies(cfg, None)
    x = np.ones((5, 32), x_dtype)

    @jax.jit
    def both_roles(a: Any, q: Any) -> Any:  # one compile per positions' dtype, not four
        return {role: (pj.apply_rope(a, q, xpos=xpos, role=role, spec=cfg, seq_len=seq_len),
                       jax_xpos_cos_sin(q, freqs, xpos, role, seq_len, x_dtype)) for role in ("q", "k")}

    for p in (ints, reals):
        results = both_roles(jnp.asarray(x), jnp.asarray(p))
        for role in ("q", "k"):
            refused = [_numpy_refuses(x[:1], [float(v)], spec=cfg, xpos=xpos, role=role, seq_len=seq_len) is not None
                       for v in p]
            assert refused == [True, False, False, False, True]  # the bounds are NumPy's, to the last float
            out, got = np.asarray(results[role][0]), results[role][1]
            assert np.isnan(out[[0, 4]]).all() and not np.isnan(out[1:4]).any()
            # the rows at the edge: NumPy's bits, subnormal products or not
            want = xpos_cos_sin(p[1:4].astype(np.float64), freqs, xpos, role, seq_len, np.dtype(np.float32), like)
            for g, w in zip(got, want, strict=True):
                g = np.asarray(g)
                assert np.isnan(g[[0, 4]]).all()
                assert np.array_equal(g[1:4].view(np.uint32), w.view(np.uint32)), role


def test_traced_nan_and_infinite_positions_are_nan_rows() -> None:
    f = _apply("q", spec=RopeConfig(8), xpos=XPos(), seq_len=100)
    got = np.asarray(f(jnp.ones((3, 8)), jnp.array([np.nan, np.inf, 3.0], jnp.float32)))
    assert np.isnan(got[:2]).all() and np.isfinite(got[2]).all()


def test_traced_centred_xpos_needs_seq_len() -> None:
    with pytest.raises(PosEncError, match=r"center=True .* pass seq_len \(a static int\)"):
        jax.jit(lambda a, b: pj.apply_rope(a, b, spec=RopeConfig(8), xpos=XPos(), role="q"))(
            jnp.ones((3, 8)), jnp.arange(3))
    out = jax.jit(lambda a, b: pj.apply_rope(a, b, spec=RopeConfig(8), xpos=XPos(center=False), role="q"))(
        jnp.ones((3, 8)), jnp.arange(3))  # no centre, no length needed
    want = posenc.apply_rope(np.ones((3, 8), np.float32), [0, 1, 2], spec=RopeConfig(8), xpos=XPos(center=False),
                             role="q")
    assert np.array_equal(np.asarray(out).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"role": "q"}, "role is for xPos"),
    ({"xpos": XPos()}, "role must be 'q'"),
    ({"xpos": XPos(), "role": "v"}, "role must be 'q'"),
    ({"xpos": "xpos", "role": "q"}, "xpos must be None or a posenc.XPos"),
    ({"xpos": XPos(), "role": "q", "sections": (2, 2)}, "xpos with sections"),
])
def test_bad_xpos_arguments_are_refused_as_numpy_refuses_them(kwargs: dict[str, Any], match: str) -> None:
    x = np.ones((3, 8), np.float32)
    with pytest.raises(PosEncError, match=match):
        posenc.apply_rope(x, [0, 1, 2], **kwargs)
    with pytest.raises(PosEncError, match=match):
        pj.apply_rope(jnp.asarray(x), jnp.arange(3), **kwargs)


def test_the_derivative_in_a_float_position_is_numpys_float64_slope() -> None:
    cfg, xpos, seq_len = RopeConfig(16, base=100.0), XPos(), 2000
    x = np.random.default_rng(5).standard_normal((4, 16))
    p = np.array([3.5, 700.25, 1000.0, 1900.75])
    for role in ("q", "k"):
        def total(q: jax.Array, role: str = role) -> jax.Array:
            return pj.apply_rope(jnp.asarray(x, jnp.float32), q, spec=cfg, xpos=xpos, role=role,
                                 seq_len=seq_len).sum()

        got = np.asarray(jax.grad(total)(jnp.asarray(p, jnp.float32)))  # one position per row: d/dp_j
        h = 1e-4
        ref = []
        for j in range(len(p)):
            hi, lo = p.copy(), p.copy()
            hi[j] += h
            lo[j] -= h
            diff = posenc.apply_rope(x, hi, spec=cfg, xpos=xpos, role=role, seq_len=seq_len)[j].sum() - \
                posenc.apply_rope(x, lo, spec=cfg, xpos=xpos, role=role, seq_len=seq_len)[j].sum()
            ref.append(diff / (2 * h))
        assert np.allclose(got, ref, rtol=2e-4, atol=2e-4), (role, got, ref)


def test_the_docstring_states_xpos_and_its_doctest_passes() -> None:
    doc = pj.apply_rope.__doc__ or ""
    for phrase in ("xpos:", "role:", "2**-55", "NaN rows"):
        assert phrase in doc
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    (test,) = finder.find(pj.apply_rope, "apply_rope", globs=dict(vars(inspect.getmodule(pj.apply_rope))))
    assert any("xpos=" in ex.source for ex in test.examples)
    result = runner.run(test, out=lambda s: None)
    assert result.failed == 0 and result.attempted >= 5


def walk(fn: Any, *args: Any) -> tuple[set[str], set[str]]:
    items = list(jaxpr_items(jax.make_jaxpr(fn)(*args).jaxpr))
    return {x for x in items if isinstance(x, str)}, {str(getattr(x, "dtype", "")) for x in items
                                                       if not isinstance(x, str)}


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.float32])
def test_no_float64_and_no_dot_in_the_xpos_graph(dtype: Any) -> None:
    x = jnp.ones((2, 16, 64), jnp.float32)
    names, dtypes = walk(lambda a, p: pj.apply_rope(a, p, xpos=XPos(), role="q", seq_len=64, base=500.0), x,
                         jnp.arange(16).astype(dtype))
    assert "float64" not in dtypes and "int64" not in dtypes and "uint64" not in dtypes
    assert "dot_general" not in names and "clz" in names
