"""posenc.torch: the module and the functional encode, against the NumPy core and reported bugs."""

from __future__ import annotations

import copy
import io
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

import posenc
from posenc import PosEncError
from posenc.conventions import NAMES, Fairseq, Vaswani
from posenc.torch import SinusoidalPositionalEncoding, encode

D = 32


def _np_table(n, d=D, start=0, **kw):
    """posenc.encode of start … start+n-1: the module's contract, bit for bit."""
    return torch.from_numpy(posenc.encode(np.arange(start, start + n), d, **kw))


@pytest.mark.parametrize("name", NAMES)
def test_module_equals_numpy_table_for_every_convention(name):
    d = 31 if name not in ("vaswani", "fairseq") else 30
    m = SinusoidalPositionalEncoding(d, convention=name)
    x = torch.randn(3, 40, d)
    out = m(x, offset=5)
    t = _np_table(40, d, start=5, convention=name)
    assert out.dtype == torch.float32
    assert torch.equal(out, x + t)
    assert torch.equal(m(torch.zeros(40, d), offset=5), t)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_functional_encode_equals_numpy_bit_for_bit(dtype):
    ps = torch.tensor([0, 1, 7, 1000, 65537, 100000, -5])
    got = encode(ps, 64, dtype=dtype)
    want = posenc.encode(ps.numpy(), 64, dtype=str(dtype).removeprefix("torch."))
    assert got.dtype == dtype and torch.equal(got, torch.from_numpy(want))
    # any layout / convention, float positions
    fp = torch.tensor([[0.5, 2.25], [1e6 + 0.5, -3.0]], dtype=torch.float64)
    assert torch.equal(
        encode(fp, 10, convention="keras", dtype=dtype),
        torch.from_numpy(posenc.encode(fp.numpy(), 10, convention="keras", dtype=str(dtype).removeprefix("torch."))),
    )


def test_functional_encode_bfloat16_is_rounded_once_from_float64():
    ps = torch.arange(0, 5000, 7)
    f64 = torch.from_numpy(posenc.encode(ps.numpy(), 16, dtype=np.float64))
    assert torch.equal(encode(ps, 16, dtype=torch.bfloat16), f64.to(torch.bfloat16))


def test_functional_encode_meta_and_bad_input():
    out = encode(torch.empty(3, 5, device="meta"), 8)
    assert out.device.type == "meta" and out.shape == (3, 5, 8)
    with pytest.raises(PosEncError, match="finite"):
        encode(torch.tensor([1.0, float("nan")]), 8)
    with pytest.raises(PosEncError, match="2\\*\\*53"):
        encode(torch.tensor([2**53]), 8)
    with pytest.raises(PosEncError, match="dtype"):
        encode(torch.tensor([1]), 8, dtype=torch.int32)
    with pytest.raises(PosEncError):
        encode(torch.tensor([True]), 8)


def test_incremental_decoding_equals_full_forward():
    m = SinusoidalPositionalEncoding(D)
    x = torch.randn(2, 37, D)
    full = m(x)
    steps = [m(x[:, :20], offset=0)]
    steps += [m(x[:, t : t + 1], offset=t) for t in range(20, 37)]
    assert torch.equal(torch.cat(steps, dim=1), full)
    # the same with explicit per-step positions and with tensor offsets
    pos_steps = [m(x[:, t : t + 1], positions=torch.tensor([t])) for t in range(37)]
    assert torch.equal(torch.cat(pos_steps, dim=1), full)
    tens_steps = [m(x[:, t : t + 1], offset=torch.tensor(t)) for t in range(37)]
    assert torch.equal(torch.cat(tens_steps, dim=1), full)


def test_left_padded_batch_equals_each_row_alone():
    m = SinusoidalPositionalEncoding(D, convention="fairseq")
    lengths = [6, 3, 1]
    x = torch.randn(3, 6, D)
    mask = torch.zeros(3, 6, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, 6 - n :] = 1
    positions = torch.cumsum(mask, dim=1) * mask - 1  # pads at -1: fairseq's zero padding row
    out = m(x, positions=positions)
    for b, n in enumerate(lengths):
        alone = m(x[b : b + 1, 6 - n :])
        assert torch.equal(out[b : b + 1, 6 - n :], alone)
        assert torch.equal(out[b, : 6 - n], x[b, : 6 - n])  # fairseq adds zeros at padding


def test_packed_sequences_and_per_row_offsets():
    m = SinusoidalPositionalEncoding(D)
    x = torch.randn(9, D)
    packed = m(x, positions=torch.tensor([0, 1, 2, 0, 1, 0, 1, 2, 3]))
    assert torch.equal(packed, torch.cat([m(x[:3]), m(x[3:5]), m(x[5:])]))
    xb = torch.randn(3, 4, D)
    per_row = m(xb, offset=torch.tensor([0, 10, 100]))
    for b, off in enumerate([0, 10, 100]):
        assert torch.equal(per_row[b], m(xb[b], offset=off))


def test_far_positions_are_exact_and_near_negatives_grow_the_table():
    m = SinusoidalPositionalEncoding(D)
    x = torch.zeros(1, 3, D)
    assert torch.equal(m(x, offset=100000)[0], _np_table(3, start=100000))
    assert (m.cache.start, m.cache.stop) == (0, 4096)  # far from the rows held: computed, not kept
    neg = m(torch.zeros(3, D), positions=torch.tensor([-3, -1, 2]))
    assert torch.equal(neg, torch.from_numpy(posenc.encode([-3, -1, 2], D)))
    assert m.cache.start == -3 and m.cache.stop == 4096


def test_rows_do_not_depend_on_how_the_table_grew():
    # one value per position: grown in pieces, from the middle, or at once, and per rank (test_distributed)
    a, b, c = (SinusoidalPositionalEncoding(64) for _ in range(3))
    a(torch.zeros(6000, 64))
    b(torch.zeros(1, 1, 64), offset=4097)
    b(torch.zeros(1, 3000, 64), offset=3000)
    b(torch.zeros(1, 6000, 64))
    for t in range(0, 6000, 700):
        c(torch.zeros(1, 700, 64), offset=t)
    rows = torch.arange(6000)
    ref = a.cache.lookup(6000, positions=rows)
    assert torch.equal(b.cache.lookup(6000, positions=rows), ref)
    assert torch.equal(c.cache.lookup(6000, positions=rows), ref)
    assert torch.equal(ref, _np_table(6000, 64))


def test_to_bfloat16_and_back_leaves_the_table_bit_identical():
    m = SinusoidalPositionalEncoding(D, max_len=300)
    before = m.cache.table.clone()
    m.to(torch.bfloat16).to(torch.float32)
    assert m.cache.table.dtype == torch.float32 and torch.equal(m.cache.table, before)
    m.half().double().float()
    assert torch.equal(m.cache.table, before)
    m.to(torch.bfloat16)
    x = torch.randn(2, 10, D, dtype=torch.bfloat16)
    out = m(x)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, (x.float() + _np_table(10)).to(torch.bfloat16))  # rounded once


def test_a_table_cast_or_replaced_from_outside_is_recomputed():
    # what FSDP's buffer casts or accelerate's buffer materialisation do
    m = SinusoidalPositionalEncoding(D, max_len=64)
    m.cache.table = m.cache.table.to(torch.bfloat16)
    assert torch.equal(m(torch.zeros(64, D)), _np_table(64))
    m.cache.table = torch.empty_like(m.cache.table)  # garbage, float32
    assert torch.equal(m(torch.zeros(64, D)), _np_table(64))


def test_state_dict_has_no_table_and_legacy_keys_load():
    m = SinusoidalPositionalEncoding(D, max_len=16)
    assert m.state_dict() == {}
    m.load_state_dict({}, strict=True)
    model = torch.nn.Sequential(torch.nn.Linear(D, D), SinusoidalPositionalEncoding(D))
    assert set(model.state_dict()) == {"0.weight", "0.bias"}
    # the PyTorch tutorial's persistent `pe` buffer [L, 1, d], its own float32 arithmetic
    pos = torch.arange(100, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * (-math.log(10000.0) / D))
    pe = torch.zeros(100, 1, D)
    pe[:, 0, 0::2] = torch.sin(pos * div)
    pe[:, 0, 1::2] = torch.cos(pos * div)
    sd = {**model.state_dict(), "1.pe": pe, "1._float_tensor": torch.zeros(1)}
    model.load_state_dict(sd, strict=True)
    # a fairseq table is not this convention's: refuse it instead of silently swapping conventions
    fs = torch.from_numpy(posenc.table(100, D, start=-2, convention="fairseq"))
    with pytest.raises(PosEncError, match="differs from Vaswani"):
        model.load_state_dict({**model.state_dict(), "1.weights": fs}, strict=True)
    fs_model = SinusoidalPositionalEncoding(D, convention="fairseq")
    fs_model.load_state_dict({"weights": fs}, strict=True)


def test_meta_construction_then_to_empty():
    with torch.device("meta"):
        m = SinusoidalPositionalEncoding(D, max_len=128)
    assert m.cache.table.is_meta
    m.to_empty(device="cpu")
    assert torch.equal(m.cache.table, _np_table(128))
    assert float(m.cache.table[0, 1]) == 1.0  # cos(0): not 6.93e-18 (transformers#45902)
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(D, D), SinusoidalPositionalEncoding(D, max_len=8))
    model.to_empty(device="cpu")
    assert torch.equal(model[1](torch.zeros(8, D)), _np_table(8))


def test_meta_inputs_give_meta_outputs_and_real_inputs_recompute():
    m = SinusoidalPositionalEncoding(D, max_len=16)
    out = m(torch.empty(2, 40, D, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 40, D)
    assert torch.equal(m(torch.zeros(40, D)), _np_table(40))


def test_dtype_hijacks_do_not_reach_the_table(monkeypatch):
    ref = _np_table(64)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.equal(SinusoidalPositionalEncoding(D)(torch.zeros(64, D, dtype=torch.float32)), ref)
    finally:
        torch.set_default_dtype(old)
    # DeepSpeed zero.Init turns float aranges into bf16 (transformers#28685)
    real_arange = torch.arange

    def hijacked(*args, **kwargs):
        if kwargs.get("dtype") is not None and kwargs["dtype"].is_floating_point:
            kwargs["dtype"] = torch.bfloat16
        return real_arange(*args, **kwargs)

    monkeypatch.setattr(torch, "arange", hijacked)
    assert torch.equal(SinusoidalPositionalEncoding(D)(torch.zeros(64, D)), ref)
    assert torch.equal(SinusoidalPositionalEncoding(D)(torch.zeros(1, 4, D), offset=torch.tensor(60))[0], ref[60:])


def test_autocast_changes_nothing():
    m = SinusoidalPositionalEncoding(D)
    x = torch.randn(2, 50, D)
    plain = m(x, offset=65536)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under = m(x, offset=65536)
    assert under.dtype == torch.float32 and torch.equal(under, plain)


def test_gradients_flow_to_x_and_inference_mode_tables_train():
    m = SinusoidalPositionalEncoding(D)
    with torch.inference_mode():
        m(torch.zeros(1, 500, D))  # the table grows inside inference_mode
    x = torch.randn(2, 500, D, requires_grad=True)
    (m(x) * 3).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 3.0))
    assert not m.cache.table.requires_grad and not m.cache.table.is_inference()


def test_dropout_only_in_training():
    m = SinusoidalPositionalEncoding(D, dropout=0.5)
    x = torch.ones(4, 64, D)
    m.eval()
    assert torch.equal(m(x), x + _np_table(64))
    m.train()
    torch.manual_seed(0)
    out = m(x)
    assert (out == 0).any() and not torch.equal(out, x + _np_table(64))


def test_numpy_integer_offsets_and_returned_tensors():
    m = SinusoidalPositionalEncoding(D)
    x = torch.zeros(2, 5, D)
    want = m(x, offset=3)
    for off in (np.int64(3), np.int16(3)):
        assert torch.equal(m(x, offset=off), want)
    want.mul_(0)  # the output is the caller's: nothing of the table
    assert torch.equal(m(x, offset=3)[0], _np_table(5, start=3))


def test_two_dimensional_input_and_device_of_output():
    m = SinusoidalPositionalEncoding(D)
    x = torch.randn(10, D, dtype=torch.float64)
    out = m(x, offset=3)
    assert out.dtype == torch.float64 and out.device == x.device
    assert torch.equal(out, x + _np_table(10, start=3, dtype=np.float64))  # float64 rows for float64 x


def test_deepcopy_and_pickle_round_trip():
    m = SinusoidalPositionalEncoding(D, convention=Fairseq(padding_idx=0), max_len=32)
    x = torch.randn(2, 32, D)
    for other in (copy.deepcopy(m), _reload(m)):
        assert torch.equal(other(x), m(x))
        other(torch.zeros(1, 100, D))  # grows its own table, as exactly
        assert torch.equal(other.cache.table[:100], m(torch.zeros(100, D)))


def _reload(m):
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m: m(torch.zeros(2, 4, D + 1)), "last dimension"),
        (lambda m: m(torch.zeros(4, D, dtype=torch.long)), "floating"),
        (lambda m: m(torch.zeros(1, 2, 4, D)), "\\[b, s, d\\]"),
        (lambda m: m(torch.zeros(2, 4, D), positions=torch.arange(5)), "shape"),
        (lambda m: m(torch.zeros(2, 4, D), positions=torch.zeros(3, 4, dtype=torch.long)), "shape"),
        (lambda m: m(torch.zeros(4, D), positions=torch.zeros(1, 4, dtype=torch.long)), "shape"),
        (lambda m: m(torch.zeros(2, D), positions=torch.tensor([0.0, float("nan")])), "nan"),
        (lambda m: m(torch.zeros(2, D), positions=torch.tensor([0.0, 2.0**53])), "2\\*\\*53"),
        (lambda m: m(torch.zeros(2, D), positions=torch.tensor([0, 2**53])), "2\\*\\*53"),
        (lambda m: m(torch.zeros(2, D), positions=torch.tensor([0.0, 2.5])), "integers"),
        (lambda m: m(torch.zeros(2, D), positions=torch.tensor([True, False])), "integers"),
        (lambda m: m(torch.zeros(2, D), positions=[0, 1]), "torch.Tensor"),
        (lambda m: m(torch.zeros(2, D), positions=torch.arange(2), offset=3), "either"),
        (lambda m: m(torch.zeros(2, D), positions=torch.arange(2), offset=torch.tensor(0)), "either"),
        (lambda m: m(torch.zeros(2, D), offset=1.5), "offset"),
        (lambda m: m(torch.zeros(2, D), offset=2**53), "2\\*\\*53"),
        (lambda m: m(torch.zeros(3, 2, D), offset=torch.tensor([1, 2])), "offset"),
        (lambda m: m(torch.zeros(3, 2, D), offset=torch.tensor(1.0)), "offset"),
        (lambda m: m(torch.zeros(2, 5, D), positions=torch.arange(3)),
         r"\[s\] = \[5\] or \[b, s\] = \[2, 5\], got \[3\]"),
        (lambda m: m(torch.zeros(2, 5, D), offset=torch.tensor([1, 2, 3])), r"\[\] or \[b\] = \[2\], got \[3\]"),
        (lambda m: m(torch.zeros(2, D), offset=np.float32(1)), "offset must be an integer"),
    ],
)
def test_bad_input_raises_before_any_work(call, match):
    m = SinusoidalPositionalEncoding(D)
    before = (m.cache.start, m.cache.stop)
    with pytest.raises(PosEncError, match=match):
        call(m)
    assert (m.cache.start, m.cache.stop) == before


def test_bad_construction_raises_naming_the_argument():
    with pytest.raises(PosEncError, match="even"):
        SinusoidalPositionalEncoding(7)
    with pytest.raises(PosEncError, match="half_dim"):
        SinusoidalPositionalEncoding(3, convention="fairseq")
    with pytest.raises(PosEncError, match="dropout"):
        SinusoidalPositionalEncoding(8, dropout=1.0)
    with pytest.raises(PosEncError, match="part of the convention"):
        SinusoidalPositionalEncoding(8, base=100.0, convention="keras")
    m = SinusoidalPositionalEncoding(8, base=100.0, layout="split")
    assert m.convention == Vaswani(100.0, "split")


def test_missing_torch_names_the_extra():
    code = "import sys; sys.modules['torch'] = None\ntry:\n import posenc.torch\nexcept ImportError as e: print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'posenc[torch]'" in out.stdout, out
    # and the NumPy API never imports torch
    code = "import sys, posenc; posenc.encode(1, 4, convention='fairseq'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out
