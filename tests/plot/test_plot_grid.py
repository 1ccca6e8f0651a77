"""plot_grid: the drawn similarity maps are the cosine similarities of the encodings, per convention.

The reference similarity is written here from the default convention's
formula (mean over axes of Σ cos(ω_i·Δ)), or from encode_nd's vectors for the
presets (whose exactness test_conventions_nd.py checks against mpmath).
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

import posenc
from posenc import PosEncError
from posenc.plot import plot_grid


def test_every_convention_gets_a_panel_with_its_map():
    fig = plot_grid((6, 5), 32, patch=(2, 3))
    assert isinstance(fig, Figure)
    panels = [a for a in fig.axes if a.get_gid()]
    assert [a.get_gid() for a in panels] == ["axial", "mae", "big_vision", "positional-encodings"]
    i, j = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    w = 10000.0 ** (-np.arange(8) / 8)
    expect = (np.cos(np.multiply.outer(i - 2, w)).sum(-1) + np.cos(np.multiply.outer(j - 3, w)).sum(-1)) / 16
    np.testing.assert_allclose(panels[0].get_images()[0].get_array(), expect, rtol=0, atol=1e-14)
    mae = panels[1].get_images()[0].get_array()
    e = posenc.encode_nd(posenc.grid(6, 5), 32, convention="mae", dtype=np.float64)
    ref = e @ e[2 * 5 + 3] / 16  # every row has norm² = 16 (16 (sin, cos) pairs)
    np.testing.assert_allclose(mae, ref.reshape(6, 5), rtol=0, atol=1e-14)
    for a in panels:
        marker = next(c for c in a.get_children() if c.get_gid() == "patch")
        assert (marker.get_xdata()[0], marker.get_ydata()[0]) == (3, 2)  # column, row
        assert a.get_title() and a.get_xlabel() and a.get_ylabel()
    assert "(2, 3)" in fig.get_suptitle()


def test_one_convention_into_given_axes():
    base = Figure()
    ax = base.add_subplot()
    fig = plot_grid((4, 4), 16, conventions=["big_vision"], ax=ax)
    assert fig is base and ax.get_gid() == "big_vision"
    assert ax.get_images()[0].get_array()[2, 2] == pytest.approx(1.0, abs=1e-15)  # the default patch: the centre


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"sizes": (4, 4, 4)}, "\\(h, w\\)"),
    ({"sizes": (1, 4)}, "2 … 128"),
    ({"patch": (4, 0), "sizes": (4, 4)}, "patch\\[0\\]"),
    ({"d_model": 10}, "even shares"),
    ({"conventions": ["mae", "axial"], "ax": "x"}, "exactly one"),
    ({"conventions": ["fairseq"]}, "n-D preset"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(PosEncError, match=match):
        plot_grid(**kwargs)
