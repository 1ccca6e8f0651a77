"""The 32-bit device path refuses positions it cannot hold: never NaN rows (posenc.triton.positions.check_range).

The torch integer operations (what an accelerator runs) are reached on CPU
with ``host_core=False``; the traced graphs (make_fx, torch.compile) carry
the same check as a device assert. Before this, an int64 position past int32
or a float past 2**31 gave NaN rows on a device, silently.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from posenc import PosEncError
from posenc.timesteps.conventions import Diffusers
from posenc.torch import NeRFEncoding, Timesteps
from posenc.torch._exact import LadderBuffers
from posenc.triton.positions import check_range


def _device_rows() -> LadderBuffers:
    return LadderBuffers(Diffusers(True, 0, 1, 10000).plan(8).ladder, host_core=False)  # the integer ops, on CPU


@pytest.mark.parametrize(("value", "shown"), [
    (2**31, "2147483648"), (-2**31 - 1, "-2147483649"), (2**40, "1099511627776"), (-(2**62), "-4611686018427387904"),
])
def test_an_int64_position_past_int32_is_refused_by_name_on_the_device_path(value, shown):
    lad = _device_rows()
    with pytest.raises(PosEncError, match=rf"position {shown} is outside \[-2\*\*31, 2\*\*31\)"):
        lad.sincos32(torch.tensor([3, value, 5], dtype=torch.int64))


@pytest.mark.parametrize("value", [2.0**31, -(2.0**31), 1e30, float("inf"), float("-inf"), float("nan")])
def test_a_float_position_past_2_31_or_not_finite_is_refused_on_the_device_path(value):
    lad = _device_rows()
    with pytest.raises(PosEncError, match=r"outside \|p\| < 2\*\*31"):
        lad.sincos32(torch.tensor([0.5, value]))


def test_the_edges_of_the_device_range_still_compute():
    lad = _device_rows()
    s, c = lad.sincos32(torch.tensor([-2**31, 2**31 - 1, 0], dtype=torch.int64))
    assert torch.isfinite(s).all() and torch.isfinite(c).all()
    s, c = lad.sincos32(torch.tensor([2.0**31 * (1 - 2.0**-24), -1e9]))
    assert torch.isfinite(s).all() and torch.isfinite(c).all()


def test_narrow_integers_need_no_check_and_bfloat16_past_2_31_is_refused():
    check_range(torch.tensor([2**31 - 1], dtype=torch.int32), "torch")  # nothing to refuse
    with pytest.raises(PosEncError, match="outside"):
        _device_rows().sincos32(torch.tensor([3e9], dtype=torch.bfloat16))


def test_the_host_core_under_tracing_holds_int64_to_2_53_and_refuses_past_it():
    # traced on a CPU tensor the node runs the NumPy core (|p| < 2**53): 2**40 is exact there, 2**60 is refused
    m = Timesteps(16, True, 0)
    ok = torch.tensor([2**40, 7], dtype=torch.int64)
    gm = make_fx(m)(ok)
    assert torch.equal(gm(ok), m(ok))
    with pytest.raises(RuntimeError, match=r"outside \|p\| < 2\*\*53"):
        gm(torch.tensor([2**60, 7], dtype=torch.int64))  # was NaN channels


def test_a_traced_device_graph_asserts_instead_of_giving_nan():
    lad = _device_rows()
    gm = make_fx(lambda t: lad.sincos32(t))(torch.tensor([1, 2], dtype=torch.int64))
    s, _ = gm(torch.tensor([1, 2], dtype=torch.int64))
    assert torch.isfinite(s).all()
    with pytest.raises(RuntimeError, match=r"outside \[-2\*\*31, 2\*\*31\)"):
        gm(torch.tensor([1, 2**33], dtype=torch.int64))  # was NaN rows
    nerf = NeRFEncoding(4)
    gn = make_fx(nerf)(torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="x must be finite"):  # the field's own check, before the rows'
        gn(torch.full((2, 3), float("nan")))
    with pytest.raises(RuntimeError, match=r"outside \|p\| < 2\*\*31"):  # finite, past the 32-bit range
        gn(torch.full((2, 3), 3e9))


def test_timesteps_under_torch_compile_fullgraph_refuses_a_position_past_the_host_range():
    m = Timesteps(8, True, 0)
    fn = torch.compile(m, fullgraph=True, backend="eager")
    t = torch.tensor([3, 4], dtype=torch.int64)
    assert torch.equal(fn(t), m(t))
    with pytest.raises(RuntimeError, match="outside"):
        fn(torch.tensor([2**60, 4], dtype=torch.int64))


def test_the_host_range_holds_int64_up_to_2_53_exactly():
    # an int64 tensor compared with the float 2**53 is compared in float32, where 2**53 − 1 rounds to 2**53:
    # the edge was refused (and every int64 within 2**28 of it) though the host's core holds it
    check_range(torch.tensor([2**53 - 1, -(2**53) + 1, 2**53 - 2**28], dtype=torch.int64), "host")
    with pytest.raises(PosEncError, match=r"position 9007199254740992 is outside \|p\| < 2\*\*53"):
        check_range(torch.tensor([5, 2**53], dtype=torch.int64), "host")


@pytest.mark.parametrize("preset", ["diffusers", "flux"])
def test_float64_timesteps_under_make_fx_give_the_eager_bits_and_assert_on_nan(preset):
    # the float64 path traced: make_fx read t on the host before (an error), and nothing refused a NaN t
    m = Timesteps(16, True, 0) if preset == "diffusers" else Timesteps.from_convention(16, "flux")
    t = torch.tensor([0.25, 3.5, 999.0], dtype=torch.float64)
    gm = make_fx(m)(t)
    assert torch.equal(gm(t), m(t))
    for value in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(RuntimeError, match=r"posenc: t must be finite with \|t\| < 2\*\*53"):
            gm(torch.tensor([0.25, value, 1.0], dtype=torch.float64))
