"""The torch modules under a hostile sweep (issue 18, section 4): sizes and the meta device.

Before: ``AlibiBias(8)(10**6, 10**6)``, ``T5RelativeBias(4)(1, 10**12)`` and
``positions_from_cu_seqlens(torch.tensor([0, 10**12]))`` reached torch's
allocator (a RuntimeError asking for 8 TB); ``T5RelativeBias(4)(30000, 30000)``
worked 17 s before it failed (its offsets, their clamp and the buckets are
three times its output); both bias modules built on the meta device raised
NotImplementedError in forward. Now each is sized, output and working tensors,
against its device before any work, and on meta returns a meta tensor of the
right shape and dtype.
"""

from __future__ import annotations

import tracemalloc

import pytest

torch = pytest.importorskip("torch")

import posenc.support.memory as memory  # noqa: E402
from posenc.errors import PosEncError  # noqa: E402
from posenc.torch import AlibiBias, T5RelativeBias, positions_from_cu_seqlens  # noqa: E402

GiB = 2**30


@pytest.mark.parametrize(("call", "message"), [
    (lambda: AlibiBias(8)(10**6, 10**6),
     r"ALiBi bias of shape \(1, 8, 1000000, 1000000\) in float32 needs 29\.1 TiB with .* of working arrays"),
    (lambda: T5RelativeBias(4)(1, 10**12), r"T5 bias of shape \(1, 4, 1, 1000000000000\) in float32 needs 14\.6 TiB"),
    (lambda: positions_from_cu_seqlens(torch.tensor([0, 10**12])),
     r"positions of cu_seqlens of shape \(1000000000000,\) in int64 needs 7\.3 TiB"),
])
def test_beyond_any_machine_is_refused_by_name(call, message):
    with pytest.raises(PosEncError, match=message) as info:  # once: torch's allocator, 8 TB asked for
        call()
    assert "more than this machine's" in str(info.value)


def test_t5_bias_whose_work_does_not_fit_is_refused_at_once(monkeypatch):
    # 30000**2 offsets: a 13.4 GiB output, 23.5 GiB of int64 offsets, clamp and buckets besides;
    # with 16 GiB (or this machine's, if smaller) it is refused before any tensor is made
    monkeypatch.setattr(memory, "_memory", lambda: 16 * GiB)
    m = T5RelativeBias(4)
    tracemalloc.start()
    try:
        with pytest.raises(PosEncError, match=r"T5 bias of shape \(1, 4, 30000, 30000\) in float32 needs 13\.4 GiB "
                                              r"with 23\.5 GiB of working arrays \(36\.9 GiB in all\)"):
            m(30000, 30000)  # once: 17 s of work, then a failure
        assert tracemalloc.get_traced_memory()[1] < 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("make", [lambda: AlibiBias(4), lambda: T5RelativeBias(4)])
def test_the_working_tensors_count(monkeypatch, make):
    m = make()
    out = m(200, 300)
    output = out.numel() * out.element_size()
    monkeypatch.setattr(memory, "_memory", lambda: output + 1)  # room for the output alone is not enough
    with pytest.raises(PosEncError, match="of working arrays"):
        m(200, 300)
    monkeypatch.setattr(memory, "_memory", lambda: 20 * output)
    assert torch.equal(m(200, 300), out)


def test_alibi_on_meta_returns_the_shape():
    with torch.device("meta"):
        m = AlibiBias(4)
    out = m(3, 5, dtype=torch.bfloat16)  # once: NotImplementedError from the cache
    assert out.is_meta and out.shape == (1, 4, 3, 5) and out.dtype == torch.bfloat16
    pos = torch.zeros(2, 5, dtype=torch.long, device="meta")
    assert m(3, 5, positions=pos).shape == (2, 4, 3, 5)
    assert AlibiBias(4)(3, 5, device="meta").is_meta


def test_t5_on_meta_returns_the_shape_and_loads_after():
    with torch.device("meta"):
        m = T5RelativeBias(4, bidirectional=False)
    out = m(3, 5)  # once: NotImplementedError
    assert out.is_meta and out.shape == (1, 4, 3, 5) and out.dtype == torch.float32
    rel = torch.arange(-2, 3, device="meta")
    assert m.bucket(rel).is_meta and m.bucket(rel).dtype == torch.long
    m.to_empty(device="cpu")  # deferred init: materialise, then load the weights
    ref = T5RelativeBias(4, bidirectional=False)
    m.load_state_dict(ref.state_dict())
    assert torch.equal(m(3, 5), ref(3, 5))


def test_cu_seqlens_on_meta_is_refused_by_name():
    with pytest.raises(PosEncError, match="meta device has no values"):
        positions_from_cu_seqlens(torch.tensor([0, 3], device="meta"))
