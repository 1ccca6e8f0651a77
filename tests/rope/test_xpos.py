"""xPos: the paper's form (mpmath), rotary-embedding-torch 0.9.1 (use_xpos=True), torchscale's centring, invariance."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from rotary_embedding_torch import RotaryEmbedding as RERotary

from posenc import PosEncError, Sections, XPos, apply_rope, xpos_decay, xpos_scale


def zeta_ref(i: int, r: int, gamma: float) -> mpmath.mpf:
    g = mpmath.mpf(gamma)
    return (mpmath.mpf(2 * i) / r + g) / (1 + g)


def paper_xpos(x: np.ndarray, p: float, role: str, c: float, gamma: float, sb: float, base: float) -> list:
    """One vector [r] (interleaved pairs), rotated by ω_i·p and scaled by ζ_i^(±(p − c)/sb), in mpmath."""
    r = x.shape[-1]
    out = []
    sign = 1 if role == "q" else -1
    for i in range(r // 2):
        w = mpmath.power(mpmath.mpf(base), -mpmath.mpf(2 * i) / r)
        th = mpmath.mpf(p) * w
        f = mpmath.power(zeta_ref(i, r, gamma), sign * (mpmath.mpf(p) - c) / mpmath.mpf(sb))
        a, b = mpmath.mpf(float(x[2 * i])), mpmath.mpf(float(x[2 * i + 1]))
        out += [(a * mpmath.cos(th) - b * mpmath.sin(th)) * f, (b * mpmath.cos(th) + a * mpmath.sin(th)) * f]
    return out


def test_zeta_is_correctly_rounded() -> None:
    with mpmath.workdps(50):
        for r in (2, 8, 64, 128, 96):
            for g in (0.4, 0.1, 1.0, 2.5):
                assert XPos(gamma=g).zeta(r).tolist() == [float(zeta_ref(i, r, g)) for i in range(r // 2)]


def test_decay_at_offset_512_is_zeta_for_the_fastest_and_slowest_pair() -> None:
    d = xpos_decay([512, 0, -512], 128)
    z = XPos().zeta(128)
    assert d[0, 0] == pytest.approx(0.4 / 1.4, rel=1e-15) and d[0, -1] == pytest.approx((126 / 128 + 0.4) / 1.4)
    assert np.array_equal(d[0], z)  # ζ**1, correctly rounded: ζ itself, on every CPU
    assert np.array_equal(d[1], np.ones(64))
    np.testing.assert_allclose(d[2] * d[0], 1.0, rtol=4e-16)


@mpmath.workdps(40)
def test_against_the_papers_form_in_mpmath() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 16))
    pos = np.array([0, 1, 77, 500, 1023, 1024])
    n = 1025
    for role in ("q", "k"):
        got = apply_rope(x, pos, xpos=XPos(), role=role, layout="interleaved", seq_len=n)
        for row, p in enumerate(pos):
            ref = paper_xpos(x[row], float(p), role, mpmath.mpf(n // 2), 0.4, 512.0, 10000.0)
            size = max(abs(t) for t in ref)  # a·cos − b·sin may cancel: measure against the row's largest value
            err = max(abs(mpmath.mpf(float(g)) - t) for g, t in zip(got[row], ref, strict=True)) / size
            assert err < 4e-16, (role, p, float(err))


@pytest.mark.parametrize("n, dim, head", [(64, 32, 32), (257, 64, 80), (1000, 16, 16)])
def test_equals_rotary_embedding_torch_use_xpos(n: int, dim: int, head: int) -> None:
    torch.manual_seed(n)
    q = torch.randn(2, 3, n, head)
    k = torch.randn(2, 3, n, head)
    re = RERotary(dim, use_xpos=True, xpos_scale_base=512, cache_if_possible=False)
    rq, rk = re.rotate_queries_and_keys(q, k)
    pos = np.arange(n)
    oq = apply_rope(q.numpy(), pos, xpos=XPos(), role="q", layout="interleaved", rotary_dim=dim)
    ok = apply_rope(k.numpy(), pos, xpos=XPos(), role="k", layout="interleaved", rotary_dim=dim)
    # rotary-embedding-torch forms the angles p·ω and the powers in float32: its own error grows with p
    tol = 4e-7 * n
    assert np.abs(oq - rq.numpy()).max() <= tol * np.abs(oq).max()
    assert np.abs(ok - rk.numpy()).max() <= tol * np.abs(ok).max()
    assert np.array_equal(oq[..., dim:], q.numpy()[..., dim:])  # channels past the rotary dim pass through
    # the factors alone: float32 pow against the correctly rounded values
    scale = re.get_scale(torch.arange(n, dtype=torch.float32)).numpy()[:, ::2]
    np.testing.assert_allclose(xpos_scale(pos, dim, seq_len=n, dtype=np.float32), scale, rtol=3e-6)


def torchscale_form(x: np.ndarray, n: int, role: str, gamma: float = 0.4, sb: float = 512.0) -> np.ndarray:
    """torchscale's XPOS (xpos_relative_position.py), written again in float64: centre ceil(N/2), interleaved pairs."""
    r = x.shape[-1]
    zeta = (np.arange(0, r, 2) + gamma * r) / ((1 + gamma) * r)
    min_pos = -n // 2  # Python floor division: -ceil(n/2)
    scale = zeta ** (np.arange(min_pos, n + min_pos)[:, None] / sb)
    if role == "k":
        scale = 1 / scale
    theta = np.arange(n)[:, None] * (1.0 / 10000 ** (np.arange(r // 2) / (r // 2)))
    c, s = np.cos(theta) * scale, np.sin(theta) * scale
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 1::2] * c + x[..., 0::2] * s
    return out


@pytest.mark.parametrize("n", [10, 11, 300, 301])
def test_torchscale_centres_at_ceil_half_which_is_seq_len_n_plus_n_mod_2(n: int) -> None:
    x = np.random.default_rng(n).normal(size=(n, 24))
    for role in ("q", "k"):
        ours = apply_rope(x, np.arange(n), xpos=XPos(), role=role, layout="interleaved", seq_len=n + n % 2)
        np.testing.assert_allclose(ours, torchscale_form(x, n, role), rtol=1e-12, atol=1e-13)
        if n % 2:  # with seq_len = n the centre is floor(n/2): other tensors, the same scores
            other = apply_rope(x, np.arange(n), xpos=XPos(), role=role, layout="interleaved")
            assert not np.allclose(other, torchscale_form(x, n, role), rtol=1e-6)


def scores(q: np.ndarray, k: np.ndarray, pq: np.ndarray, pk: np.ndarray, xpos: XPos, n: int) -> np.ndarray:
    a = apply_rope(q, pq, xpos=xpos, role="q", seq_len=n)
    b = apply_rope(k, pk, xpos=xpos, role="k", seq_len=n)
    return np.einsum("...d,...d->...", a, b)


@given(p=st.integers(0, 4000), gap=st.integers(-600, 600), shift=st.integers(-3000, 3000),
       gamma=st.sampled_from([0.4, 0.1, 1.0]), sb=st.sampled_from([512.0, 128.0, 2048.0]),
       layout=st.sampled_from(["half", "interleaved"]))
def test_q_dot_k_depends_on_the_offset_only(p: int, gap: int, shift: int, gamma: float, sb: float,
                                           layout: str) -> None:
    rng = np.random.default_rng(p)
    q, k = rng.normal(size=(2, 1, 32))
    xp = XPos(gamma=gamma, scale_base=sb)
    pq, pk = np.array([p + gap]), np.array([p])
    n = 8000
    base = scores(q, k, pq, pk, xp, n)
    moved = scores(q, k, pq + shift + 3000, pk + shift + 3000, xp, n)
    uncentred = scores(q, k, pq, pk, XPos(gamma=gamma, scale_base=sb, center=False), n)
    # the decay: pair i of q·k carries ζ_i^(gap/sb), independently of where the pair sits
    rot = apply_rope(q, pq) @ apply_rope(k, pk).T
    scale = np.abs(q).sum() * np.abs(k).sum() * max(1.0, float(np.max(xpos_decay([gap], 32, xpos=xp))))
    assert abs(float(moved[0]) - float(base[0])) <= 1e-13 * scale
    assert abs(float(uncentred[0]) - float(base[0])) <= 1e-13 * scale
    if gap == 0:
        assert abs(float(base[0]) - float(rot[0, 0])) <= 1e-13 * scale  # no offset, no decay


def test_decoding_one_query_equals_the_last_row_of_the_prefill() -> None:
    x = np.random.default_rng(1).normal(size=(50, 16)).astype(np.float32)
    full = apply_rope(x, np.arange(50), xpos=XPos(), role="q")
    one = apply_rope(x[-1:], [49], xpos=XPos(), role="q")  # default seq_len = max(position) + 1 = 50
    assert np.array_equal(one, full[-1:])


def test_float32_tables_are_one_rounding_of_the_float64_ones() -> None:
    x = np.eye(8)[None].repeat(3, 0).reshape(24, 8)
    pos = np.arange(24)
    wide = apply_rope(x, pos, xpos=XPos(), role="q", seq_len=24)
    narrow = apply_rope(x.astype(np.float32), pos, xpos=XPos(), role="q", seq_len=24)
    assert np.abs(narrow - wide).max() <= 2**-24 * np.abs(wide).max() * 2


@pytest.mark.parametrize("call, fragment", [
    (lambda: XPos(gamma=-0.1), "gamma"),
    (lambda: XPos(gamma=0.0), "gamma"),
    (lambda: XPos(scale_base=0), "scale_base"),
    (lambda: XPos(scale_base=-512), "scale_base"),
    (lambda: XPos(scale_base=float("inf")), "scale_base"),
    (lambda: XPos(center="yes"), "center"),
    (lambda: apply_rope(np.ones((2, 8)), [0, 1], xpos=XPos()), "role"),
    (lambda: apply_rope(np.ones((2, 8)), [0, 1], xpos=XPos(), role="v"), "role"),
    (lambda: apply_rope(np.ones((2, 8)), [0, 1], role="q"), "role"),
    (lambda: apply_rope(np.ones((2, 8)), [0, 1], xpos=0.4, role="q"), "xpos"),
    (lambda: apply_rope(np.ones((2, 8)), [[0, 0], [1, 1]], xpos=XPos(), role="q",
                        sections=Sections((2, 2))), "sections"),
    # float16 q: ζ_0^(p/512) overflows float16 past ~4,000 positions from the centre
    (lambda: apply_rope(np.ones((1, 8), np.float16), [20000], xpos=XPos(), role="q", seq_len=20001), "float16"),
    (lambda: apply_rope(np.ones((1, 8), np.float32), [10**6], xpos=XPos(center=False), role="k"), "float32"),
    (lambda: xpos_scale([0], 7), "rotary_dim"),
    (lambda: apply_rope(np.ones((2, 8)), [0, 1], xpos=XPos(), role="q", seq_len=0), "seq_len"),
])
def test_bad_input_raises_poserror(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PosEncError, match=fragment):
        call()


def test_the_range_limit_is_where_float32_would_overflow() -> None:
    # γ = 0.4: |ln ζ_0| = ln 3.5; float32's normal range allows |p − c| up to 512·87.3/ln 3.5 ≈ 35,690
    ok = apply_rope(np.ones((1, 4), np.float32), [35_000], xpos=XPos(center=False), role="q")
    assert np.all(np.isfinite(ok))
    with pytest.raises(PosEncError, match="at most 3569"):
        apply_rope(np.ones((1, 4), np.float32), [36_000], xpos=XPos(center=False), role="q")
