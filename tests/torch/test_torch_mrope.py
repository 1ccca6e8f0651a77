"""Multi-axis RoPE in posenc.torch: the NumPy core's values bit for bit, text tokens as 1-D RoPE, HF's
Qwen2-VL / Qwen3-VL agreement, and the module's guarantees (state_dict, bf16, compile, the shared lookup).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posenc
from posenc import PosEncError
from posenc.torch import RotaryEmbedding, apply_rope

H = 64
QWEN2 = {"sections": (8, 12, 12), "base": 1e6}  # Qwen2-VL's (16, 24, 24) at head_dim 64
QWEN3 = {"sections": (12, 10, 10), "section_layout": "interleaved", "base": 5e6}
AXIAL = {"sections": (16, 16), "ladder": "per_axis"}


def mrope_positions(text: int, thw: tuple[int, int, int], after: int) -> np.ndarray:
    """(t, h, w) of text, one grid, text: posenc.mrope_positions (checked against get_rope_index in test_mrope_ids)."""
    return posenc.mrope_positions([posenc.Text(text), posenc.VisionGrid(*thw), posenc.Text(after)])[0]


def _qk(b=2, nh=4, nkv=2, s=10, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, nh, s, H, generator=g).to(dtype), torch.randn(b, nkv, s, H, generator=g).to(dtype)


@pytest.mark.parametrize("kw", [QWEN2, QWEN3], ids=["contiguous", "interleaved"])
def test_module_equals_numpy_bit_for_bit(kw):
    pos = mrope_positions(7, (2, 3, 4), 5)  # [s, 3]
    q, k = _qk(s=len(pos))
    rope = RotaryEmbedding(H, **kw)
    rq, rk = rope(q, k, positions=torch.from_numpy(pos))
    assert np.array_equal(rq.numpy(), posenc.apply_rope(q.numpy(), pos, **kw))
    assert np.array_equal(rk.numpy(), posenc.apply_rope(k.numpy(), pos, **kw))
    cos, sin = rope.cos_sin(len(pos), positions=torch.from_numpy(pos))
    c, s = posenc.rope_cos_sin(pos, H, **kw)
    assert np.array_equal(cos.numpy(), c) and np.array_equal(sin.numpy(), s)
    # per-row positions [b, s, 3]: each row its own
    bpos = np.stack([pos, pos + 1000])
    rq, _ = rope(q, k, positions=torch.from_numpy(bpos))
    assert np.array_equal(rq.numpy(), posenc.apply_rope(q.numpy(), bpos[:, None], **kw))
    assert np.array_equal(apply_rope(q, bpos, **kw).numpy(), rq.numpy())


def test_axial_module_equals_numpy():
    hw = np.array([[i, j] for i in range(5) for j in range(7)])
    q, k = _qk(s=len(hw))
    rope = RotaryEmbedding(H, **AXIAL)
    assert np.array_equal(rope(q, k, positions=torch.from_numpy(hw))[0].numpy(),
                          posenc.apply_rope(q.numpy(), hw, **AXIAL))


@pytest.mark.parametrize("kw", [QWEN2, QWEN3], ids=["contiguous", "interleaved"])
def test_text_tokens_are_plain_rope_and_share_the_lookup(kw):
    q, k = _qk(s=50)
    rope = RotaryEmbedding(H, max_len=0, **kw)
    plain = RotaryEmbedding(H, base=kw["base"])
    p = torch.arange(100, 150)
    by_axes = rope(q, k, positions=p[:, None].expand(50, 3))
    by_offset = rope(q, k, offset=100)
    want = plain(q, k, offset=100)
    assert torch.equal(by_axes[0], want[0]) and torch.equal(by_offset[0], want[0])
    assert torch.equal(by_axes[1], want[1])
    # one table serves both: the multi-axis call grew the rows the 1-D call then read
    table = rope.cache.table
    assert rope.cache.held()[0] <= 100 and rope.cache.held()[1] >= 150
    rope(q, k, offset=100)
    assert rope.cache.table is table


@pytest.mark.parametrize("kind", ["qwen2", "qwen3"])
def test_transformers_agree(kind):
    from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb

    if kind == "qwen2":
        from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
        from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding as Rotary

        cfg = Qwen2VLTextConfig(hidden_size=512, num_attention_heads=8, num_key_value_heads=8,
                                rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]}, rope_theta=1e6)
    else:
        from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
        from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding as Rotary

        cfg = Qwen3VLTextConfig(hidden_size=512, num_attention_heads=8, num_key_value_heads=8, head_dim=64,
                                rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_interleaved": True,
                                                 "mrope_section": [12, 10, 10]})
    hf = Rotary(cfg)
    ours = posenc.from_hf_config(cfg)
    rope = RotaryEmbedding(ours.head_dim, layout=ours.layout, **ours.kwargs())
    pos = mrope_positions(20, (2, 8, 10), 12)
    q, k = _qk(b=1, s=len(pos))
    ids = torch.from_numpy(pos).T[:, None, :]  # HF's [3, b, s]
    cos, sin = hf(q, ids)
    hq, hk = apply_rotary_pos_emb(q, k, cos, sin)
    mq, mk = rope(q, k, positions=ids.permute(1, 2, 0))  # the documented conversion
    # HF's float32 angles at positions < 200: |Δangle| <= 200·2**-24; q, k of size ~4
    assert (mq - hq).abs().max() <= 1e-4 and (mk - hk).abs().max() <= 1e-4


def test_bf16_is_one_rounding_of_the_float32_rotation():
    pos = torch.from_numpy(mrope_positions(3, (1, 4, 4), 3))
    q, k = _qk(s=len(pos), dtype=torch.bfloat16)
    rope = RotaryEmbedding(H, **QWEN3)
    got = rope(q, k, positions=pos)
    want = rope(q.float(), k.float(), positions=pos)
    assert got[0].dtype == torch.bfloat16
    assert torch.equal(got[0], want[0].to(torch.bfloat16)) and torch.equal(got[1], want[1].to(torch.bfloat16))


def test_not_in_state_dict_and_survives_casts_and_meta():
    rope = RotaryEmbedding(H, max_len=16, **QWEN2)
    assert rope.state_dict() == {}
    pos = torch.from_numpy(mrope_positions(4, (1, 2, 2), 2))
    q, k = _qk(s=len(pos))
    want = rope(q, k, positions=pos)
    cast = RotaryEmbedding(H, max_len=16, **QWEN2).to(torch.bfloat16)
    assert cast.cache.table.dtype == torch.float32
    assert torch.equal(cast(q, k, positions=pos)[0], want[0])
    with torch.device("meta"):
        meta = RotaryEmbedding(H, max_len=16, **QWEN2)
    meta.to_empty(device="cpu")
    assert torch.equal(meta(q, k, positions=pos)[1], want[1])
    assert "sections" in repr(rope)


def test_compile_fullgraph_with_multi_axis_positions():
    rope = RotaryEmbedding(H, **QWEN2)
    compiled = torch.compile(rope, fullgraph=True, backend="aot_eager")
    torch._dynamo.reset()
    try:
        pos = torch.from_numpy(mrope_positions(10, (2, 6, 6), 10))
        q, k = _qk(s=len(pos), dtype=torch.bfloat16)
        got = compiled(q, k, positions=pos)
        want = rope(q, k, positions=pos)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    finally:
        torch._dynamo.reset()


@pytest.mark.parametrize(("call", "needle"), [
    (lambda r, q, k: r(q, k, positions=torch.arange(6)), r"\[s, 3\]"),
    (lambda r, q, k: r(q, k, positions=torch.zeros(6, 2, dtype=torch.long)), "permute"),
    (lambda r, q, k: r(q, k, positions=torch.zeros(3, 2, 6, dtype=torch.long)), r"\[b, s, 3\]"),
    (lambda r, q, k: apply_rope(q, np.zeros((6, 2)), **QWEN2), r"\[s, 3\]"),
    (lambda r, q, k: RotaryEmbedding(H, sections=(8, 8, 8)), "sum to rotary_dim"),
])
def test_bad_input_names_the_problem(call, needle):
    q, k = _qk(s=6)
    rope = RotaryEmbedding(H, **QWEN2)
    with pytest.raises(PosEncError, match=needle):
        call(rope, q, k)
