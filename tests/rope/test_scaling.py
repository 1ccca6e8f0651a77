"""Each scaling against its published formula, for published configs.

The expected values are written here from the formulas, in float64, without
posenc: HF transformers ``src/transformers/modeling_rope_utils.py``
(``_compute_linear_scaling_rope_parameters``, ``_compute_dynamic_ntk_parameters``,
``_compute_yarn_parameters``, ``_compute_llama3_parameters``,
``_compute_longrope_parameters``). The issue asks for 1e-6 relative; posenc
computes in 70-digit Decimal, so the agreement is far tighter and the tests
ask for 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from posenc import NTK, DynamicNTK, Linear, Llama3, LongRoPE, PosEncError, YaRN, rope_cos_sin, rope_frequencies

RTOL = 1e-12


def plain(d: int, base: float) -> np.ndarray:
    return 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)


def check(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)


# --- Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json: rope_theta 500000, head_dim 4096/32 = 128,
#     rope_scaling {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
#     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})


def llama3_reference(d, base, factor, low, high, old):
    inv = plain(d, base)
    lam = 2 * math.pi / inv
    out = np.empty_like(inv)
    for i, (w, wl) in enumerate(zip(inv, lam, strict=True)):
        if wl < old / high:
            out[i] = w
        elif wl > old / low:
            out[i] = w / factor
        else:
            s = (old / wl - low) / (high - low)
            out[i] = (1 - s) * w / factor + s * w
    return out


def test_llama3_keeps_high_divides_low_and_blends_the_band_between():
    f = rope_frequencies(128, base=500000.0, scaling=Llama3(8.0, 1.0, 4.0, 8192))
    want = llama3_reference(128, 500000.0, 8.0, 1.0, 4.0, 8192)
    check(f.inv_freq, want)
    assert f.attention_factor == 1.0
    lam = 2 * math.pi / plain(128, 500000.0)
    kept, divided = lam < 2048, lam > 8192
    # the three bands all occur, and each got its rule
    assert kept.sum() > 0 and divided.sum() > 0 and (~kept & ~divided).sum() > 0
    np.testing.assert_allclose(f.inv_freq[kept], plain(128, 500000.0)[kept], rtol=RTOL)
    np.testing.assert_allclose(f.inv_freq[divided], plain(128, 500000.0)[divided] / 8, rtol=RTOL)
    np.testing.assert_allclose(f.wavelengths, 2 * math.pi / want, rtol=RTOL)


# --- Qwen2.5 YaRN (Qwen/Qwen2.5-7B-Instruct model card, "Processing Long Texts": add
#     {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}; rope_theta 1e6,
#     head_dim 3584/28 = 128)


def yarn_reference(d, base, factor, old, beta_fast=32, beta_slow=1, truncate=True):
    def corr(rot):
        return d * math.log(old / (rot * 2 * math.pi)) / (2 * math.log(base))

    low, high = corr(beta_fast), corr(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0, 1)
    extra = 1 - ramp  # HF's inv_freq_extrapolation_factor
    inv = plain(d, base)
    return inv / factor * (1 - extra) + inv * extra


def test_qwen2_yarn():
    f = rope_frequencies(128, base=1e6, scaling=YaRN(4.0, 32768))
    check(f.inv_freq, yarn_reference(128, 1e6, 4.0, 32768))
    assert f.attention_factor == pytest.approx(0.1 * math.log(4.0) + 1.0, rel=1e-15)
    # fast channels kept, slow ones interpolated
    assert f.inv_freq[0] == 1.0
    assert f.inv_freq[-1] == pytest.approx(plain(128, 1e6)[-1] / 4, rel=RTOL)


def test_yarn_truncate_false_uses_the_fractional_ramp():
    a = rope_frequencies(128, base=1e6, scaling=YaRN(4.0, 32768, truncate=False))
    check(a.inv_freq, yarn_reference(128, 1e6, 4.0, 32768, truncate=False))
    b = rope_frequencies(128, base=1e6, scaling=YaRN(4.0, 32768))
    assert not np.array_equal(a.inv_freq, b.inv_freq)


def test_deepseek_v2_lite_yarn_mscale():
    # deepseek-ai/DeepSeek-V2-Lite config.json: rope_theta 10000, qk_rope_head_dim 64, rope_scaling
    # {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
    #  "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096}
    y = YaRN(40.0, 4096, beta_fast=32, beta_slow=1, mscale=0.707, mscale_all_dim=0.707)
    f = rope_frequencies(64, base=10000.0, scaling=y)
    check(f.inv_freq, yarn_reference(64, 10000.0, 40.0, 4096))
    assert f.attention_factor == pytest.approx(1.0, rel=1e-15)  # g(40, .707)/g(40, .707)
    g = rope_frequencies(64, base=1e4, scaling=YaRN(40.0, 4096, mscale=1.0, mscale_all_dim=0.5))
    want = (0.1 * 1.0 * math.log(40) + 1) / (0.1 * 0.5 * math.log(40) + 1)
    assert g.attention_factor == pytest.approx(want, rel=1e-15)
    # mscale alone is ignored, as HF (`if mscale and mscale_all_dim`)
    h = rope_frequencies(64, base=1e4, scaling=YaRN(40.0, 4096, mscale=0.707))
    assert h.attention_factor == pytest.approx(0.1 * math.log(40) + 1, rel=1e-15)
    e = rope_frequencies(64, base=1e4, scaling=YaRN(40.0, 4096, attention_factor=0.5))
    assert e.attention_factor == 0.5


# --- Phi-3 LongRoPE. The factor lists are from microsoft/Phi-3.5-mini-instruct config.json (as
#     quoted in sdpython/experimental-experiment _doc/recipes/plot_exporter_recipes_c_phi35.py):
#     the phi-3-mini 128k architecture, hidden 3072 / 32 heads = head_dim 96, rope_theta 10000,
#     original_max_position_embeddings 4096, max_position_embeddings 131072.

PHI3_LONG = [
    1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,
    1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863, 3.2300000190734863,
    4.789999961853027, 7.400000095367432, 7.700000286102295, 9.09000015258789, 12.199999809265137,
    17.670000076293945, 24.46000099182129, 28.57000160217285, 30.420001983642578, 30.840002059936523,
    32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,
    50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992, 60.1400032043457,
    62.61000442504883, 62.62000274658203, 62.71000289916992, 63.1400032043457, 63.1400032043457,
    63.77000427246094, 63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
    64.06999969482422, 64.08000183105469, 64.12000274658203, 64.41000366210938, 64.4800033569336,
    64.51000213623047, 64.52999877929688, 64.83999633789062,
]
PHI3_SHORT = [
    1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842,
    1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979,
    1.0999999046325684, 1.1099998950958252, 1.1599998474121094, 1.1599998474121094, 1.1699998378753662,
    1.2899998426437378, 1.339999794960022, 1.679999828338623, 1.7899998426437378, 1.8199998140335083,
    1.8499997854232788, 1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745,
    2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
    2.0199997425079346, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0799996852874756, 2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533,
    2.729999542236328, 2.749999523162842, 2.8399994373321533,
]


def test_phi3_longrope():
    assert len(PHI3_LONG) == len(PHI3_SHORT) == 48
    lr = LongRoPE(PHI3_SHORT, PHI3_LONG, 4096, factor=131072 / 4096)
    short = rope_frequencies(96, base=10000.0, scaling=lr, seq_len=4096)
    long = rope_frequencies(96, base=10000.0, scaling=lr, seq_len=4097)
    base_inv = plain(96, 10000.0)
    check(short.inv_freq, base_inv / np.array(PHI3_SHORT))
    check(long.inv_freq, base_inv / np.array(PHI3_LONG))
    check(rope_frequencies(96, scaling=lr).inv_freq, short.inv_freq)  # no length: short, as HF
    want = math.sqrt(1 + math.log(32) / math.log(4096))
    assert short.attention_factor == pytest.approx(want, rel=1e-15)
    assert long.attention_factor == short.attention_factor
    unscaled = LongRoPE(PHI3_SHORT, PHI3_LONG, 4096)
    assert rope_frequencies(96, scaling=unscaled).attention_factor == 1.0


# --- linear: factor 8 (the LongChat-16k style of config: {"type": "linear", "factor": 8.0})


def test_linear_divides_every_frequency_by_the_factor():
    f = rope_frequencies(128, base=10000.0, scaling=Linear(8.0))
    check(f.inv_freq, plain(128, 10000.0) / 8)
    assert f.attention_factor == 1.0


# --- dynamic NTK: factor 2 over a 4096-token Llama-2 (max_position_embeddings 4096, theta 1e4)


@pytest.mark.parametrize("seq_len", [None, 1, 100, 4095, 4096])
def test_dynamic_ntk_is_the_plain_base_at_and_below_original_max(seq_len):
    f = rope_frequencies(128, base=10000.0, scaling=DynamicNTK(2.0, 4096), seq_len=seq_len)
    assert f.base == 10000.0
    assert np.array_equal(f.inv_freq, rope_frequencies(128, base=10000.0).inv_freq)


@pytest.mark.parametrize("seq_len", [4097, 8192, 16384, 100_000])
def test_dynamic_ntk_above_original_max(seq_len):
    f = rope_frequencies(128, base=10000.0, scaling=DynamicNTK(2.0, 4096), seq_len=seq_len)
    base = 10000.0 * ((2.0 * seq_len / 4096) - (2.0 - 1)) ** (128 / 126)
    assert f.base == pytest.approx(base, rel=RTOL)
    check(f.inv_freq, plain(128, base))


def test_static_ntk_slows_the_slowest_channel_by_the_factor():
    f = rope_frequencies(64, base=10000.0, scaling=NTK(4.0))
    assert f.base == pytest.approx(10000.0 * 4.0 ** (64 / 62), rel=RTOL)
    assert f.inv_freq[0] == 1.0
    assert f.inv_freq[-1] == pytest.approx(plain(64, 10000.0)[-1] / 4, rel=RTOL)


def test_partial_rotary_uses_the_rotary_dim_in_the_exponent():
    f = rope_frequencies(80, base=10000.0, rotary_dim=32, scaling=Linear(2.0))
    check(f.inv_freq, plain(32, 10000.0) / 2)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: Linear(0.0), "Linear.factor must be > 0"),
        (lambda: Linear(-1.0), "Linear.factor must be > 0"),
        (lambda: NTK(0), "NTK.factor must be > 0"),
        (lambda: DynamicNTK(-2.0, 4096), "DynamicNTK.factor"),
        (lambda: DynamicNTK(2.0, 0), "DynamicNTK.original_max"),
        (lambda: YaRN(0.0, 4096), "YaRN.factor"),
        (lambda: YaRN(4.0, 4096, beta_fast=0), "YaRN.beta_fast"),
        (lambda: YaRN(4.0, 4096, truncate="yes"), "YaRN.truncate"),
        (lambda: YaRN(4.0, 4096.5), "YaRN.original_max"),
        (lambda: Llama3(0.0, 1.0, 4.0, 8192), "Llama3.factor"),
        (lambda: Llama3(8.0, 4.0, 2.0, 8192), "high_freq_factor must be >= low_freq_factor"),  # equal: Llama 4
        (lambda: Llama3(8.0, 1.0, 4.0, None), "Llama3.original_max"),
        (lambda: LongRoPE([1.0, 0.0], [1.0, 1.0], 4096), "LongRoPE.short_factor[1]"),
        (lambda: LongRoPE([1.0], [1.0, 1.0], 4096), "same length"),
        (lambda: LongRoPE("1,2", [1.0, 1.0], 4096), "LongRoPE.short_factor"),
        (lambda: LongRoPE([1.0], [1.0], 4096, factor=0), "LongRoPE.factor"),
        (lambda: rope_frequencies(96, scaling=LongRoPE([1.0] * 4, [1.0] * 4, 8)), "rotary_dim/2 = 48"),
    ],
)
def test_bad_scalings_name_the_problem(make, needle):
    with pytest.raises(PosEncError) as info:
        make()
    assert needle in str(info.value)


def test_scalings_are_frozen_and_hashable():
    y = YaRN(4.0, 32768)
    with pytest.raises(AttributeError):
        y.factor = 2.0  # type: ignore[misc]
    assert hash(y) == hash(YaRN(4, 32768)) and y == YaRN(4, 32768)
    assert hash(LongRoPE([1.0], [2.0], 8)) == hash(LongRoPE((1.0,), (2.0,), 8))


# --- the edges (issue 10): fields validated, combinations kept inside the exact range


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: rope_frequencies(2, scaling=NTK(2.0)), "NTK needs rotary_dim >= 4"),  # was decimal.DivisionByZero
        (lambda: rope_frequencies(64, rotary_dim=2, scaling=NTK(2.0)), "rotary_dim 2"),
        (lambda: rope_frequencies(2, scaling=DynamicNTK(2.0, 16), seq_len=64), "DynamicNTK needs rotary_dim >= 4"),
        (lambda: rope_frequencies(2, scaling=DynamicNTK(2.0, 16)), "DynamicNTK needs rotary_dim >= 4"),
        (lambda: Linear(1e-320), "Linear.factor must be in [2**-52, 2**52]"),  # was decimal.InvalidOperation
        (lambda: Linear(1e-320), "1e-320"),
        (lambda: YaRN(10**400, 4096), "YaRN.factor must be finite"),  # was OverflowError
        (lambda: YaRN(10**400, 4096), "401 digits"),
        (lambda: YaRN(1e300, 4096), "1e+300"),
        (lambda: YaRN(4.0, 10**400), "YaRN.original_max must be <= 9007199254740992"),
        (lambda: YaRN(4.0, 4096, mscale=-100, mscale_all_dim=1.0), "YaRN.mscale must be >= 0, got -100"),
        (lambda: YaRN(4.0, 4096, mscale=1.0, mscale_all_dim=-0.5), "YaRN.mscale_all_dim must be >= 0"),
        (lambda: YaRN(4.0, 4096, mscale=math.nan), "YaRN.mscale must be finite"),
        (lambda: YaRN(4.0, 4096, attention_factor=1e6), "YaRN.attention_factor must be <= 2**15"),
        (lambda: rope_frequencies(64, scaling=YaRN(2.0**52, 4096, mscale=1e300, mscale_all_dim=1e-300)),
         "attention factor"),
        (lambda: LongRoPE([1.0, 1e-300], [1.0, 1.0], 4096), "LongRoPE.short_factor[1]"),
        (lambda: LongRoPE([1.0], [1.0], 4096, attention_factor=math.inf), "LongRoPE.attention_factor"),
        (lambda: Llama3(8.0, 1.0, 1e300, 8192), "Llama3.high_freq_factor"),
        (lambda: NTK(10**400), "NTK.factor must be finite"),
        (lambda: rope_frequencies(64, base=1e6, scaling=NTK(2.0**-52)), "rescaled base must stay > 1"),
        # every field fine, the product not: frequencies past 2**53 or below 2**-960
        (lambda: rope_cos_sin([2], 4, scaling=LongRoPE([2.0**-52, 1.0], [1.0, 1.0], 8)), "|p·ω| = 9.0072e+15"),
        (lambda: rope_frequencies(64, base=2.0**950, scaling=Linear(2.0**52)), "outside [2**-960, 2**53)"),
        (lambda: rope_frequencies(64, base=2.0**900, scaling=DynamicNTK(2.0**52, 1), seq_len=2**53), "DynamicNTK"),
    ],
)
def test_edge_scalings_are_refused_by_name(make, needle):
    with pytest.raises(PosEncError) as info:
        make()
    assert needle in str(info.value)


def test_yarn_mscale_zero_means_unset_as_in_hf():
    # HF: `if mscale and mscale_all_dim` — a zero leaves the default 0.1·ln(s) + 1
    f = rope_frequencies(64, scaling=YaRN(4.0, 4096, mscale=0.0, mscale_all_dim=1.0))
    assert f.attention_factor == pytest.approx(0.1 * math.log(4.0) + 1, rel=1e-15)
    g = rope_frequencies(64, scaling=YaRN(4.0, 4096, mscale=1.0, mscale_all_dim=0.5))
    want = (0.1 * math.log(4.0) + 1) / (0.05 * math.log(4.0) + 1)
    assert g.attention_factor == pytest.approx(want, rel=1e-15)


def _mp_rope(p: int, d: int, base: float, factor: float) -> list[tuple[object, object]]:
    """cos/sin of p·ω_i with ω_i = base**(-2i/d) / factor, from mpmath (the factor is the exact double)."""
    import mpmath

    mpmath.mp.dps = 60
    out = []
    for i in range(d // 2):
        w = mpmath.power(mpmath.mpf(base), -mpmath.mpf(2 * i) / d) / mpmath.mpf(factor)
        out.append((mpmath.cos(p * w), mpmath.sin(p * w)))
    return out


def test_linear_1e_7_at_2_31_is_refused_not_garbage():
    # |p·ω| = (2**31 - 1)·1e7 > 2**53: the quadrant count k no longer fits a double; posenc once
    # returned cos = 0.884 here against a true -0.467
    with pytest.raises(PosEncError, match=r"\|p\| = 2147483647 .* 2\*\*53"):
        rope_cos_sin([0, 2**31 - 1], 4, scaling=Linear(1e-7), dtype=np.float64)


@pytest.mark.parametrize("p", [900_000_000, -900_000_000, 123_456_789, 2**31 // 3])
def test_linear_1e_7_stays_exact_below_the_limit(p):
    # p·1e7 up to 9.0e15, just under 2**53 ≈ 9.007e15: cos/sin still within 4 float64 ulp
    cos, sin = rope_cos_sin([p], 4, scaling=Linear(1e-7), dtype=np.float64)
    for i, (c, s) in enumerate(_mp_rope(p, 4, 10000.0, 1e-7)):
        assert abs(cos[0, i] - float(c)) <= 4 * np.spacing(abs(float(c)))
        assert abs(sin[0, i] - float(s)) <= 4 * np.spacing(abs(float(s)))


def test_linear_1e_7_tables_stop_at_the_limit():
    # the consecutive (fast table) path checks its last row, not only its first
    from posenc import rope_table

    f = rope_frequencies(4, scaling=Linear(1e-7))
    rows = rope_table(f, 900_000_000 - 200, 200, np.float64)
    for j in (0, 99, 199):
        for i, (c, s) in enumerate(_mp_rope(900_000_000 - 200 + j, 4, 10000.0, 1e-7)):
            assert abs(rows[j, 0, i] - float(c)) <= 4 * np.spacing(abs(float(c)))
            assert abs(rows[j, 1, i] - float(s)) <= 4 * np.spacing(abs(float(s)))
    with pytest.raises(PosEncError, match="2\\*\\*53"):
        rope_table(f, 900_719_925 - 100, 200)  # the first row is fine, the last is past 2**53 / 1e7
