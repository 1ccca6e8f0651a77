"""``ladder``/``context --grid`` (n-D sinusoids and multi-axis RoPE) and ``plot grid``.

Expected wavelengths are written from the formulas here, not read from posenc.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cli_helpers import run, run_json

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_ladder_grid_axial(capsys):
    code, data = run_json(capsys, "ladder", "--d-model", "16", "--grid", "64,32", "--base", "100")
    assert code == 0 and data["sizes"] == [64, 32] and data["d_model"] == 16
    lam = 2 * math.pi * 100.0 ** (np.arange(4) / 4)
    for ax, size in zip(data["axes"], (64, 32), strict=True):
        np.testing.assert_allclose(ax["wavelength"], lam, rtol=1e-14)
        np.testing.assert_allclose(ax["loops"], size / lam, rtol=1e-14)
        assert ax["wrapped_pairs"] == int((lam < size).sum())
    assert data["axes"][1]["channels"] == list(range(8, 16))
    assert data["axes"][0]["pair_channels"][1] == [2, 3]
    code, out, _ = run(capsys, "ladder", "--d-model", "16", "--grid", "64,32", "--base", "100")
    assert code == 0 and "axis 1 (size 32): channels 8–15; 4 pairs" in out


def test_ladder_grid_mae_column_first(capsys):
    code, data = run_json(capsys, "ladder", "--d-model", "16", "--grid", "14,14", "--convention", "mae")
    assert code == 0 and data["convention"].startswith("mae")
    assert data["axes"][1]["channels"] == list(range(8)) and data["axes"][0]["channels"] == list(range(8, 16))


def test_context_grid_check(capsys):
    # 2 pairs per axis on base 10: λ_max = 2π·√10 ≈ 19.9, under 64 but over 16
    code, out, _ = run(capsys, "context", "--d-model", "8", "--grid", "64,16", "--base", "10", "--check")
    assert code == 1 and "FAILS" in out and "axis 0" in out.split("FAILS")[1]
    assert "axis 1" not in out.split("FAILS")[1]
    code, data = run_json(capsys, "context", "--d-model", "8", "--grid", "16,16", "--base", "10", "--check")
    assert code == 0 and data["wraps"] is False


def test_context_grid_mrope(capsys):
    code, data = run_json(capsys, "context", "--d-model", "128", "--grid", "16,64,64", "--rope", "--sections",
                          "16,24,24", "--base", "1e6")
    assert code == 0 and "M-RoPE" in data["convention"]
    lam = 2 * math.pi * 1e6 ** (np.arange(64) / 64)
    np.testing.assert_allclose(data["axes"][2]["wavelength"], lam[40:64], rtol=1e-14)
    assert data["axes"][0]["channels"] == list(range(16)) + list(range(64, 80))
    code, data = run_json(capsys, "ladder", "--d-model", "128", "--grid", "16,64,64", "--sections", "24,20,20",
                          "--section-layout", "interleaved", "--base", "1e6")
    np.testing.assert_allclose(data["axes"][1]["omega"], 1e6 ** (-np.arange(1, 60, 3) / 64), rtol=1e-14)
    code, data = run_json(capsys, "ladder", "--d-model", "64", "--grid", "32,32", "--sections", "16,16",
                          "--ladder", "per_axis")
    np.testing.assert_allclose(data["axes"][1]["omega"], 1e4 ** (-np.arange(16) / 16), rtol=1e-14)


@pytest.mark.parametrize(("argv", "message"), [
    (("context", "100", "--d-model", "8", "--grid", "4,4"), "not both"),
    (("context", "--d-model", "8"), "required: C"),
    (("ladder", "--d-model", "8", "--sections", "2,1,1"), "need --grid"),
    (("ladder", "--d-model", "8", "--grid", "4,4", "--rope"), "needs --sections"),
    (("ladder", "--d-model", "8", "--grid", "4,4", "--context", "9"), "--context with --grid"),
    (("ladder", "--d-model", "8", "--grid", "4,x"), "integers"),
    (("ladder", "--d-model", "10", "--grid", "4,4"), "even shares"),
    (("ladder", "--d-model", "16", "--grid", "4,4,4", "--sections", "4,2,1"), "sum to rotary_dim / 2"),
    (("ladder", "--d-model", "16", "--grid", "4,4", "--sections", "4,4", "--convention", "mae"), "--convention"),
    (("ladder", "--d-model", "16", "--grid", "4,0"), "axis 1"),
])
def test_grid_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("posenc: error:") and message in err and err.count("\n") == 1


def test_plot_grid_writes_a_png(capsys, tmp_path):
    out = tmp_path / "grid.png"
    code, text, _ = run(capsys, "plot", "grid", "--grid", "12,10", "--d-model", "32", "--patch", "3,4",
                        "--convention", "mae", "big_vision", "--out", str(out))
    assert code == 0 and str(out) in text
    assert out.read_bytes()[:8] == PNG_MAGIC
    code, _, err = run(capsys, "plot", "grid", "--patch", "30,1", "--out", str(tmp_path / "g.svg"))
    assert code == 2 and "patch[0]" in err
    code, _, err = run(capsys, "plot", "grid", "--convention", "fairseq", "--out", str(tmp_path / "g.svg"))
    assert code == 2 and "invalid choice" in err
