"""posenc.triton through Triton's interpreter (TRITON_INTERPRET=1, tests/triton_kernels/conftest.py), on CPU tensors.

The rows are the NumPy 32-bit path's float32 bits (:mod:`posenc.exact.fixed_sincos` run on NumPy), and the
fused rotation equals :func:`posenc.apply_rope` (each pair in float32, rounded once to the dtype).
Interpreted, a program costs about a second: the shapes are tiny.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import posenc
import posenc.torch
from posenc import PosEncError
from posenc.exact.fixed import fixed_ladder, scale_words
from posenc.exact.fixed_phase import phase_of_floats, phase_of_integers
from posenc.exact.fixed_sincos import NUMPY_OPS, sincos_f32
from posenc.timesteps.conventions import Diffusers

pytest.importorskip("triton")  # pinned in requirements-dev.txt (the posenc[triton] extra)

from posenc.torch._fixed_op import device_path
from posenc.triton import apply_rope, sincos_rows, timestep_embedding, use_triton

LADDER = Diffusers(True, 0, 1, 10000).plan(24).ladder


def numpy_rows(p: np.ndarray, factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    fx = fixed_ladder(LADDER)
    phase = (phase_of_integers if p.dtype.kind == "i" else phase_of_floats)(NUMPY_OPS, p[:, None], fx)
    return sincos_f32(NUMPY_OPS, phase, None if factor == 1.0 else scale_words(factor))


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def test_interpreter_is_on():
    assert os.environ.get("TRITON_INTERPRET") == "1"


@pytest.mark.parametrize("factor", [1.0, 1.2345])
def test_rows_at_int32_positions_are_numpys_bits(factor):
    rng = np.random.default_rng(0)
    p = np.concatenate([[0, 1, -1, 2**31 - 1, -2**31], rng.integers(-2**31, 2**31, 60)]).astype(np.int32)
    s, c = sincos_rows(torch.from_numpy(p), LADDER, factor)
    ws, wc = numpy_rows(p, factor)
    assert np.array_equal(bits(s.numpy()), bits(ws)) and np.array_equal(bits(c.numpy()), bits(wc))


def test_rows_at_float32_positions_are_numpys_bits_and_refused_past_the_range():
    rng = np.random.default_rng(1)
    p = (rng.standard_normal(60) * 10.0 ** rng.integers(-4, 9, 60)).astype(np.float32)
    s, c = sincos_rows(torch.from_numpy(p), LADDER)
    ws, wc = numpy_rows(p)
    assert np.array_equal(bits(s.numpy()), bits(ws)) and np.array_equal(bits(c.numpy()), bits(wc))
    # never NaN rows (they were, before): the value is named before the kernel runs
    for bad in (2.0**31, float("nan"), float("-inf")):
        with pytest.raises(PosEncError, match=r"outside \|p\| < 2\*\*31"):
            sincos_rows(torch.tensor([0.5, bad]), LADDER)
    with pytest.raises(PosEncError, match=r"position 4294967296 is outside \[-2\*\*31, 2\*\*31\)"):
        sincos_rows(torch.tensor([1, 2**32], dtype=torch.int64), LADDER)


def test_rows_equal_the_torch_modules_host_rows():
    """The kernel and posenc.torch's eager CPU rows (the NumPy core) agree on every bit here."""
    t = torch.tensor([0, 1, 999, 123456, -77], dtype=torch.int64)
    ours = posenc.torch.Timesteps(24, False, 0)(t)
    s, c = sincos_rows(t, LADDER)
    assert torch.equal(torch.cat([s, c], -1).view(torch.int32), ours.view(torch.int32))


CASES = [
    ("half", None, torch.float32, 2),
    ("interleaved", None, torch.float16, 2),
    ("half", 24, torch.bfloat16, 1),  # partial rotary: channels past 24 pass through
    ("interleaved", 16, torch.float32, 1),
]


@pytest.mark.parametrize(("layout", "rotary_dim", "dtype", "hk"), CASES)
def test_fused_rope_equals_posenc_apply_rope(layout, rotary_dim, dtype, hk):
    g = torch.Generator().manual_seed(2)
    spec = posenc.RopeConfig(32, layout=layout, rotary_dim=rotary_dim)
    q = torch.randn(1, 2, 2, 32, generator=g).to(dtype)
    k = torch.randn(1, hk, 2, 32, generator=g).to(dtype)
    pos = torch.tensor([5, 4_000_000])
    qo, ko = apply_rope(q, k, pos, spec)
    for x, got in ((q, qo), (k, ko)):
        want = posenc.apply_rope(x.float().numpy(), pos.numpy(), spec=spec)  # float32 pairs, rounded once below
        want_t = torch.from_numpy(np.ascontiguousarray(want)).to(dtype)
        # within the rotation's own rounding (a GPU may contract a*c - b*s into an FMA): here exactly
        assert got.dtype == dtype and torch.equal(got, want_t)
    assert torch.equal(q, q.clone())  # out of place: q untouched


def test_fused_rope_in_place_and_per_row_positions():
    spec = posenc.RopeConfig(16)
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 1, 1, 16, generator=g)
    k = torch.randn(2, 1, 1, 16, generator=g)
    pos = torch.tensor([[7], [123]])
    want_q = posenc.apply_rope(q.numpy(), pos[:, None, :].numpy(), spec=spec)
    qo, ko = apply_rope(q, k, pos, spec, inplace=True)
    assert qo is q and ko is k
    assert torch.equal(q, torch.from_numpy(want_q))


@pytest.mark.parametrize(("call", "needle"), [
    (lambda q: apply_rope(q.double(), q.double(), torch.arange(2), 16), "float32, float16, bfloat16"),
    (lambda q: apply_rope(q, q, torch.arange(2.0), 16), "integers"),
    (lambda q: apply_rope(q, q, torch.tensor([0, 2**31]), 16), "int32"),
    (lambda q: apply_rope(q, q, torch.arange(2), 32), "head_dim"),
    (lambda q: apply_rope(q, q, torch.arange(2), posenc.RopeConfig(16, sections=(4, 2, 2))), "multi-axis"),
])
def test_bad_input_is_refused_before_any_work(call, needle):
    with pytest.raises(posenc.PosEncError, match=needle):
        call(torch.zeros(1, 1, 2, 16))


def test_posenc_torch_chooses_the_kernel_for_cuda_tensors_when_triton_is_there(monkeypatch):
    cuda = torch.device("cuda", 0)
    assert device_path(cuda, True) == "triton" and use_triton(cuda)
    assert device_path(torch.device("cpu"), True) == "host"  # the NumPy core on the host
    assert device_path(torch.device("cpu"), False) == "torch"
    assert device_path(torch.device("mps"), True) == "torch"  # no Triton backend: the integer operations
    monkeypatch.setenv("POSENC_TRITON", "0")
    assert device_path(cuda, True) == "torch"
    monkeypatch.delenv("POSENC_TRITON")
    import posenc.triton as pt

    monkeypatch.setattr(pt, "available", lambda: False)  # Triton missing: the fallback
    assert device_path(cuda, True) == "torch"


@pytest.mark.parametrize("convention", ["diffusers", "guided-diffusion", "flux"])
def test_timestep_embedding_is_numpys_float32_at_integer_steps(convention):
    t = torch.tensor([0, 1, 17, 999, 123456])
    got = timestep_embedding(t, 21, convention=convention)
    want = posenc.timestep_embedding(t.numpy(), 21, convention=convention, dtype=np.float32)
    assert np.array_equal(bits(got.numpy()), bits(want))


def test_timestep_embedding_refuses_a_rounded_flux_product():
    from posenc.timesteps.conventions import Flux

    with pytest.raises(posenc.PosEncError, match=r"posenc\.torch\.Timesteps"):
        timestep_embedding(torch.tensor([0.5]), 8, convention=Flux(1000.0, 10000, "float32"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rows_rounded_to_odd_cast_to_the_exact_value_rounded_once(dtype):
    """posenc::sincos32's Triton branch for float16/bfloat16 rows: float32 rounded to odd, then a cast."""
    from posenc.timesteps.conventions import round_to
    from posenc.triton import rows_unchecked

    name = "float16" if dtype == torch.float16 else "bfloat16"
    p = np.random.default_rng(9).random(400).astype(np.float32) * 1000
    s, c = rows_unchecked(torch.from_numpy(p), LADDER, odd=True)
    s64, c64 = np.empty((p.size, len(LADDER))), np.empty((p.size, len(LADDER)))
    posenc.exact.fill_sincos(p.astype(np.float64), LADDER, s64, c64)
    assert np.array_equal(s.to(dtype).double().numpy(), round_to(s64, name))
    assert np.array_equal(c.to(dtype).double().numpy(), round_to(c64, name))
