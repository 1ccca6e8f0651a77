"""``posenc timestep`` and ``posenc plot timesteps``: the library's values, bad input in one line with exit 2."""

from __future__ import annotations

import math

import pytest

from cli_helpers import run, run_json


def test_the_table_is_the_embedding(capsys):
    code, out, err = run(capsys, "timestep", "1", "--dim", "5", "--convention", "guided-diffusion")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "GuidedDiffusion" in lines[0]
    assert lines[2].split()[-1] == f"{math.cos(1):.6f}" and "cos ω_0·t" in lines[2]
    assert lines[-1].split() == ["4", "zero", "0.000000"]


def test_json_is_full_precision_and_names_each_channel(capsys):
    code, data = run_json(capsys, "timestep", "0", "999", "--dim", "4")
    assert code == 0 and data["dim"] == 4 and data["t"] == [0.0, 999.0]
    assert [c["role"] for c in data["channels"]] == ["sin", "sin", "cos", "cos"]
    assert data["embedding"][1][0] == math.sin(999.0)  # to the last bit (float64, posenc's exact value)
    assert data["omega"][1] == 1e-4  # the shift of 1: the last frequency is 1/10000


@pytest.mark.parametrize(("argv", "named"), [
    (["timestep", "nan"], "t must be finite"),
    (["timestep", "1", "--dim", "0"], "dim must be >= 1"),
    (["timestep", "1", "--dim", "3"], "half - downscale_freq_shift"),
    (["timestep", "1", "--convention", "sd9"], "--convention"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, named):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and named in err and len(err.strip().splitlines()) == 1


def test_plot_timesteps_writes_a_png(capsys, tmp_path):
    out = tmp_path / "t.png"
    code, _, _ = run(capsys, "plot", "timesteps", "--out", str(out), "--dim", "33", "--convention", "flux",
                        "--t-max", "1")
    assert code == 0 and out.stat().st_size > 1000 and out.read_bytes()[:4] == b"\x89PNG"


def test_plot_timesteps_figure_marks_the_halves():
    from posenc.plot import plot_timesteps

    fig = plot_timesteps(16, convention="guided-diffusion", t_max=10)
    ax = fig.axes[0]
    assert [im.get_gid() for im in ax.get_images()] == ["embedding"]
    assert ax.get_images()[0].get_array().shape == (256, 16)
    assert "0 … 7: cos" in ax.get_xlabel()
    assert [ln.get_gid() for ln in ax.get_lines()] == ["halves"]
