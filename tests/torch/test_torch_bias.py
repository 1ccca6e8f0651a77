"""posenc.torch.AlibiBias and T5RelativeBias: the NumPy values bit for bit, HF's T5 module and checkpoint keys."""

from __future__ import annotations

import io
import sys
import threading

import numpy as np
import pytest
import torch
from transformers import T5Config
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.t5.modeling_t5 import T5Attention

from posenc import PosEncError, alibi_bias, t5_bucket
from posenc.bias import Mpt
from posenc.torch import AlibiBias, T5RelativeBias

CONVENTIONS = ["press", "bloom", "mpt", Mpt(alibi_bias_max=16)]


# ---------------------------------------------------------------- ALiBi

@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_alibi_module_equals_numpy_bit_for_bit(convention, causal: bool, dtype: torch.dtype) -> None:
    m = AlibiBias(12, convention=convention, causal=causal, max_len=0)  # every row grown on demand
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    for q, k, off in ((7, 7, 0), (1, 40, 39), (5, 300, 200), (64, 64, 0)):
        got = m(q, k, offset=off, dtype=dtype)
        want = alibi_bias(q, k, 12, offset=off, convention=convention, causal=causal, dtype=np_dtype)[None]
        assert got.dtype == dtype and torch.equal(got, torch.from_numpy(want))


def test_alibi_positions_batch_equals_numpy_and_transformers_bloom() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1]])
    pos = (mask.cumsum(-1) - 1) * mask
    for conv in ("press", "bloom", "mpt"):
        got = AlibiBias(8, convention=conv)(3, 8, offset=5, positions=pos)
        want = alibi_bias(3, 8, 8, offset=5, positions=pos.numpy(), convention=conv)
        assert got.shape == (2, 8, 3, 8) and torch.equal(got, torch.from_numpy(want))
    # 8 heads: slopes 2**-1 … 2**-8, exact in float32, so HF's tensor is equal bit for bit
    hf = build_alibi_tensor(mask, 8, torch.float32).reshape(2, 8, 1, 8)
    ours = AlibiBias(8, convention="bloom", causal=False)(1, 8, offset=7, positions=pos)
    assert torch.equal(ours, hf)


def test_alibi_bfloat16_is_rounded_from_the_float32_rows() -> None:
    m = AlibiBias(16, convention="bloom")
    assert torch.equal(m(20, 20, dtype=torch.bfloat16), m(20, 20).to(torch.bfloat16))


def test_alibi_slopes_are_exact_and_nothing_is_saved_or_cast() -> None:
    m = AlibiBias(12)
    assert m.slopes.dtype == torch.float64 and m.slopes[8].item() == 2**-0.5
    assert m.state_dict() == {}
    want = m(6, 6)
    m.to(torch.bfloat16)
    assert m.cache.table.dtype == torch.float32 and torch.equal(m(6, 6), want)
    with torch.device("meta"):
        meta = AlibiBias(12, max_len=64)
    meta.to_empty(device="cpu")
    assert torch.equal(meta(6, 6), want)
    buf = io.BytesIO()
    torch.save(AlibiBias(12), buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=False)(6, 6), want)


def test_alibi_decoding_rows_are_the_last_rows_of_the_prefill() -> None:
    m = AlibiBias(6, max_len=0)
    full = m(50, 50)
    for t in (0, 1, 17, 49):
        assert torch.equal(m(1, t + 1, offset=t)[..., : t + 1], full[:, :, t : t + 1, : t + 1])


def test_alibi_compile_fullgraph_across_lengths() -> None:
    m = AlibiBias(12, convention="press")
    m.reserve(512)
    compiled = torch.compile(m, fullgraph=True, dynamic=True, backend="aot_eager")
    torch._dynamo.reset()
    try:
        for q, k in ((3, 3), (17, 40), (1, 200)):
            assert torch.equal(compiled(q, k, offset=k - q), m(q, k, offset=k - q))
        pos = torch.randint(0, 300, (2, 50))
        assert torch.equal(compiled(4, 50, offset=46, positions=pos), m(4, 50, offset=46, positions=pos))
    finally:
        torch._dynamo.reset()


def test_alibi_threads_share_one_module_bit_for_bit() -> None:
    # 4 threads, one module per convention, each call growing the rows while others read them
    rng = np.random.default_rng(5)
    jobs = [[(int(rng.integers(1, 60)), int(rng.integers(0, 3000)), ("press", "bloom", "mpt")[t % 3])
             for _ in range(20)] for t in range(4)]
    modules = {c: AlibiBias(12, convention=c, max_len=0) for c in ("press", "bloom", "mpt")}
    errors: list[str] = []
    gate = threading.Barrier(4)

    def worker(t: int) -> None:
        gate.wait()
        for q, off, conv in jobs[t]:
            try:
                got = modules[conv](q, off + q, offset=off)
                want = torch.from_numpy(alibi_bias(q, off + q, 12, offset=off, convention=conv))[None]
                if not torch.equal(got, want):
                    errors.append(f"{conv} {q} {off}: wrong")
            except Exception as exc:  # counted: none may happen
                errors.append(repr(exc))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []


@pytest.mark.parametrize("call, fragment", [
    (lambda: AlibiBias(0), "n_heads"),
    (lambda: AlibiBias(8, convention="alibi"), "convention"),
    (lambda: AlibiBias(8, causal=1), "causal"),
    (lambda: AlibiBias(8)(5, 3), "q_len=5, k_len=3"),
    (lambda: AlibiBias(8)(2, 3, offset=-1), "offset=-1"),
    (lambda: AlibiBias(8)(2, 3, dtype=torch.int64), "dtype"),
    (lambda: AlibiBias(8)(2, 3, positions=torch.tensor([0.0, 1.0, 2.0])), "integer"),
    (lambda: AlibiBias(8)(2, 3, positions=torch.tensor([0, 1])), "positions"),
])
def test_alibi_bad_input(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PosEncError, match=fragment):
        call()


# ---------------------------------------------------------------- T5

def hf_attention(bidirectional: bool, nb: int = 32, md: int = 128, heads: int = 4) -> T5Attention:
    cfg = T5Config(d_model=16, d_kv=4, num_heads=heads, relative_attention_num_buckets=nb,
                   relative_attention_max_distance=md, is_decoder=not bidirectional)
    return T5Attention(cfg, has_relative_attention_bias=True, layer_idx=0)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("nb, md", [(32, 128), (64, 512), (18, 128)])
def test_t5_module_equals_hf_compute_bias_with_the_same_weights(bidirectional: bool, nb: int, md: int) -> None:
    torch.manual_seed(0)
    hf = hf_attention(bidirectional, nb, md)
    ours = T5RelativeBias(4, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    ours.load_state_dict({"relative_attention_bias.weight": hf.relative_attention_bias.weight.detach()})
    for q, k, past in ((10, 10, 0), (1, 3000, 2999), (7, 900, 300), (300, 300, 0)):
        want = hf.compute_bias(q, k, past_seen_tokens=past)
        assert torch.equal(ours(q, k, offset=past), want)


def test_t5_state_dict_maps_onto_a_t5_checkpoint_key() -> None:
    from transformers import T5Model

    cfg = T5Config(d_model=16, d_kv=4, num_heads=4, num_layers=1, d_ff=8, vocab_size=10)
    model = T5Model(cfg)
    sd = model.state_dict()
    for side, bi in (("encoder", True), ("decoder", False)):
        key = f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
        ours = T5RelativeBias(4, bidirectional=bi)
        ours.load_state_dict({"relative_attention_bias.weight": sd[key]}, strict=True)
        attn = getattr(model, side).block[0].layer[0].SelfAttention
        assert torch.equal(ours(9, 9), attn.compute_bias(9, 9))


def test_t5_buckets_follow_numpy_and_survive_casts_and_meta_init() -> None:
    m = T5RelativeBias(2)
    rel = torch.arange(-100_000, 100_001)
    assert torch.equal(m.bucket(rel), torch.from_numpy(t5_bucket(rel.numpy())))
    m.to(torch.bfloat16)
    assert m.relative_attention_bias.weight.dtype == torch.bfloat16  # the learned table is cast, as in HF
    assert torch.equal(m.bucket(rel), torch.from_numpy(t5_bucket(rel.numpy())))
    with torch.device("meta"):
        meta = T5RelativeBias(2, bidirectional=False)
    meta.to_empty(device="cpu")
    assert torch.equal(meta.bucket(rel), torch.from_numpy(t5_bucket(rel.numpy(), bidirectional=False)))
    assert sorted(meta.state_dict()) == ["relative_attention_bias.weight"]


def test_t5_compile_fullgraph() -> None:
    m = T5RelativeBias(4)
    compiled = torch.compile(m, fullgraph=True, dynamic=True, backend="aot_eager")
    torch._dynamo.reset()
    try:
        for q, k, off in ((5, 5, 0), (1, 400, 399), (30, 1000, 970)):
            assert torch.equal(compiled(q, k, offset=off), m(q, k, offset=off))
    finally:
        torch._dynamo.reset()


@pytest.mark.parametrize("call, fragment", [
    (lambda: T5RelativeBias(0), "n_heads"),
    (lambda: T5RelativeBias(4, num_buckets=1), "num_buckets"),
    (lambda: T5RelativeBias(4, max_distance=16), "max_distance"),
    (lambda: T5RelativeBias(4)(0, 3), "q_len"),
])
def test_t5_bad_input(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PosEncError, match=fragment):
        call()
