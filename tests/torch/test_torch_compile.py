"""torch.compile: no extra call needed, growth outside the graph, one clear line under fullgraph, eager's bits.

The modules hold rows for positions 0 … 4095 from construction (torchtune's
default ``max_seq_len``), so compiling a model needs no ``reserve()``. A
compile that may break the graph grows the rows outside it; under
``fullgraph=True`` a length beyond the rows fails with one line that names
``reserve()`` and ``max_len``. aot_eager runs dynamo's tracing (graph breaks,
guards, recompiles) without inductor's minutes of C++ builds; one slow test
runs the default backend.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._dynamo.utils import counters

from posenc.torch import RotaryEmbedding, SinusoidalPositionalEncoding

D = 32  # d_model of the sinusoid
H = 64  # head_dim of RoPE


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    yield
    torch.compiler.set_stance("default")
    torch._dynamo.reset()


def _qk(s, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, 4, s, H, generator=g).to(dtype), torch.randn(2, 2, s, H, generator=g).to(dtype)


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True)) if isinstance(a, tuple) else torch.equal(a, b)


def test_fullgraph_needs_no_reserve_and_never_recompiles_across_lengths():
    pe = SinusoidalPositionalEncoding(D)
    rope = RotaryEmbedding(H, base=5e5)
    cpe = torch.compile(pe, fullgraph=True, dynamic=True, backend="aot_eager")
    crope = torch.compile(rope, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, s in enumerate([5, 17, 64, 129]):
        x = torch.randn(2, s, D, requires_grad=True)
        out = cpe(x, offset=3 + s)
        assert torch.equal(out, pe(x, offset=3 + s))
        out.sum().backward()
        assert torch.equal(x.grad, torch.ones_like(x))
        pos = torch.randint(0, 4096, (2, s))
        assert torch.equal(cpe(x, positions=pos), pe(x, positions=pos))
        assert torch.equal(cpe(x, offset=torch.tensor([7, 4000 - s])), pe(x, offset=torch.tensor([7, 4000 - s])))
        q, k = _qk(s, seed=s)
        q.requires_grad_(True)
        got = crope(q, k, offset=torch.tensor(200))
        assert _same(got, rope(q, k, offset=200))
        got[0].float().sum().backward()
        assert _same(crope(q, k, positions=pos), rope(q, k, positions=pos))
        assert _same(crope(q, k, offset=4096 - s), rope(q, k, offset=4096 - s))
        if i == 0:
            torch.compiler.set_stance("fail_on_recompile")
    assert (pe.cache.start, pe.cache.stop) == (rope.cache.start, rope.cache.stop) == (0, 4096)


def test_a_compile_that_may_break_the_graph_grows_rows_outside_it():
    pe = SinusoidalPositionalEncoding(D)
    rope = RotaryEmbedding(H, base=5e5)
    cpe = torch.compile(pe, dynamic=True, backend="aot_eager")
    crope = torch.compile(rope, dynamic=True, backend="aot_eager")
    for s, off in ((8, 0), (20, 4090), (30, 9000), (3, 10**7), (8, np.int64(5))):
        x = torch.randn(1, s, D)
        assert torch.equal(cpe(x, offset=off), pe(x, offset=off))
        q, k = _qk(s)
        assert _same(crope(q, k, offset=off), rope(q, k, offset=off))
    assert pe.cache.stop >= 9030 and rope.cache.stop >= 9030  # grown, between two graphs
    assert pe.cache.stop < 10**7  # the far positions were computed for themselves only
    assert any("posenc" in r or "reserve(" in r for r in counters["graph_break"])


def test_fullgraph_beyond_the_rows_fails_with_one_line_naming_reserve():
    pe = SinusoidalPositionalEncoding(D)
    c = torch.compile(pe, fullgraph=True, dynamic=True, backend="aot_eager")
    x = torch.zeros(2, 8, D)
    assert torch.equal(c(x, offset=10), pe(x, offset=10))
    for where in ({"offset": 4090}, {"offset": torch.tensor(4090)}, {"positions": torch.arange(4090, 4098)}):
        with pytest.raises(RuntimeError) as info:
            c(x, **where)
        lines = [line for line in str(info.value).splitlines() if "reserve(" in line]
        assert len(lines) == 1 and "max_len" in lines[0], str(info.value)
    pe.reserve(8192)
    assert torch.equal(c(x, offset=4090), pe(x, offset=4090))
    assert torch.equal(c(x, positions=torch.arange(4090, 4098)), pe(x, offset=4090))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")  # inside inductor
def test_default_backend_gives_eager_bits_with_no_reserve():
    # inductor's fused kernels: float32 math, one rounding to bf16, no FMA contraction, as eager
    pe = SinusoidalPositionalEncoding(D, convention="fairseq")
    rope = RotaryEmbedding(H, base=5e5, rotary_dim=48)

    def step(x, q, k, offset):
        return (pe(x, offset=offset), *rope(q, k, offset=offset))

    compiled = torch.compile(step, dynamic=True)
    for s, off in ((100, 300), (37, 4000)):
        x = torch.randn(2, s, D, dtype=torch.bfloat16)
        q, k = _qk(s, seed=s)
        assert _same(compiled(x, q, k, off), step(x, q, k, off))
