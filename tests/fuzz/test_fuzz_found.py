"""What the fuzz suite found, pinned: each input once escaped as a non-PosEncError, hung, or named nothing.

The fuzz draws fresh examples; these stay, so each fix keeps its test.
"""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from cli_helpers import run
from posenc import LongRoPE, PosEncError, conventions


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
