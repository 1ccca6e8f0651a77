"""The bias figures: the plotted data, read back from the artists, against the formulas written out here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from transformers.models.t5.modeling_t5 import T5Attention

from posenc import PosEncError, plot


def artist(ax, gid: str):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_alibi_lines_are_minus_slope_times_distance() -> None:
    fig = plot.plot_alibi(12, max_distance=300, penalty=2.0)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    slopes = [2.0 ** -k for k in range(1, 9)] + [2.0 ** (-k / 2) for k in (1, 3, 5, 7)]
    for h, m in enumerate(slopes):
        line = artist(ax, f"head {h}")
        d = line.get_xdata()
        assert d[0] == 0 and d[-1] == 300
        np.testing.assert_allclose(line.get_ydata(), -m * d, rtol=1e-15, atol=0)
        if 2.0 / m <= 300:
            x, y = artist(ax, f"reach {h}").get_data()
            assert x[0] == pytest.approx(2.0 / m, rel=1e-15) and y[0] == -2.0
    assert artist(ax, "penalty").get_ydata()[0] == -2.0


@pytest.mark.parametrize("convention", ["bloom", "mpt"])
def test_alibi_conventions_draw_the_same_lines(convention: str) -> None:
    a = plot.plot_alibi(6, max_distance=50).axes[0]
    b = plot.plot_alibi(6, convention=convention, max_distance=50).axes[0]
    for h in range(6):
        np.testing.assert_allclose(artist(a, f"head {h}").get_ydata(), artist(b, f"head {h}").get_ydata(), atol=1e-15)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_buckets_staircase_is_t5s(bidirectional: bool) -> None:
    ax = plot.plot_buckets(bidirectional=bidirectional, span=400).axes[0]
    line = artist(ax, "buckets")
    rel = line.get_xdata()
    want = T5Attention._relative_position_bucket(torch.from_numpy(np.asarray(rel)), bidirectional=bidirectional)
    assert np.array_equal(line.get_ydata(), want.numpy())
    assert artist(ax, "max_distance 128").get_xdata()[0] == 128
    e = 8 if bidirectional else 16  # max_exact: one bucket per distance below it
    assert artist(ax, f"max_exact {e}").get_xdata()[0] == e and f"below {e}" in ax.get_title()


def test_xpos_lines_are_zeta_to_the_offset_over_scale_base() -> None:
    ax = plot.plot_xpos(16, gamma=0.5, scale_base=256, max_offset=1000).axes[0]
    zeta = (np.arange(8) * 2 / 16 + 0.5) / 1.5
    for i in range(8):
        line = artist(ax, f"pair {i}")
        off = line.get_xdata()
        np.testing.assert_allclose(line.get_ydata(), zeta[i] ** (off / 256), rtol=1e-14)
    marks = artist(ax, "at scale_base").get_offsets()
    np.testing.assert_allclose(marks[:, 1], zeta, rtol=1e-14)
    assert ax.get_yscale() == "log"


def test_into_given_axes() -> None:
    fig = plot.require()()
    axes = fig.subplots(1, 3)
    assert plot.plot_buckets(ax=axes[0]) is fig and plot.plot_xpos(ax=axes[1]) is fig
    assert plot.plot_alibi(ax=axes[2]) is fig and len(fig.axes) == 3


@pytest.mark.parametrize("call, fragment", [
    (lambda: plot.plot_alibi(65), "n_heads"),
    (lambda: plot.plot_alibi(8, max_distance=0), "max_distance"),
    (lambda: plot.plot_alibi(8, penalty=0), "penalty"),
    (lambda: plot.plot_buckets(num_buckets=32, max_distance=10), "max_distance"),
    (lambda: plot.plot_buckets(span=10**6), "span"),
    (lambda: plot.plot_xpos(2048), "rotary_dim"),
    (lambda: plot.plot_xpos(16, scale_base=0), "scale_base"),
])
def test_bad_input(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PosEncError, match=fragment):
        call()
