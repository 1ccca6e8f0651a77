"""Fuzz the torch modules' constructors and posenc.torch's functions: alone, every pair, every misplaced value.

:data:`TORCH_CASES` is this file's table, rows of the same :class:`~test_fuzz_api.Case`
as the NumPy API's: the constructor (or function) with hostile arguments
(tests/hostile.py), and a check that the module built works: its forward on a
small input against the NumPy API (:mod:`posenc`), which it must equal. The
outcomes allowed are the NumPy fuzz's (:func:`~test_fuzz_api.judge`): a
module that works, or a PosEncError naming an argument (issue 18).
"""

from __future__ import annotations

import itertools
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from test_fuzz_api import (
    _ALIBI_CONV,
    _B_OR_JUNK,
    _CONVENTION,
    _HEADS,
    _ROPE,
    _ROPE_SPEC,
    _XPOS,
    Case,
    _kw,
    _scalings,
    drawn,
    judge,
)
from test_fuzz_pairs import PAIR_EXAMPLES, fields, pair_args, pairs, parameters

import posenc
import posenc.torch as pt
from hostile import JUNK, bases, d_models, junk, layouts, lengths, misplaced_values, positions, reals, small_ints
from posenc import PosEncError

_MAX_LEN = st.one_of(small_ints(0, 64), lengths())
_S = 5  # tokens of the forward each check runs


def _check_sinusoidal(m: Any, kw: dict[str, Any]) -> None:
    m.eval()  # no dropout: the rows themselves
    d = m.d_model
    got = m(torch.zeros(1, _S, d))[0].numpy()
    want = posenc.encode(np.arange(_S), d, **{k: kw[k] for k in ("base", "layout", "convention") if k in kw})
    np.testing.assert_array_equal(got, want)


def _rope_positions(kw: dict[str, Any], sections: Any) -> np.ndarray:
    p = np.arange(_S)
    return p if sections is None else np.repeat(p[:, None], sections.n_axes, axis=1)  # text: every axis at p


def _check_rotary(m: Any, kw: dict[str, Any]) -> None:
    h = m.head_dim
    q = torch.randn(1, 2, _S, h, generator=torch.Generator().manual_seed(0))
    if m.sequence_dim == -3:
        q = q.transpose(1, 2).contiguous()
    qr, kr = m(q, q)
    assert qr.shape == kr.shape == q.shape and torch.isfinite(qr).all() and torch.isfinite(kr).all()
    if kw.get("xpos") is not None:
        return
    cos, sin = m.cos_sin(_S)
    opts = {k: kw[k] for k in ("base", "scaling", "rotary_dim", "seq_len") if k in kw}
    wc, ws = posenc.rope_cos_sin(_rope_positions(kw, m.sections), h, sections=m.sections, **opts)
    np.testing.assert_array_equal(cos.numpy(), wc)
    np.testing.assert_array_equal(sin.numpy(), ws)
    if m._follows_length:  # real positions need seq_len then (refused, tested in test_torch_rope_real.py)
        return
    real = _rope_positions(kw, m.sections) + 0.375  # real-valued positions: computed, not looked up
    cos, sin = m.cos_sin(_S, positions=torch.tensor(real))
    wc, ws = posenc.rope_cos_sin(real, h, sections=m.sections, **opts)
    np.testing.assert_array_equal(cos.numpy(), wc)
    np.testing.assert_array_equal(sin.numpy(), ws)


def _check_alibi(m: Any, kw: dict[str, Any]) -> None:
    got = m(3, _S)[0].numpy()
    want = posenc.alibi_bias(3, _S, m.n_heads, convention=kw.get("convention", "press"),
                             causal=kw.get("causal", True))
    np.testing.assert_array_equal(got, want)


def _check_t5(m: Any, kw: dict[str, Any]) -> None:
    got = m(3, _S)[0]
    rel = np.arange(_S)[None, :] - np.arange(3)[:, None]  # key - query
    b = posenc.t5_bucket(rel, bidirectional=kw.get("bidirectional", True), num_buckets=kw.get("num_buckets", 32),
                         max_distance=kw.get("max_distance", 128))
    want = m.relative_attention_bias.weight.detach()[torch.from_numpy(b)].permute(2, 0, 1)
    assert torch.equal(got.detach(), want)


class _Rows:
    """A row builder: row p is [p, p + 0.5], float32 or float64."""

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return self.at(np.arange(start, start + length), dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        p = np.asarray(positions, dtype=np.float64)
        return np.stack([p, p + 0.5], axis=-1).astype(dtype)


def _check_cache(c: Any, kw: dict[str, Any]) -> None:
    if c.row_shape != (2,):  # rows the builder cannot give: said at the first rows built (none may be yet)
        with pytest.raises(PosEncError, match=r"row_shape"):
            c.lookup(3, offset=7)
        return
    got = c.lookup(3, offset=7).numpy()
    np.testing.assert_array_equal(got, _Rows().rows(7, 3, np.dtype(np.float32)))


def _check_encode(out: Any, kw: dict[str, Any]) -> None:
    p = kw["positions"]
    want = posenc.encode(p.numpy() if isinstance(p, torch.Tensor) else p, kw["d_model"], dtype=np.float64,
                         **{k: kw[k] for k in ("base", "layout", "convention") if k in kw})
    dt = kw.get("dtype", torch.float32)
    assert out.dtype == dt and tuple(out.shape) == want.shape
    np.testing.assert_array_equal(out.to(torch.float64).numpy(), want.astype(str(dt).removeprefix("torch.")))


def _check_table(out: Any, kw: dict[str, Any]) -> None:
    want = posenc.table(kw["length"], kw["d_model"], start=kw.get("start", 0), dtype=np.float64,
                        **{k: kw[k] for k in ("base", "layout", "convention") if k in kw})
    dt = kw.get("dtype", torch.float32)
    assert out.dtype == dt and out.device.type == "cpu" and tuple(out.shape) == want.shape
    np.testing.assert_array_equal(out.to(torch.float64).numpy(), want.astype(str(dt).removeprefix("torch.")))


def _check_apply(out: Any, kw: dict[str, Any]) -> None:
    x = kw["x"]
    assert out.shape == x.shape and out.dtype == x.dtype and torch.isfinite(out).all()


def _check_cu(out: Any, kw: dict[str, Any]) -> None:
    cu = kw["cu_seqlens"].tolist()
    assert out.tolist() == [i for a, b in itertools.pairwise(cu) for i in range(b - a)]


_TORCH_X = st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16]).flatmap(
    lambda dt: st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 4).map(lambda k: 2 * k)).map(
        lambda s: torch.randn(*s, generator=torch.Generator().manual_seed(sum(s))).to(dt)))
_TORCH_POS = st.one_of(st.lists(st.integers(0, 50), min_size=1, max_size=4).map(torch.tensor), small_ints(0, 9),
                       st.sampled_from([torch.tensor([2**60]), torch.tensor([1.5]), torch.tensor([True])]), reals, junk)
_TORCH_DTYPE = st.one_of(st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                                          np.float32, "float32"]), junk)
_CU = st.one_of(st.lists(st.integers(0, 3), min_size=1, max_size=4).map(lambda d: torch.tensor(np.cumsum([0, *d]))),
                # torch.tensor([0, 10**12]) (a 4 TB output) is the size checks' (issue 18, section 4)
                st.sampled_from([torch.tensor([3, 1]), torch.tensor([]), torch.tensor(0),
                                 torch.tensor([0.0, 2.0]), torch.tensor([[0, 2]])]), junk)

def _check_timesteps(m: Any, kw: dict[str, Any]) -> None:
    from posenc.timesteps import Diffusers

    t = torch.tensor([0.0, 1.5, 999.0])
    want = posenc.timestep_embedding(t.numpy(), kw["num_channels"], convention=Diffusers(
        kw["flip_sin_to_cos"], kw["downscale_freq_shift"], kw.get("scale", 1.0), kw.get("max_period", 10000.0)))
    np.testing.assert_array_equal(m(t).numpy(), want)


_FIELD_X = torch.tensor([[0.1, -0.7, 0.3], [1.0, 0.0, -1.0]])


def _check_nerf(m: Any, kw: dict[str, Any]) -> None:
    want = posenc.nerf_encoding(_FIELD_X.numpy(), kw["n_freqs"], convention=kw.get("convention", "nerf"),
                                include_input=kw.get("include_input"))
    np.testing.assert_array_equal(m(_FIELD_X).numpy(), want)


def _check_ff(m: Any, kw: dict[str, Any]) -> None:
    b = kw["b"]
    x = torch.linspace(-1, 1, 2 * m.B.shape[1], dtype=torch.float32).reshape(2, -1)  # the matrix's own d
    want = posenc.fourier_features(x.numpy(), b.numpy() if isinstance(b, torch.Tensor) else b)
    np.testing.assert_array_equal(m(x).numpy(), want)


#: NumPy's dtype for each torch dtype (bfloat16: NumPy's float64 values, compared within bfloat16's rounding)
_NUMPY_DTYPE = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64,
                torch.bfloat16: np.float64}


def _to_numpy(v: Any) -> Any:
    """What the NumPy function is given for a torch argument: a tensor's values (exactly), a torch dtype's twin."""
    if isinstance(v, torch.Tensor):
        h = v.detach()
        return (h.to(torch.float32) if h.dtype in (torch.float16, torch.bfloat16) else h).numpy()
    return _NUMPY_DTYPE.get(v, v) if isinstance(v, torch.dtype) else v


def _like_numpy(name: str) -> Any:
    """A check: the torch function's result is the NumPy function's on the same arguments (bits in float32)."""
    def check(out: Any, kw: dict[str, Any]) -> None:
        want = getattr(posenc, name)(**{k: _to_numpy(v) for k, v in kw.items()})  # a refusal here fails the test
        got, wanted = (out, want) if isinstance(out, tuple) else ((out,), (want,))
        for g, w in zip(got, wanted, strict=True):
            assert isinstance(g, torch.Tensor) and tuple(g.shape) == w.shape, (g, w.shape)
            if g.dtype == torch.bfloat16:
                np.testing.assert_allclose(g.float().numpy(), w, rtol=2**-8, atol=2**-133)
                continue
            assert g.numpy().dtype == w.dtype, (g.dtype, w.dtype)
            np.testing.assert_array_equal(g.numpy(), w)
    return check


_ANY_POS = st.one_of(_TORCH_POS, positions())
_FIELD_POINTS = st.one_of(st.sampled_from([_FIELD_X, _FIELD_X.double(), _FIELD_X.half(), _FIELD_X[0, :2],
                                           torch.tensor(0.25), torch.arange(-3, 3).reshape(3, 2)]), _ANY_POS)
_T5_SETTINGS = dict(bidirectional=_B_OR_JUNK,
                    max_distance=st.one_of(small_ints(1, 1000), st.sampled_from([0, 2**53, 10**400, 1.5]), junk))

TORCH_CASES: dict[str, Case] = {
    "SinusoidalPositionalEncoding": Case(pt.SinusoidalPositionalEncoding, _kw(
        D_MODEL=d_models(), base=bases(), layout=layouts(("interleaved", "split")), convention=_CONVENTION,
        dropout=st.one_of(st.sampled_from([0.0, 0.1]), reals, junk), max_len=_MAX_LEN), _check_sinusoidal),
    "RotaryEmbedding": Case(pt.RotaryEmbedding, _kw(
        HEAD_DIM=d_models(32), scaling=_scalings(), layout=layouts(("half", "interleaved")), max_len=_MAX_LEN,
        sequence_dim=st.one_of(st.sampled_from([-2, -3, 1, 2]), reals, junk), xpos=_XPOS,
        **_ROPE), _check_rotary),
    "AlibiBias": Case(pt.AlibiBias, _kw(N_HEADS=_HEADS, convention=_ALIBI_CONV, causal=_B_OR_JUNK, max_len=_MAX_LEN),
                      _check_alibi),
    "T5RelativeBias": Case(pt.T5RelativeBias, _kw(
        N_HEADS=_HEADS, bidirectional=_B_OR_JUNK,
        num_buckets=st.one_of(small_ints(2, 64), st.sampled_from([0, 1, 3, 10**400]), junk),
        max_distance=st.one_of(small_ints(1, 1000), st.sampled_from([0, 2**53, 10**400, 1.5]), junk)), _check_t5),
    "TableCache": Case(pt.TableCache, _kw(
        BUILD=st.one_of(st.just(_Rows()), junk), ROW_SHAPE=st.one_of(st.just((2,)), st.just([2]), junk),
        stop=_MAX_LEN, start=st.one_of(small_ints(0, 9), lengths())), _check_cache),
    "torch.encode": Case(pt.encode, _kw(POSITIONS=_TORCH_POS, D_MODEL=d_models(), base=bases(),
                                        layout=layouts(("interleaved", "split")), convention=_CONVENTION,
                                        dtype=_TORCH_DTYPE), _check_encode),
    "torch.table": Case(pt.table, _kw(LENGTH=_MAX_LEN, D_MODEL=d_models(),
                                      start=st.one_of(small_ints(-9, 9), lengths()), base=bases(),
                                      layout=layouts(("interleaved", "split")),
                                      convention=_CONVENTION, dtype=_TORCH_DTYPE), _check_table),
    "torch.apply_rope": Case(pt.apply_rope, _kw(X=st.one_of(_TORCH_X, junk), POSITIONS=_TORCH_POS, scaling=_scalings(),
                                                layout=layouts(("half", "interleaved")),
                                                sequence_dim=st.one_of(st.sampled_from([-2, -3]), reals, junk),
                                                xpos=_XPOS, role=st.one_of(st.sampled_from(["q", "k"]), junk),
                                                spec=_ROPE_SPEC, **_ROPE), _check_apply),
    "torch.positions_from_cu_seqlens": Case(pt.positions_from_cu_seqlens, _kw(CU_SEQLENS=_CU), _check_cu),
    "Timesteps": Case(pt.Timesteps, _kw(
        NUM_CHANNELS=d_models(), FLIP_SIN_TO_COS=_B_OR_JUNK,
        DOWNSCALE_FREQ_SHIFT=st.one_of(st.sampled_from([0, 1, 0.5, 1.0]), reals, junk),
        scale=st.one_of(st.sampled_from([1, 1000.0]), reals, junk), max_period=bases()), _check_timesteps),
    "NeRFEncoding": Case(pt.NeRFEncoding, _kw(
        N_FREQS=st.one_of(small_ints(0, 12), st.sampled_from([-1, 54, 10**400]), reals, junk),
        convention=st.one_of(st.sampled_from(["nerf", "nerfstudio", "tcnn"]), junk),
        include_input=st.one_of(st.none(), _B_OR_JUNK)), _check_nerf),
    "FourierFeatures": Case(pt.FourierFeatures, _kw(B=st.one_of(
        st.sampled_from([torch.eye(3), torch.ones(3), np.ones((4, 3)), np.ones((0, 3)), np.ones((3, 0)),
                         np.ones((2, 2))]), junk)), _check_ff),
    "torch.rope_cos_sin": Case(pt.rope_cos_sin, _kw(POSITIONS=_ANY_POS, HEAD_DIM=d_models(32), scaling=_scalings(),
                                                    dtype=_TORCH_DTYPE, **_ROPE), _like_numpy("rope_cos_sin")),
    "torch.timestep_embedding": Case(pt.timestep_embedding, _kw(
        T=_ANY_POS, DIM=d_models(), dtype=_TORCH_DTYPE,
        convention=st.one_of(st.sampled_from(["diffusers", "ddpm", "guided-diffusion", "flux"]), st.text(max_size=5),
                             junk)), _like_numpy("timestep_embedding")),
    "torch.nerf_encoding": Case(pt.nerf_encoding, _kw(
        X=_FIELD_POINTS, N_FREQS=st.one_of(small_ints(0, 12), st.sampled_from([-1, 53, 54, 10**400]), reals, junk),
        convention=st.one_of(st.sampled_from(["nerf", "nerfstudio", "tcnn"]), st.text(max_size=5), junk),
        include_input=st.one_of(st.none(), _B_OR_JUNK), dtype=_TORCH_DTYPE), _like_numpy("nerf_encoding")),
    "torch.fourier_features": Case(pt.fourier_features, _kw(
        X=_FIELD_POINTS, B=st.one_of(st.sampled_from([torch.eye(3), torch.ones(2, 3), torch.ones(4, 2),
                                                      np.float32([[1.5, -2.0]]), np.ones((3, 0)), torch.ones(3)]),
                                     _ANY_POS, junk), dtype=_TORCH_DTYPE), _like_numpy("fourier_features")),
    "torch.alibi_bias": Case(pt.alibi_bias, _kw(
        Q_LEN=st.one_of(small_ints(1, 6), lengths()), K_LEN=st.one_of(small_ints(1, 6), lengths()), N_HEADS=_HEADS,
        offset=st.one_of(small_ints(-3, 6), st.sampled_from([2**53, 10**400]), junk),
        positions=st.one_of(st.none(), st.sampled_from([torch.arange(5), torch.tensor([[0, 0, 1, 2, 3]])]), _ANY_POS),
        convention=_ALIBI_CONV, causal=_B_OR_JUNK, dtype=_TORCH_DTYPE), _like_numpy("alibi_bias")),
    "torch.t5_bucket": Case(pt.t5_bucket, _kw(
        RELATIVE_POSITION=_ANY_POS, num_buckets=st.one_of(small_ints(2, 64), st.sampled_from([0, 1, 3, 10**400]), junk),
        spec=st.one_of(st.none(), st.sampled_from([posenc.bias.T5Buckets(False, 16, 64)]), junk), **_T5_SETTINGS),
        _like_numpy("t5_bucket")),
    "torch.t5_bias": Case(pt.t5_bias, _kw(
        WEIGHTS=st.one_of(st.sampled_from([torch.arange(64.0).reshape(32, 2), torch.ones(8, 3, dtype=torch.float64),
                                           torch.ones(3, 2), torch.ones(4)]), junk),
        Q_LEN=st.one_of(small_ints(1, 5), lengths()), K_LEN=st.one_of(small_ints(1, 5), lengths()),
        offset=st.one_of(small_ints(-3, 6), st.sampled_from([2**53, 10**400]), junk),
        q_positions=st.one_of(st.none(), _ANY_POS), k_positions=st.one_of(st.none(), _ANY_POS), **_T5_SETTINGS),
        _like_numpy("t5_bias")),
    "torch.encode_nd": Case(pt.encode_nd, _kw(
        COORDS=st.one_of(st.sampled_from([torch.tensor(posenc.grid(2, 3)), torch.tensor([[0.5, -1.25]]),
                                          torch.zeros(3, 2, dtype=torch.bfloat16)]), _ANY_POS),
        D_MODEL=d_models(), base=bases(), dtype=_TORCH_DTYPE,
        convention=st.one_of(st.none(), st.sampled_from(posenc.conventions_nd.NAMES), junk),
        cls_token=st.one_of(st.booleans(), small_ints(0, 3), junk)), _like_numpy("encode_nd")),
}

TORCH_PAIRS = [(name, a, b) for name in sorted(TORCH_CASES) for a, b in pairs(TORCH_CASES[name])]


def test_every_torch_public_name_is_fuzzed():
    assert {f"torch.{n}" if n[0].islower() else n for n in pt.__all__} == set(TORCH_CASES)
    for name, case in TORCH_CASES.items():  # every constructor argument is drawn, so every pair is
        required, optional = fields(case)
        assert parameters(case.call) == {*required, *optional}, name


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_torch_hostile_arguments(name):
    case = TORCH_CASES[name]

    @given(drawn(case.args))
    def attempt(kw: dict[str, Any]) -> None:
        judge(case, kw)

    attempt()


@pytest.mark.parametrize(("name", "a", "b"), TORCH_PAIRS, ids=[f"{n}:{a}+{b}" for n, a, b in TORCH_PAIRS])
def test_torch_hostile_pair(name, a, b):
    case = TORCH_CASES[name]

    @settings(max_examples=PAIR_EXAMPLES)
    @given(drawn(pair_args(case, a, b)))
    def attempt(kw: dict[str, Any]) -> None:
        judge(case, kw)

    attempt()


#: required arguments that work, for the exhaustive sweep
WORKING = {"SinusoidalPositionalEncoding": {"d_model": 8}, "RotaryEmbedding": {"head_dim": 8},
           "AlibiBias": {"n_heads": 4}, "T5RelativeBias": {"n_heads": 4},
           "TableCache": {"build": _Rows(), "row_shape": (2,)},
           "torch.encode": {"positions": torch.tensor([0, 3]), "d_model": 8},
           "torch.table": {"length": 3, "d_model": 8},
           "torch.apply_rope": {"x": torch.ones(2, 4, 8), "positions": torch.tensor([0, 1, 2, 3])},
           "torch.positions_from_cu_seqlens": {"cu_seqlens": torch.tensor([0, 2, 5])},
           "Timesteps": {"num_channels": 8, "flip_sin_to_cos": True, "downscale_freq_shift": 0},
           "NeRFEncoding": {"n_freqs": 4}, "FourierFeatures": {"b": torch.eye(3)},
           "torch.rope_cos_sin": {"positions": torch.tensor([0, 3]), "head_dim": 8},
           "torch.timestep_embedding": {"t": torch.tensor([0, 999]), "dim": 8},
           "torch.nerf_encoding": {"x": _FIELD_X, "n_freqs": 4},
           "torch.fourier_features": {"x": _FIELD_X, "b": torch.eye(3)},
           "torch.alibi_bias": {"q_len": 3, "k_len": 5, "n_heads": 4},
           "torch.t5_bucket": {"relative_position": torch.tensor([-3, 0, 7])},
           "torch.t5_bias": {"weights": torch.arange(64.0).reshape(32, 2), "q_len": 3, "k_len": 4},
           "torch.encode_nd": {"coords": torch.tensor(posenc.grid(2, 2)), "d_model": 8}}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_torch_each_argument_misplaced(name):
    case = TORCH_CASES[name]
    required, optional = fields(case)
    presets = [{}, *({"convention": c} for c in posenc.conventions.NAMES if "convention" in optional
                     and name != "AlibiBias")]
    for preset in presets:
        for arg in {*required, *optional} - set(preset):
            for value in [*misplaced_values(), *JUNK]:
                judge(case, {**WORKING[name], **preset, arg: value})
