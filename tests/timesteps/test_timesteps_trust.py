"""timestep_embedding against the trust sweep (issue 31 §4): each finding pinned.

- Flux's ``time_dtype``: ``time_factor · t`` is formed as the reference forms
  it, with torch's multiply of a tensor by a Python float (BFL's
  ``t = time_factor * t``, diffusers' ``timestep.to(dtype) * 1000``): in
  float32 for bfloat16, float16 and float32 with float32(factor), then
  rounded to the dtype. Before, NumPy rounded the exact product once, so a
  factor float32 does not hold (0.1, 1/3, 999.9) gave other bits than torch.
- Tensors NumPy cannot read are refused by name (before: raw TypeError and
  RuntimeError), and so is an object whose ``__array__`` raises.
- The output is sized before t is read: a (2·10**8,) view with 65536
  channels is refused in milliseconds (before: 4.0 s and 3.5 GB).
"""

from __future__ import annotations

import dataclasses
import tracemalloc
from typing import Any

import numpy as np
import pytest
import torch

import posenc.support.memory as memory
from hostile import Unread
from posenc import PosEncError, timestep_embedding
from posenc.timesteps import Diffusers, Flux, GuidedDiffusion

T = torch.rand(4096, generator=torch.Generator().manual_seed(31), dtype=torch.float64)
TORCH = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "float64": torch.float64}


def _reference_times(t: torch.Tensor, dtype: torch.dtype, factor: float) -> np.ndarray:
    """The reference's product, by torch itself: ``time_factor * t`` with t in the pipeline's dtype."""
    return (factor * t.to(dtype)).double().numpy()


@pytest.mark.parametrize("factor", [1000.0, 0.1, 1 / 3, 999.9])
@pytest.mark.parametrize("time_dtype", ["bfloat16", "float16", "float32", "float64", "input"])
def test_flux_times_are_the_references_torch_multiply(factor, time_dtype):
    t = T.float() if time_dtype == "input" else T  # "input": t's own dtype, float32 here
    name = "float32" if time_dtype == "input" else time_dtype
    got = timestep_embedding(t.numpy(), 16, convention=Flux(time_factor=factor, time_dtype=time_dtype))
    want = timestep_embedding(_reference_times(t, TORCH[name], factor), 16, convention=GuidedDiffusion())
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_integer_steps_with_input_take_torchs_promotion_to_float32():
    steps = np.arange(0, 20000, 7)
    got = timestep_embedding(steps, 16, convention=Flux(time_factor=0.1, time_dtype="input"))
    ref = (torch.from_numpy(steps) * 0.1)  # an integer tensor times a float: float32
    assert ref.dtype == torch.float32
    want = timestep_embedding(ref.double().numpy(), 16, convention=GuidedDiffusion())
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_diffusers_flux_transformer_product_is_the_same():
    # diffusers' FluxTransformer2DModel.forward: timestep.to(hidden_states.dtype) * 1000
    t = T.to(torch.bfloat16)
    ref = (t.to(torch.bfloat16) * 1000).double().numpy()
    got = timestep_embedding(T.numpy(), 8, convention=Flux(time_dtype="bfloat16"))
    assert np.array_equal(got, timestep_embedding(ref, 8, convention=GuidedDiffusion()))


class _Raises:
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize(("value", "named"), [
    (torch.tensor([1.0], dtype=torch.bfloat16), r"t must be real numbers, got a torch\.Tensor of dtype bfloat16 on "
                                                r"cpu, which NumPy cannot read: pass t\.float\(\)"),
    (torch.tensor([1.0], device="meta"), r"t must be real numbers, got a torch\.Tensor of dtype float32 on meta"),
    (torch.tensor([1.0], requires_grad=True), r"requires grad: pass t\.detach\(\)"),
    (_Raises(), r"t must be real numbers, got .*_Raises.* reading it raised RuntimeError: boom"),
])
def test_what_numpy_cannot_read_is_refused_by_name(value, named):
    with pytest.raises(PosEncError, match=named):
        timestep_embedding(value, 8)


def test_a_huge_view_is_refused_before_it_is_read():
    # was 4.0 s and 3.5 GB of reading a broadcast view before the refusal
    with pytest.raises(PosEncError, match=r"timestep embedding of shape \(200000000, 65536\) in float32 needs"):
        timestep_embedding(Unread((2 * 10**8,), np.int64), 65536)
    tracemalloc.start()
    try:
        with pytest.raises(PosEncError, match=r"timestep embedding of shape \(200000000, 65536\) in float32 needs"):
            timestep_embedding(np.broadcast_to(np.int64(1), (2 * 10**8,)), 65536)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


N = 400_000


@pytest.mark.parametrize("convention", ["diffusers", Flux(time_dtype="bfloat16"), Flux(time_factor=0.1,
                                                                                       time_dtype="float16")])
@pytest.mark.parametrize("as_list", [False, True])
def test_the_size_check_covers_the_measured_peak(monkeypatch, convention, as_list):
    t = np.random.default_rng(5).uniform(0, 1, N // (4 if as_list else 1))
    args = t.tolist() if as_list else t

    def call() -> Any:
        return timestep_embedding(args, 64, convention=convention)

    call()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    monkeypatch.setattr(memory, "_memory", lambda: peak - 1)
    with pytest.raises(PosEncError, match=r"more than this machine's .* of memory"):
        call()
    monkeypatch.setattr(memory, "_memory", lambda: 6 * peak)
    call()


@dataclasses.dataclass(frozen=True)
class _JunkTimes(Diffusers):
    def times(self, t, given):
        return "x"


@dataclasses.dataclass(frozen=True)
class _ShortTimes(Diffusers):
    def times(self, t, given):
        return t[:1], True


@dataclasses.dataclass(frozen=True)
class _NaNTimes(Diffusers):
    def times(self, t, given):
        return t * np.nan, True


@dataclasses.dataclass(frozen=True)
class _RaisingTimes(Diffusers):
    def times(self, t, given):
        raise KeyError("k")


@pytest.mark.parametrize(("preset", "why"), [
    (_JunkTimes(), r"\.times\(\.\.\.\) returned 'x'; expected \(times, exact\)"),
    (_ShortTimes(), r"\.times\(\.\.\.\) returned .*expected \(times, exact\): a real array of t's shape \(2,\)"),
    (_NaNTimes(), r"\.times\(\.\.\.\) returned the non-finite time nan for t=1\.0"),
    (_RaisingTimes(), r"\.times\(\.\.\.\) raised KeyError: 'k'"),
], ids=["junk", "short", "nan", "raises"])
def test_a_presets_times_that_return_junk_are_refused_naming_it(preset, why):
    # before: a raw unpacking ValueError, a wrong-shaped table, NaN channels, a raw KeyError
    with pytest.raises(PosEncError, match=why):
        timestep_embedding([1.0, 2.0], 8, convention=preset)
