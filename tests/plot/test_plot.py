"""posenc.plot: the plotted data, read back from the artists, are the encoding's true values.

References come from mpmath (tests/reference.py) or from the formula written
out here in float64 for small angles, never from posenc.
"""

from __future__ import annotations

import math
import sys

import mpmath
import numpy as np
import pytest
from matplotlib.figure import Figure

from posenc import PosEncError, plot
from reference import omega, sin_cos


def artist(ax, gid: str):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def omegas(d: int, base: float = 10000.0) -> np.ndarray:
    return np.array([float(omega(d, base, i)) for i in range(d // 2)])


def assert_labelled(ax) -> None:
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


def test_wave_is_figure_s02():
    fig = plot.plot_wave()
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert_labelled(ax)
    curve = artist(ax, "curve")
    x, y = curve.get_xdata(), curve.get_ydata()
    assert x.min() == 0 and x.max() > 7 and len(x) >= 200  # smooth, past pos 7
    np.testing.assert_allclose(y, np.sin(x), rtol=0, atol=1e-15)  # ω_0 = 1: the angle is the position
    dots = artist(ax, "positions").get_offsets()
    assert dots[:, 0].tolist() == list(range(8))
    np.testing.assert_allclose(dots[:, 1], [float(mpmath.sin(k)) for k in range(8)], rtol=0, atol=2e-16)
    # each dot labelled with its value, as the seed prints them
    labels = {t.get_text() for t in ax.texts}
    assert {"0", "0.8415", "0.9093", "0.1411", "-0.7568", "-0.9589", "-0.2794", "0.6570"} <= labels
    period = artist(ax, "period")
    assert period.get_xdata()[0] == pytest.approx(2 * math.pi, rel=1e-15)
    assert period.get_linestyle() == "--" and period.get_color() == "tab:red"
    assert len(ax.get_legend().get_texts()) == 3


def _angle(x: float, y: float) -> float:
    return math.atan2(y, x)


@pytest.mark.parametrize("by", [5, -5])
def test_rotation_is_figure_s03(by):
    fig = plot.plot_rotation(3, by)
    ax = fig.axes[0]
    assert_labelled(ax)
    w1 = omega(4, 10000.0, 1)
    src, tgt = artist(ax, "source").xy, artist(ax, "target").xy
    s3, c3 = sin_cos(3, w1)
    st, ct = sin_cos(3 + by, w1)
    # x = cos, y = sin: the blue arrow ends at (cos 0.03, sin 0.03), the orange one at (cos 0.08, sin 0.08)
    np.testing.assert_allclose(src, [float(c3), float(s3)], rtol=0, atol=2e-16)
    np.testing.assert_allclose(tgt, [float(ct), float(st)], rtol=0, atol=2e-16)
    assert artist(ax, "source").arrow_patch.get_edgecolor()[:3] == pytest.approx((0.12, 0.47, 0.71), abs=0.01)
    arc = artist(ax, "arc")
    xs, ys = arc.get_xdata(), arc.get_ydata()
    np.testing.assert_allclose([xs[0], ys[0]], src, atol=2e-16)  # the arc joins the two tips
    np.testing.assert_allclose([xs[-1], ys[-1]], tgt, atol=2e-16)
    np.testing.assert_allclose(np.hypot(xs, ys), 1.0, atol=1e-15)
    turn = np.diff([_angle(x, y) for x, y in zip(xs, ys, strict=True)])
    assert np.all(turn > 0) if by > 0 else np.all(turn < 0)  # counter-clockwise for k > 0, clockwise for k < 0
    assert sum(turn) == pytest.approx(0.01 * by, rel=1e-12)
    assert len(ax.child_axes) == 1  # 0.05 rad is small: an inset magnifies it
    inset = ax.child_axes[0]
    np.testing.assert_allclose(artist(inset, "source-inset").xy, src, atol=0)
    assert "clockwise" in ax.get_title()


def test_rotation_of_a_fast_pair_needs_no_inset():
    fig = plot.plot_rotation(100, 5, pair=0)
    assert fig.axes[0].child_axes == []
    np.testing.assert_allclose(artist(fig.axes[0], "target").xy,
                               [float(mpmath.cos(105)), float(mpmath.sin(105))], atol=2e-16)


def test_heatmap_is_the_table():
    fig = plot.plot_heatmap(length=50, d_model=16, start=-10)
    ax = fig.axes[0]
    assert_labelled(ax)
    data = np.asarray(artist(ax, "table").get_array())
    assert data.shape == (50, 16)
    ang = np.arange(-10, 40)[:, None] * omegas(16)
    np.testing.assert_allclose(data[:, 0::2], np.sin(ang), atol=1e-15)
    np.testing.assert_allclose(data[:, 1::2], np.cos(ang), atol=1e-15)
    assert len(fig.axes) == 2  # the colorbar
    # rows are positions: the image extent runs from -10 at the top to 39 at the bottom
    left, right, bottom, top = artist(ax, "table").get_extent()
    assert (top, bottom) == (-10.5, 39.5) and (left, right) == (-0.5, 15.5)


def test_kernel_depends_only_on_the_offset():
    fig = plot.plot_kernel(d_model=32, max_offset=40, refs=(0, 77, 5000))
    ax = fig.axes[0]
    assert_labelled(ax)
    w = omegas(32)
    curves = [artist(ax, f"ref {p}") for p in (0, 77, 5000)]
    delta = np.arange(-40, 41)
    expected = np.cos(delta[:, None] * w).sum(axis=1)  # Σ cos(ω_i Δ), written out here
    for line in curves:
        assert line.get_xdata().tolist() == delta.tolist()
        np.testing.assert_allclose(line.get_ydata(), expected, rtol=0, atol=1e-12)
    y = curves[0].get_ydata()
    np.testing.assert_allclose(y, y[::-1], atol=1e-12)  # even in Δ
    assert y[40] == pytest.approx(16)  # d_model/2 at Δ = 0
    assert len(ax.get_legend().get_texts()) == 3


def test_ladder_marks_the_wrapped_pairs():
    fig = plot.plot_ladder(d_model=512, base=10000.0, context=8192)
    ax = fig.axes[0]
    assert_labelled(ax)
    assert ax.get_yscale() == "log"
    lam = {i: float(2 * mpmath.pi / omega(512, 10000.0, i)) for i in range(256)}
    wrapped = artist(ax, "wrapped").get_offsets()
    kept = artist(ax, "unwrapped").get_offsets()
    assert len(wrapped) + len(kept) == 256
    for pts, wraps in ((wrapped, True), (kept, False)):
        for i, y in pts:
            assert y == pytest.approx(lam[int(i)], rel=1e-15)
            assert (lam[int(i)] < 8192) == wraps
    assert artist(ax, "context").get_ydata()[0] == 8192
    assert max(kept[:, 1]) == pytest.approx(60611.477, rel=1e-7)  # λ_max, Ex 7 (the seed's 60650 is an erratum)
    fig100 = plot.plot_ladder(base=100.0)
    assert len(artist(fig100.axes[0], "wrapped").get_offsets()) == 256  # base 100: every pair wraps,
    assert [a for a in fig100.axes[0].collections if a.get_gid() == "unwrapped"] == []  # and no empty entry


def test_draws_into_a_given_axes():
    fig = Figure()
    axes = fig.subplots(1, 5)
    results = [
        plot.plot_wave(ax=axes[0]), plot.plot_rotation(ax=axes[1]), plot.plot_heatmap(length=8, d_model=8, ax=axes[2]),
        plot.plot_kernel(d_model=8, max_offset=5, ax=axes[3]), plot.plot_ladder(d_model=8, ax=axes[4]),
    ]
    assert all(r is fig for r in results)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: plot.plot_wave(d_model=3), "d_model"),
        (lambda: plot.plot_wave(positions=1000), "positions"),
        (lambda: plot.plot_rotation(pair=2), "pair"),
        (lambda: plot.plot_rotation(pos=float("nan")), "pos"),
        (lambda: plot.plot_heatmap(length=10**6, d_model=512), "cells"),
        (lambda: plot.plot_kernel(refs=()), "refs"),
        (lambda: plot.plot_ladder(context=0), "context"),
        (lambda: plot.plot_ladder(base=0.5), "base"),
    ],
)
def test_bad_input_raises_before_drawing(call, match):
    with pytest.raises(PosEncError, match=match):
        call()


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'posenc\[plot\]'"):
        plot.plot_wave()
    with pytest.raises(ImportError, match="plotting needs matplotlib"):
        plot.require()


def test_importing_posenc_does_not_import_matplotlib():
    import subprocess

    code = "import sys, posenc, posenc.plot, posenc.cli; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
