"""posenc.parity: each implementation's cos/sin error against mpmath-checked exact rows; disagreements named."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import posenc
from posenc.parity import IMPLEMENTATIONS, default_positions, parity
from posenc.parity.checkpoint import _disagreements
from reference import omega, sin_cos

PLAIN = {"head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}
YARN = {**PLAIN, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                                      "rope_theta": 1e6}}


def test_posenc_float32_is_within_rounding_and_transformers_float32_drifts_with_position():
    rep = parity(PLAIN, positions=[1, 1000, 131071])
    posenc32 = rep.errors["posenc float32"]
    assert max(posenc32) <= 2.0**-24  # half an ulp of float32 at 1: correctly rounded rows
    hf = rep.errors["transformers float32"]
    assert hf[-1] > 1e-3 > hf[0]  # float32 p·ω: the angle's rounding grows with p (0.0054 at 131071 here)
    assert hf[-1] > 1000 * posenc32[-1]
    assert rep.errors["transformers bfloat16"][0] > 1e-3  # bfloat16 rows: 8 bits whatever the position
    assert rep.unavailable.get("vLLM stock float32", "not installed").startswith("not installed")


def test_the_exact_reference_is_the_true_value():
    """The errors are measured against posenc's float64 rows; those agree with mpmath to float64's rounding."""
    rep = parity(PLAIN, positions=[131071], implementations=("posenc float32",))
    cos, sin = posenc.rope_cos_sin([131071], posenc.from_hf_config(PLAIN), dtype=np.float64)
    for i in (0, 17, 63):
        s, c = sin_cos(131071, omega(128, 1e6, i))
        assert abs(float(c) - cos[0, i]) <= 2.0**-53 and abs(float(s) - sin[0, i]) <= 2.0**-53
    want = max(abs(float(np.float32(v)) - v) for v in (*cos[0], *sin[0]))
    assert rep.errors["posenc float32"] == [want]


def test_the_attention_factor_is_read_off_each_implementations_rows():
    rep = parity(YARN, positions=[5], implementations=("posenc float32", "transformers float32",
                                                        "transformers bfloat16"))
    hf = float(mpmath.mpf("0.1") * mpmath.log(4) + 1)  # YaRN's 0.1·ln(s) + 1
    assert rep.attention_factors["posenc float32"] == float(np.float32(hf))
    assert abs(rep.attention_factors["transformers float32"] - hf) < 1e-6
    assert rep.attention_factors["transformers bfloat16"] == 1.140625  # 1.138629 stored in bfloat16
    assert rep.disagreements == []  # bfloat16's rounding of the factor is no other setting


def test_disagreements_name_the_setting_and_the_implementation():
    spec = posenc.from_hf_config(YARN)
    pos = np.array([10, 10**6])
    freqs = posenc.rope_frequencies(128, base=1e6, scaling=spec.scaling)
    one = np.concatenate([np.cos(freqs.inv_freq), np.sin(freqs.inv_freq)]) * freqs.attention_factor
    wrong = one.copy()
    wrong[[0, 64]] = np.cos(2.0), np.sin(2.0)  # pair 0 turning twice as fast: ω_0 = 2 instead of 1
    rows = {"vLLM stock float32": np.array([one, [np.nan] * 128])}
    lines = _disagreements(spec, {"vLLM stock float32": 1.0980110, "transformers float32": freqs.attention_factor},
                           {"vLLM stock float32": wrong}, rows, pos)
    assert lines[0] == "attention factor: vLLM stock float32 1.098011, transformers' definition 1.138629"
    assert lines[1].startswith("inverse frequencies: vLLM stock float32's ω_0 is 2, transformers' definition 1 ")
    assert lines[2] == "context: vLLM stock float32 holds no row for position 1000000 (its cache ends before it)"
    assert len(lines) == 3


def test_default_positions_reach_the_context():
    assert default_positions(131072) == [0, 1, 10, 100, 1000, 10000, 100000, 131071]
    assert default_positions(2) == [0, 1]
    assert parity(PLAIN, implementations=("posenc float32",)).positions[-1] == 131071


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"positions": [-1]}, "integers >= 0"),
    ({"positions": [1.5]}, "integers >= 0"),
    ({"positions": []}, "non-empty"),
    ({"positions": [float("nan")]}, "finite"),
    ({"implementations": ("vLLM",)}, "unknown implementation(s) ['vLLM']"),
])
def test_bad_input_is_refused_by_name(kwargs, named):
    with pytest.raises(posenc.PosEncError, match=None) as exc:
        parity(PLAIN, **kwargs)
    assert named in str(exc.value)


def test_every_implementation_is_listed_measured_or_unavailable():
    rep = parity(YARN, positions=[0, 7])
    assert set(rep.errors) | set(rep.unavailable) == set(IMPLEMENTATIONS)
    assert all(len(v) == 2 and all(math.isfinite(e) for e in v) for v in rep.errors.values())


def test_a_partial_rotary_checkpoint_is_measured_on_its_own_rotary_dims():
    """transformers' partial models compute over dim = int(head_dim * partial_rotary_factor); Llama's class reads no
    factor, so the stand-in is given head_dim = rotary_dim (before: every pair off by up to 1.99, a wrong table)."""
    cfg = {"hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096, "rope_theta": 10000.0,
           "partial_rotary_factor": 0.5}
    pos = [1, 100, 4095]
    rep = parity(cfg, positions=pos, implementations=("transformers float32",))
    r = 32  # head 64, half of it turns
    # transformers' default inverse frequencies over dim = r, in float32 (modeling_rope_utils), then the float32 angle
    inv = (1.0 / (np.float32(10000.0) ** (np.arange(0, r, 2, dtype=np.float32) / np.float32(r)))).astype(np.float32)
    for p, err in zip(pos, rep.errors["transformers float32"], strict=True):
        ang = (np.float32(p) * inv).astype(np.float32).astype(np.float64)
        got = max(max(abs(math.cos(a) - float(mpmath.cos(mpmath.mpf(p) * omega(r, 10000.0, i)))),
                      abs(math.sin(a) - float(mpmath.sin(mpmath.mpf(p) * omega(r, 10000.0, i)))))
                  for i, a in enumerate(ang))
        assert err < 1e-3 and abs(err - got) <= 0.05 * got + 1e-7  # torch's float32 pow may differ by an ulp
    assert rep.disagreements == []
