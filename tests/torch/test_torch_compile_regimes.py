"""Modules whose rows follow the length, under torch.compile: eager's bits, or one error naming posenc (issue 18).

DynamicNTK and LongRoPE without ``seq_len`` pick their frequencies from each
call's length, and xPos without ``seq_len`` its centre: compiled, that choice
is made on the host from the call's real length (a graph break), and under
``fullgraph=True`` it is refused with a line naming posenc and ``seq_len``,
never silently the short regime. ALiBi distances beyond the rows held are
served on the host too (eager grows them), or refused naming ``reserve()``.
"""

from __future__ import annotations

import pytest
import torch

import posenc
from posenc import DynamicNTK, LongRoPE, PosEncError, XPos
from posenc.torch import AlibiBias, RotaryEmbedding, positions_from_cu_seqlens

H = 64


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _qk(s, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, 2, s, H, generator=g).to(dtype), torch.randn(1, 1, s, H, generator=g).to(dtype)


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def _longrope():
    return LongRoPE(tuple(1.0 + i / 32 for i in range(32)), tuple(2.0 + i / 8 for i in range(32)), 16)


def _fullgraph_error(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:  # Dynamo's Unsupported (a RuntimeError subclass in torch 2.13)
        fn(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("scaling", [DynamicNTK(2.0, 16), _longrope()], ids=["dynamic_ntk", "longrope"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_length_dependent_scalings_follow_the_real_length_when_compiled(scaling, dynamic):
    # main: the compiled forward kept the short regime's table (max error 2.4, LongRoPE 5.9)
    eager, compiled_module = RotaryEmbedding(H, scaling=scaling), RotaryEmbedding(H, scaling=scaling)
    compiled = torch.compile(compiled_module, dynamic=dynamic, backend="aot_eager")
    for s, off in ((40, 0), (8, 0), (30, 5)):  # long, short again, long at an offset
        q, k = _qk(s, seed=s)
        want = eager(q, k, offset=off)
        assert _same(compiled(q, k, offset=off), want), (s, off)
        pos = torch.arange(off, off + s)
        assert _same(compiled(q, k, positions=pos), want), (s, off)
    short = RotaryEmbedding(H)(q, k, offset=5)  # the long regime really differs from the plain rotation
    assert not torch.equal(want[0], short[0])


@pytest.mark.parametrize("scaling", [DynamicNTK(2.0, 16), _longrope()], ids=["dynamic_ntk", "longrope"])
def test_fullgraph_refuses_a_length_dependent_scaling_without_seq_len_by_name(scaling):
    m = RotaryEmbedding(H, scaling=scaling)
    q, k = _qk(40)
    message = _fullgraph_error(torch.compile(m, fullgraph=True, backend="aot_eager"), q, k)
    assert "posenc.torch.RotaryEmbedding" in message and "seq_len" in message, message
    fixed = RotaryEmbedding(H, scaling=scaling, seq_len=40)  # a fixed length compiles in one graph
    compiled = torch.compile(fixed, fullgraph=True, dynamic=True, backend="aot_eager")
    assert _same(compiled(q, k), RotaryEmbedding(H, scaling=scaling, seq_len=40)(q, k))


def test_xpos_without_seq_len_compiled_on_40000_tokens_is_finite_and_eager():
    # main: k held 10,476 inf/NaN entries from position 35,809 (the rows kept the centre 0)
    s = 40_000
    q, k = _qk(s)
    want = RotaryEmbedding(H, xpos=XPos())(q, k)
    got = torch.compile(RotaryEmbedding(H, xpos=XPos()), backend="aot_eager")(q, k)
    assert torch.isfinite(got[1]).all() and _same(got, want)


def test_xpos_factors_beyond_float16_raise_posenc_error_when_compiled_too():
    q, k = _qk(40_000, dtype=torch.float16)
    with pytest.raises(PosEncError, match="float16"):
        RotaryEmbedding(H, xpos=XPos())(q, k)
    with pytest.raises(PosEncError, match="float16"):
        torch.compile(RotaryEmbedding(H, xpos=XPos()), backend="aot_eager")(q, k)
    # a fixed centre whose held rows overflow float16 far from it: the positions asked are checked, as eager
    fixed = RotaryEmbedding(H, xpos=XPos(), seq_len=2, max_len=8000)  # float16 keys overflow from p ≈ 4540
    compiled = torch.compile(fixed, dynamic=True, backend="aot_eager")
    q, k = _qk(16, dtype=torch.float16)
    assert _same(compiled(q, k, offset=3), fixed(q, k, offset=3))
    with pytest.raises(PosEncError, match="float16"):
        fixed(q, k, offset=6000)
    with pytest.raises(PosEncError, match="float16"):
        compiled(q, k, offset=6000)


def test_xpos_fullgraph_without_seq_len_names_seq_len():
    q, k = _qk(8)
    message = _fullgraph_error(torch.compile(RotaryEmbedding(H, xpos=XPos()), fullgraph=True, backend="aot_eager"),
                               q, k)
    assert "posenc.torch.RotaryEmbedding" in message and "seq_len" in message, message


def test_xpos_reserve_holds_the_rows_a_fullgraph_compile_reads():
    m = RotaryEmbedding(H, xpos=XPos(), seq_len=8192, max_len=16)
    m.reserve(8192)
    compiled = torch.compile(m, fullgraph=True, dynamic=True, backend="aot_eager")
    q, k = _qk(8)
    assert _same(compiled(q, k, offset=8000), m(q, k, offset=8000))


@pytest.mark.parametrize("dynamic", [False, True])
def test_alibi_compiled_beyond_its_rows_is_eager(dynamic):
    # main: an in-graph RuntimeError (the gather's assert); eager grows the rows
    want = AlibiBias(4)(2, 10000, offset=9998)
    compiled = torch.compile(AlibiBias(4), dynamic=dynamic, backend="aot_eager")
    assert torch.equal(compiled(2, 10000, offset=9998), want)
    assert torch.equal(compiled(3, 7, offset=4), AlibiBias(4)(3, 7, offset=4))


def test_alibi_fullgraph_beyond_its_rows_names_reserve():
    m = AlibiBias(4, causal=False)
    message = _fullgraph_error(torch.compile(m, fullgraph=True, backend="aot_eager"), 2, 10000, offset=9998)
    assert "posenc.torch.AlibiBias" in message and "reserve(" in message, message
    m.reserve(10000)
    compiled = torch.compile(m, fullgraph=True, dynamic=True, backend="aot_eager")
    assert torch.equal(compiled(2, 10000, offset=9998), AlibiBias(4, causal=False)(2, 10000, offset=9998))


def test_the_issue_reproducer_gives_eager_signs():
    f = lambda t: torch.as_tensor(posenc.encode(t.numpy(), 4))  # noqa: E731 - the issue's own line
    t = torch.tensor([0.0, 1.0, 3.0])
    got, want = torch.compile(f, backend="aot_eager")(t), f(t)
    assert torch.equal(got, want) and torch.equal(torch.signbit(got), torch.signbit(want))
    torch._dynamo.reset()  # Dynamo keeps one cache per code object: a new fullgraph compile needs a fresh one
    message = _fullgraph_error(torch.compile(f, fullgraph=True, backend="aot_eager"), t)
    assert "posenc.encode" in message and "fullgraph=False" in message, message


@pytest.mark.parametrize("fullgraph", [False, True])
def test_compiled_cu_seqlens_are_checked_in_the_graph(fullgraph):
    compiled = torch.compile(positions_from_cu_seqlens, fullgraph=fullgraph, dynamic=True, backend="aot_eager")
    assert compiled(torch.tensor([0, 3, 5])).tolist() == [0, 1, 2, 0, 1]
    with pytest.raises(RuntimeError, match=r"posenc\.torch\.positions_from_cu_seqlens"):  # not positions [-2, -1, 0]
        compiled(torch.tensor([2, 5]))
