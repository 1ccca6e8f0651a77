"""posenc.jax takes the NumPy API's RopeConfig and T5Buckets specs, built and checked by the same code."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj
from posenc.bias import T5Buckets


@pytest.mark.parametrize("cfg", [posenc.RopeConfig(16, base=100.0, layout="interleaved", rotary_dim=8),
                                 posenc.RopeConfig(16, sections=(4, 2, 2), section_layout="interleaved")], ids=repr)
def test_the_spec_form_is_the_keyword_form(cfg):
    x = np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32)
    pos = np.array([0, 3, 99, 4096, 2**20], np.int32)
    if cfg.sections is not None:
        pos = np.stack([pos, pos // 3, pos // 5], axis=-1)
    whole = jax.jit(lambda x, p: pj.apply_rope(x, p, spec=cfg))(x, pos)
    spread = jax.jit(lambda x, p: pj.apply_rope(x, p, layout=cfg.layout, **cfg.kwargs()))(x, pos)
    assert np.array_equal(np.asarray(whole).view(np.uint32), np.asarray(spread).view(np.uint32))
    c1, s1 = pj.rope_cos_sin(pos, cfg)
    c2, s2 = posenc.rope_cos_sin(pos.astype(np.int64), cfg)  # the NumPy core's float32 rows, bit for bit
    assert np.array_equal(np.asarray(c1), c2) and np.array_equal(np.asarray(s1), s2)


def test_the_same_checks_refuse_the_same_spec_errors():
    cfg = posenc.RopeConfig(8)
    with pytest.raises(posenc.PosEncError, match="spec's head_dim is 8"):
        pj.apply_rope(np.ones((2, 16), np.float32), np.arange(2, dtype=np.int32), spec=cfg)
    with pytest.raises(posenc.PosEncError, match="part of the spec"):
        pj.apply_rope(np.ones((2, 8), np.float32), np.arange(2, dtype=np.int32), spec=cfg, base=100.0)
    with pytest.raises(posenc.PosEncError, match=r"base=10000\.0: part of the spec"):  # the default, typed
        pj.rope_cos_sin(np.arange(2, dtype=np.int32), posenc.RopeConfig(8, base=100.0), base=10000.0)


def test_t5_bucket_takes_the_bucket_spec():
    rel = np.arange(-300, 300, 7, dtype=np.int32)
    spec = T5Buckets(bidirectional=False, num_buckets=16, max_distance=64)
    want = posenc.t5_bucket(rel, bidirectional=False, num_buckets=16, max_distance=64)
    assert np.array_equal(posenc.t5_bucket(rel, spec=spec), want)
    assert np.array_equal(np.asarray(pj.t5_bucket(rel, spec=spec)), want)
    with pytest.raises(posenc.PosEncError, match="num_buckets=8: part of the spec"):
        posenc.t5_bucket(rel, spec=spec, num_buckets=8)
