"""The RoPE spec (posenc.RopeConfig): checked once when built; the spec form and the keyword form give the same bits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import posenc
from posenc import PosEncError, RopeConfig, YaRN, apply_rope, rope_cos_sin, rope_frequencies, rope_table

SPECS = [
    RopeConfig(16, base=500000.0),
    RopeConfig(16, rotary_dim=8, base=100.0, layout="interleaved"),
    RopeConfig(16, scaling=YaRN(factor=4.0, original_max=64)),
    RopeConfig(16, sections=(4, 2, 2), section_layout="interleaved"),
    RopeConfig(16, base=100.0, sections=(4, 4), ladder="per_axis"),
]


def _positions(cfg: RopeConfig) -> np.ndarray:
    p = np.array([0, 1, 7, 1000, -3, 123456])
    return p if cfg.sections is None else np.stack([p, p // 2, -p][: len(cfg.sections)], axis=-1)


@pytest.mark.parametrize("cfg", SPECS, ids=repr)
def test_spec_and_keywords_give_the_same_bits(cfg: RopeConfig) -> None:
    x = np.random.default_rng(0).standard_normal((2, 6, 16)).astype(np.float32)
    pos = _positions(cfg)
    spread = apply_rope(x, pos, layout=cfg.layout, **cfg.kwargs())
    whole = apply_rope(x, pos, spec=cfg)
    assert whole.dtype == np.float32 and np.array_equal(whole.view(np.uint32), spread.view(np.uint32))
    whole_cs = rope_cos_sin(pos, cfg, dtype=np.float64)
    spread_cs = rope_cos_sin(pos, 16, dtype=np.float64, **cfg.kwargs())
    assert all(np.array_equal(a, b) for a, b in zip(whole_cs, spread_cs, strict=True))
    assert rope_frequencies(cfg) is rope_frequencies(16, **cfg.kwargs())  # one cached object per rotation


def test_rope_table_takes_a_spec() -> None:
    cfg = RopeConfig(8, base=100.0)
    assert np.array_equal(rope_table(cfg, -2, 5), rope_table(rope_frequencies(8, base=100.0), -2, 5))


def test_the_spec_checks_its_fields_when_built() -> None:
    with pytest.raises(PosEncError, match="rotary_dim must be <= head_dim"):
        RopeConfig(8, rotary_dim=16)
    with pytest.raises(PosEncError, match="layout"):
        RopeConfig(8, layout="split")  # type: ignore[arg-type]
    with pytest.raises(PosEncError, match="sum to rotary_dim / 2"):
        RopeConfig(8, sections=(1, 1))
    with pytest.raises(PosEncError, match="per_axis' takes no scaling"):
        RopeConfig(8, sections=(2, 2), ladder="per_axis", scaling=posenc.Linear(2.0))
    with pytest.raises(PosEncError, match="base"):
        RopeConfig(8, base=1.0)
    with pytest.raises(PosEncError, match="max_position"):
        RopeConfig(8, max_position=0)
    with pytest.raises(PosEncError, match="rotary_dim must be <= head_dim"):
        dataclasses.replace(RopeConfig(8), head_dim=4, rotary_dim=8)  # replace builds (and checks) anew


def test_a_spec_normalises_what_it_was_given() -> None:
    cfg = RopeConfig(8, base=100, sections=posenc.Sections((2, 2), "interleaved"))
    assert (cfg.rotary_dim, cfg.base, cfg.sections, cfg.section_layout) == (8, 100.0, (2, 2), "interleaved")
    assert cfg == RopeConfig(8, 8, 100.0, sections=(2, 2), section_layout="interleaved")
    assert cfg.multi_axis == posenc.Sections((2, 2), "interleaved")


def test_beside_a_spec_its_settings_are_refused_by_name() -> None:
    cfg = RopeConfig(8, base=100.0)
    x = np.ones((3, 8), np.float32)
    with pytest.raises(PosEncError, match=r"base=500000\.0: part of the spec"):
        apply_rope(x, [0, 1, 2], spec=cfg, base=500000.0)
    with pytest.raises(PosEncError, match="layout='interleaved'"):
        apply_rope(x, [0, 1, 2], spec=cfg, layout="interleaved")
    with pytest.raises(PosEncError, match="spec's head_dim is 8"):
        apply_rope(np.ones((3, 16), np.float32), [0, 1, 2], spec=cfg)
    with pytest.raises(PosEncError, match=r"spec must be a posenc\.RopeConfig"):
        apply_rope(x, [0, 1, 2], spec={"base": 100.0})  # type: ignore[arg-type]
    with pytest.raises(PosEncError, match="scaling=Linear"):
        rope_cos_sin([0], cfg, scaling=posenc.Linear(2.0))


def test_from_hf_config_gives_a_spec_apply_rope_takes_whole() -> None:
    cfg = posenc.from_hf_config({"head_dim": 8, "rope_theta": 100.0, "rope_scaling": {"rope_type": "linear",
                                                                                       "factor": 2.0}})
    assert isinstance(cfg, RopeConfig)
    x = np.eye(8, dtype=np.float64)[:4]
    assert np.array_equal(apply_rope(x, [0, 2, 4, 6], spec=cfg), apply_rope(x, [0, 1, 2, 3], base=100.0))


def test_a_transformers_rope_scaling_dict_is_refused_with_the_way_to_read_it() -> None:
    # the dict's keys depend on the rest of the config (head_dim, max_position_embeddings): never guessed
    rope_scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192}
    for call in (lambda: RopeConfig(64, scaling=rope_scaling), lambda: rope_frequencies(64, scaling=rope_scaling),
                 lambda: apply_rope(np.ones((2, 64)), [0, 1], scaling=rope_scaling)):
        with pytest.raises(PosEncError, match=r"not a dict: .* posenc\.from_hf_config\(config\)"):
            call()

