"""What the fuzz suite found, pinned: each input once escaped as a non-PosEncError, hung, or named nothing.

The fuzz draws fresh examples; these stay, so each fix keeps its test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posenc
import posenc.torch as pt
from cli_helpers import run
from posenc import LongRoPE, PosEncError, XPos, conventions


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        # ValueError from np.asarray / broadcasting
        (lambda: posenc.apply_rope([[], [0]], [1, 2]), "x must be an array"),
        (lambda: posenc.shift([[], [0]], 1), "encoding must be an array"),
        (lambda: posenc.similarity([], [0, 0], 2), "p of shape (0,) and q of shape (2,) do not broadcast"),
        # messages that named nothing the caller gave
        (lambda: posenc.apply_rope(np.zeros((1, 0)), 1), "x.shape[-1] (head_dim)"),
        (lambda: posenc.permute_qk_weights(np.array([1, 2]), 2, "half", "half"), "w has 2 rows for n_heads = 2"),
        (lambda: posenc.rope_table(posenc.rope_frequencies(2), 2**53 - 10, 10**15),
         "positions start … start+length-1"),
        (lambda: posenc.rope_frequencies(16, scaling=LongRoPE([1.0] * 2, [1.0] * 2, 8)), "LongRoPE(short_factor"),
        (lambda: LongRoPE([], [], 8), "LongRoPE.short_factor must hold rotary_dim/2 factors"),
        (lambda: posenc.from_hf_config({"hidden_size": 2, "num_attention_heads": 2}),
         "hidden_size // num_attention_heads = 2 // 2"),
        (lambda: posenc.encode(1e308, 4), "got 1e+308"),  # not np.float64(1e+308)
        # OverflowError from huge integers in arithmetic or formatting
        (lambda: posenc.min_separation(10**400, 2), "(401 digits)"),
        (lambda: posenc.qk_permutation(2, 10**400, "half", "half"), "about 10**401 bytes"),
        (lambda: conventions.Tensor2Tensor(start_index=10**400), "start_index must be <="),
        (lambda: conventions.Fairseq(padding_idx=2**53 - 1), "padding_idx must be <= 9007199254740990"),
        (lambda: conventions.Tensor2Tensor(min_timescale=1e20), "they must lie in [2**-960, 2**53)"),
        # hangs: work or memory far beyond any machine, refused at once
        (lambda: posenc.min_separation(2**40, 512), "over the 2**36"),
        (lambda: posenc.qk_permutation(128, 10**12, "half", "interleaved"), "qk_permutation of shape"),
    ],
)
def test_found_by_the_fuzz(call, needle):
    with pytest.raises(PosEncError) as info:
        call()
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        # MemoryError traceback, then minutes of benchmark
        (["bench", "--shape", "1000000000000x512"], "--shape 1000000000000x512: a 1000000000000x512 table"),
        (["bench", "--shape", "4096x100000"], "D must be <= 65536"),
        # "positions must be finite": which one?
        (["shift", "--pos", "0", "--by", "1e400", "--d-model", "2"], "k must be finite, got 1e400"),
        (["shift", "--pos", "9007199254740991", "--by", "5", "--d-model", "2"], "the target P + K must satisfy"),
    ],
)
def test_command_lines_found_by_the_fuzz(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert needle in err


@pytest.mark.parametrize("context", ["inf", "nan", "-inf"])
def test_ladder_rope_context_not_finite(capsys, context):
    # math.ceil(inf) escaped as OverflowError (nan: ValueError) before the library saw the context
    code, out, err = run(capsys, "ladder", "--d-model", "2", "--context", context, "--rotary-dim", "2")
    assert code == 2 and out == ""
    assert err == f"posenc: error: context must be finite (float64: |x| < 1.8e308), got {context}\n"


_ARR = np.array([1.0, 2.0])


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        # issue 18, found by the pair fuzz (test_fuzz_pairs.py): a preset with the arguments it fixes;
        # NumPy's "truth value of an array is ambiguous" (base != 10000.0) before
        *((lambda c=c: posenc.encode(1, 4, convention=c, base=_ARR), "got base=[1.0, 2.0]")
          for c in conventions.NAMES),
        (lambda: posenc.table(3, 4, convention="keras", layout=np.array(["split", "x"])), "layout=array(['split'"),
        (lambda: posenc.encode_nd([[0, 1]], 8, convention="mae", base=_ARR), "got base=[1.0, 2.0] with convention"),
        # accepted silently before: a tensor base beside a preset (without one a tensor base is refused)
        (lambda: posenc.encode(1, 4, convention="vaswani", base=torch.tensor(10000.0)), "got base=tensor(10000.)"),
        # names compared as arrays: TypeError (unhashable), ambiguous truth, or passed as their one element
        (lambda: posenc.rope_frequencies(8, sections=(1, 1, 2), section_layout=np.array(["contiguous"])),
         "section_layout must be one of"),
        (lambda: posenc.rope_frequencies(8, sections=(1, 1, 2), ladder=np.array(["shared", "x"])), "ladder must be"),
        (lambda: posenc.Sections((2, 1, 1), layout=np.array(["interleaved"])), "section_layout must be one of"),
        (lambda: posenc.Sections((1, 1, 2), ladder=np.array(["shared", "a"])), "ladder must be one of"),
        (lambda: posenc.apply_rope(np.ones((3, 8)), [0, 1, 2], xpos=XPos(), role=np.array(["q", "k"])),
         "role must be 'q'"),
        (lambda: posenc.similarity(0, 0, 2, per_channel=_ARR > 1), "per_channel must be True or False"),
        (lambda: posenc.similarity(0, 0, 2, per_channel="no"), "per_channel must be True or False, got 'no'"),
        # ValueError from np.dtype(tensor); TypeError: iteration over a 0-d array
        (lambda: posenc.encode(1, 4, dtype=torch.tensor([1.0, 2.0])), "dtype must be one of"),
        (lambda: posenc.rope_frequencies(8, sections=np.array(3.0)), "sections must be a sequence"),
        (lambda: posenc.grid_report(np.array(3.0), 8), "sizes must be the grid's size"),
        (lambda: posenc.grid_similarity((2, 3), 8, np.array(1)), "patch must be coordinates"),
        # messages that named nothing the caller gave
        (lambda: posenc.grid_report(_ARR, 8), "sizes[0] (axis 0) must be an integer"),  # was "size of axis 0"
        (lambda: posenc.apply_rope(np.zeros((1, 2)), 0, scaling=posenc.NTK(2.0)), "(scaling=NTK(factor=2.0))"),
        (lambda: posenc.encode(None, 4), "positions must be real numbers, got None"),  # was "got nan"
        (lambda: posenc.encode([1, None], 4), "got [1, None]"),
    ],
)
def test_combinations_found_by_the_fuzz(call, needle):
    with pytest.raises(PosEncError) as info:
        call()
    assert needle in str(info.value)


def test_xpos_role_as_an_array_is_refused_not_read_as_k():
    # np.array(["q"]) in ("q", "k") is True, and str() of it is "['q']" != "q": the keys' factors were applied
    x = np.ones((3, 8))
    with pytest.raises(PosEncError, match="role must be 'q'"):
        posenc.apply_rope(x, [0, 1, 2], xpos=XPos(), role=np.array(["q"]))
    q, k = (posenc.apply_rope(x, [0, 1, 2], xpos=XPos(), role=r) for r in ("q", "k"))
    assert not np.array_equal(q, k)


_ROWS = pt.SinusoidalPositionalEncoding(4).cache.build


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        # RuntimeError "Boolean value of Tensor with more than one value is ambiguous"
        (lambda: pt.SinusoidalPositionalEncoding(4, convention="fairseq", base=torch.tensor([1.0, 2.0])),
         "got base=tensor([1., 2.])"),
        (lambda: pt.RotaryEmbedding(8, sequence_dim=torch.tensor([-2, -3])), "sequence_dim must be -2"),
        # RuntimeError from torch's allocator (a 140 TB embedding)
        (lambda: pt.T5RelativeBias(2**40), "n_heads must be <= 65536"),
        (lambda: pt.AlibiBias(2**40), "n_heads must be <= 65536"),
        # AttributeError, TypeError, or '4' read as (4,)
        (lambda: pt.TableCache(None, (2,)), "build must be a row builder"),
        (lambda: pt.TableCache(_ROWS, None), "row_shape must be the shape of one row"),
        (lambda: pt.TableCache(_ROWS, "4"), "row_shape must be the shape of one row, e.g. (64,), got '4'"),
        (lambda: pt.TableCache(_ROWS, (3,), stop=0).lookup(2), "expected (256, 3) ([count, *row_shape])"),
        # TypeError: unhashable type: 'list'
        (lambda: pt.encode(torch.tensor([0, 1]), 4, dtype=[torch.float32]), "dtype must be torch.float16"),
        # IndexError: tuple index out of range
        (lambda: pt.apply_rope(torch.tensor(1.0), torch.tensor([0])), "x must be [..., s, h_d]"),
        # the flattened shape [3, 12] was named, not the positions given
        (lambda: pt.RotaryEmbedding(8, sections=(1, 1, 2))(torch.zeros(2, 4, 8), torch.zeros(2, 4, 8),
                                                           positions=torch.zeros(3, 4, 3, dtype=torch.long)),
         "got [3, 4, 3]"),
        (lambda: pt.RotaryEmbedding(8, sections=(1, 1, 2)).rotate(torch.zeros(2, 2, 4, 8),
                                                                 positions=torch.zeros(3, 4, 3, dtype=torch.long)),
         "[b, s, 3] = [2, 4, 3] (b from x), got [3, 4, 3]"),
    ],
)
def test_torch_arguments_found_by_the_fuzz(call, needle):
    with pytest.raises(PosEncError) as info:
        call()
    assert needle in str(info.value)


def test_mrope_cos_sin_takes_batched_positions():
    # [b, s, n_axes] positions were refused ("[s] = [12], got [2, 12]"): cos_sin took the batch from 2-D only
    m = pt.RotaryEmbedding(8, sections=(1, 1, 2))
    p = torch.tensor([[[0, 0, 0], [1, 2, 3], [4, 4, 4], [5, 1, 0]], [[2, 2, 2], [3, 1, 1], [0, 9, 9], [7, 7, 7]]])
    cos, sin = m.cos_sin(4, positions=p)
    want_cos, want_sin = posenc.rope_cos_sin(p.numpy(), 8, sections=(1, 1, 2))
    assert torch.equal(cos, torch.from_numpy(want_cos)) and torch.equal(sin, torch.from_numpy(want_sin))
