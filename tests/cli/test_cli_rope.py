"""The command's RoPE options (ladder/context --rope, --scaling) and ``plot rope``.

Expected wavelengths are written from the formulas here (float64), not read
from posenc's output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cli_helpers import run, run_json
from posenc import YaRN
from posenc.cli.rope import scaling_spec, spec_text

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def plain_lambda(r: int, base: float) -> np.ndarray:
    return 2 * math.pi * base ** (np.arange(0, r, 2) / r)


def test_ladder_rope_is_the_plain_ladder_over_the_rotary_dim(capsys):
    code, data = run_json(capsys, "ladder", "--d-model", "80", "--rope", "--rotary-dim", "32", "--context", "1000")
    assert code == 0
    assert data["rotary_dim"] == 32 and data["layout"] == "half" and data["scaling"] is None
    np.testing.assert_allclose(data["wavelength"], plain_lambda(32, 10000.0), rtol=1e-13)
    np.testing.assert_allclose(data["loops"], 1000 / plain_lambda(32, 10000.0), rtol=1e-13)
    assert data["wrapped_channels"] == int((plain_lambda(32, 10000.0) < 1000).sum())


@pytest.mark.parametrize(("layout", "row"), [("half", "  1      1, 3"), ("interleaved", "  1      2, 3")])
def test_ladder_rope_lists_the_pairs_of_the_layout(capsys, layout, row):
    code, out, _ = run(capsys, "ladder", "--d-model", "4", "--rope", layout)
    assert code == 0 and f"layout {layout}" in out
    assert any(line.startswith(row) for line in out.splitlines())


def test_ladder_llama31_stretch_and_wraps(capsys):
    spec = "llama3:factor=8,low_freq_factor=1,high_freq_factor=4,original_max=8192"
    code, data = run_json(capsys, "ladder", "--d-model", "128", "--base", "500000", "--scaling", spec,
                          "--context", "131072")
    assert code == 0 and data["scaling"] == spec
    lam = plain_lambda(128, 500000.0)
    stretch = np.array(data["stretch"])
    # Llama 3.1: wavelengths under 8192/4 kept, over 8192/1 stretched 8×, a blend between
    assert np.allclose(stretch[lam < 2048], 1.0, rtol=1e-12)
    assert np.allclose(stretch[lam > 8192], 8.0, rtol=1e-12)
    mid = (lam >= 2048) & (lam <= 8192)
    assert mid.any() and np.all((stretch[mid] > 1) & (stretch[mid] < 8))
    np.testing.assert_allclose(data["wavelength"], lam * stretch, rtol=1e-13)
    assert data["wraps"][-1] is False
    _, out, _ = run(capsys, "ladder", "--d-model", "128", "--base", "500000", "--scaling", spec)
    assert "×8" in out and "unscaled" in out


def test_context_rope_check(capsys):
    # λ_max over r = 128 at base 1e4: 2π·1e4^(126/128) ≈ 54410 < 65536: wraps
    code, out, _ = run(capsys, "context", "65536", "--d-model", "128", "--rope", "--check")
    assert code == 1 and out.splitlines()[-1].startswith("FAILS")
    code, data = run_json(capsys, "context", "65536", "--d-model", "128", "--rope")
    assert code == 0 and data["wraps"] is True
    assert data["max_wavelength"] == pytest.approx(2 * math.pi * 1e4 ** (126 / 128), rel=1e-13)
    want = (65536 / (2 * math.pi)) ** (128 / 126)
    assert data["min_base"] == pytest.approx(want, rel=1e-12)
    code, _, _ = run(capsys, "context", "50000", "--d-model", "128", "--rope", "--check")
    assert code == 0


def test_context_yarn_qwen(capsys):
    code, data = run_json(capsys, "context", "131072", "--d-model", "128", "--base", "1e6",
                          "--scaling", "yarn:factor=4,original_max=32768", "--check")
    assert code == 0 and data["wraps"] is False and data["min_base"] is None
    assert data["attention_factor"] == pytest.approx(0.1 * math.log(4) + 1, rel=1e-15)
    assert data["max_wavelength"] == pytest.approx(4 * 2 * math.pi * 1e6 ** (126 / 128), rel=1e-12)
    assert data["unscaled_max_wavelength"] == pytest.approx(2 * math.pi * 1e6 ** (126 / 128), rel=1e-12)


def test_dynamic_ntk_takes_the_context_as_its_length(capsys):
    spec = "dynamic:factor=2,original_max=4096"
    _, short = run_json(capsys, "ladder", "--d-model", "64", "--scaling", spec, "--context", "4096")
    assert short["effective_base"] == 10000.0
    _, long = run_json(capsys, "ladder", "--d-model", "64", "--scaling", spec, "--context", "8192")
    assert long["effective_base"] == pytest.approx(1e4 * 3 ** (64 / 62), rel=1e-13)
    _, fixed = run_json(capsys, "ladder", "--d-model", "64", "--scaling", spec, "--context", "8192",
                        "--seq-len", "100")
    assert fixed["effective_base"] == 10000.0


def test_scaling_spec_round_trips():
    y = scaling_spec("yarn:factor=4,original_max_position_embeddings=32768,truncate=false,mscale=0.707")
    assert y == YaRN(4.0, 32768, truncate=False, mscale=0.707)
    assert scaling_spec(spec_text(y)) == y
    lr = scaling_spec("longrope:short_factor=1/1.5,long_factor=2/4,original_max=8")
    assert lr.long_factor == (2.0, 4.0)
    assert scaling_spec(spec_text(lr)) == lr


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["ladder", "--d-model", "8", "--scaling", "xpos:factor=2"], "unknown scaling 'xpos'"),
        (["ladder", "--d-model", "8", "--scaling", "yarn:factor=4"], "yarn needs original_max"),
        (["ladder", "--d-model", "8", "--scaling", "linear:factor=0"], "Linear.factor must be > 0"),
        (["ladder", "--d-model", "8", "--scaling", "linear:fator=2"], "'fator=2'"),
        (["ladder", "--d-model", "8", "--scaling", "linear:factor=two"], "factor must be a number"),
        (["ladder", "--d-model", "8", "--rope", "--rotary-dim", "12"], "rotary_dim must be <= head_dim = 8"),
        (["ladder", "--d-model", "8", "--rope", "sideways"], "invalid choice"),
        (["context", "100", "--d-model", "7", "--rope"], "head_dim"),
        (["context", "100", "--d-model", "8", "--scaling", "llama3:factor=8,low_freq_factor=4,"
                                                           "high_freq_factor=1,original_max=10"], "high_freq"),
        (["plot", "rope", "--head-dim", "8", "--pair", "4", "--out", "x.png"], "pair must be < head_dim/2 = 4"),
        (["plot", "rope", "--refs", "1", "2", "3", "4", "5", "--out", "x.png"], "refs must be 1 to 4"),
    ],
)
def test_bad_rope_options_exit_2_with_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("posenc: error: ") and err.count("\n") == 1
    assert needle in err


def test_plot_rope(capsys, tmp_path):
    path = tmp_path / "rope.png"
    code, out, err = run(capsys, "plot", "rope", "--out", str(path))
    assert code == 0 and err == "" and f"wrote {path}" in out
    assert path.read_bytes()[:8] == PNG_MAGIC
    path = tmp_path / "yarn.png"
    code, _, _ = run(capsys, "plot", "rope", "--head-dim", "32", "--scaling", "yarn:factor=4,original_max=512",
                     "--layout", "interleaved", "--refs", "0", "77", "--max-offset", "50", "--out", str(path))
    assert code == 0 and path.read_bytes()[:8] == PNG_MAGIC


def test_plot_rope_curves_coincide_and_the_pair_stays_on_its_circle():
    from posenc.plot import plot_rope

    fig = plot_rope(32, refs=(0, 1000, 123456), max_offset=40, positions=10, pair=2)
    left, right = fig.axes[:2]
    curves = [ln.get_ydata() for ln in right.get_lines() if str(ln.get_gid()).startswith("ref")]
    assert len(curves) == 3
    for c in curves[1:]:
        np.testing.assert_allclose(c, curves[0], atol=1e-12)
    peak = curves[0][40]  # Δ = 0: |q|² = 1
    assert peak == pytest.approx(1.0, abs=1e-12)
    xy = left.collections[0].get_offsets()
    np.testing.assert_allclose(np.hypot(xy[:, 0], xy[:, 1]), math.sqrt(2), rtol=1e-12)
    # consecutive points are ω_2 = 1e4^(-4/32) rad apart
    ang = np.unwrap(np.arctan2(xy[:, 1], xy[:, 0]))
    np.testing.assert_allclose(np.diff(ang), 1e4 ** (-4 / 32), rtol=1e-10)


