"""Figures a reader can trust at a glance: every piece of text is legible where it is drawn.

Each figure is drawn (Agg) and its artists measured in pixels: every text
lies inside the figure, every annotation inside its axes, no two texts
overlap, no text is struck through by a reference line, a legend names only
what is drawn, and symbols are set as maths (no raw ``ω_5``). The figure
functions are called as the command calls them, defaults and the cases the
issue reports (``plot ladder --context 1e5``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import combinations, pairwise

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from posenc import plot
from posenc.cli.plotting import PLOT_KINDS
from posenc.page.figures import FIGURES as PAGE_FIGURES
from posenc.page.figures import draw as draw_page_figure
from posenc.rope import YaRN

FIGURES: dict[str, Callable[[], Figure]] = {
    **{f"{name} (defaults)": kind.figure for name, kind in PLOT_KINDS.items()},
    "ladder --context 1e5": lambda: plot.plot_ladder(context=1e5),
    "ladder --base 100": lambda: plot.plot_ladder(base=100.0),
    "ladder --d-model 8 --context 1e9": lambda: plot.plot_ladder(d_model=8, context=1e9),
    "ladder --d-model 64 --context 50": lambda: plot.plot_ladder(d_model=64, context=50),
    "rotation --by -5": lambda: plot.plot_rotation(3, -5),
    "rotation --pos 100 --by 5 --pair 0": lambda: plot.plot_rotation(100, 5, pair=0),
    "rotation --pos -40 --by 2": lambda: plot.plot_rotation(-40, 2),
    "rotation --pos 1000 --by -1 --pair 0": lambda: plot.plot_rotation(1000, -1, pair=0),
    "wave --d-model 64 --positions 16": lambda: plot.plot_wave(64, positions=16),
    "heatmap --layout split --start -64": lambda: plot.plot_heatmap(start=-64, layout="split"),
    "kernel --refs 0 7 1e6 5e6": lambda: plot.plot_kernel(refs=(0, 7, 1e6, 5e6)),
    "rope --scaling yarn": lambda: plot.plot_rope(128, base=1e6, scaling=YaRN(factor=4, original_max=32768)),
    "rope --layout interleaved --pair 0": lambda: plot.plot_rope(layout="interleaved", pair=0),
    "alibi --heads 16": lambda: plot.plot_alibi(16),
    "alibi --heads 8 --convention bloom --max-distance 32": lambda: plot.plot_alibi(8, convention="bloom",
                                                                                    max_distance=32),
    "alibi --heads 2 --max-distance 8": lambda: plot.plot_alibi(2, max_distance=8),
    "alibi --heads 1": lambda: plot.plot_alibi(1),
}


def _as_on_the_page(page_figure) -> Callable[[], Figure]:
    """The page draws its figures into narrower canvases (legible at 350 px): every check holds there too."""
    return lambda: draw_page_figure(page_figure)


FIGURES.update({f"{f.key} (as on the page)": _as_on_the_page(f) for f in PAGE_FIGURES})


def _draw(fig: Figure):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _all_axes(fig: Figure) -> list:
    out = []
    todo = list(fig.axes)
    while todo:
        ax = todo.pop(0)
        if ax not in out:
            out.append(ax)
            todo += list(ax.child_axes)
    return out


def _texts(fig: Figure) -> list[Text]:
    """Every drawn, non-empty text: titles, axis labels, tick labels in view, annotations, legends."""
    found = list(fig.texts)
    for ax in _all_axes(fig):
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label,
                  ax.xaxis.get_offset_text(), ax.yaxis.get_offset_text(), *ax.texts]
        found += [t for t in ax.get_xticklabels() + ax.get_yticklabels() if _tick_in_view(t, ax)]
        legend = ax.get_legend()
        if legend is not None:
            found += [*legend.get_texts(), legend.get_title()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def _tick_in_view(t: Text, ax) -> bool:
    x, y = t.get_position()
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    if t in ax.get_xticklabels():
        return x0 - 1e-12 <= x <= x1 + 1e-12
    return y0 - 1e-12 <= y <= y1 + 1e-12


def _boxes(fig: Figure) -> list[tuple[Text, Bbox]]:
    renderer = _draw(fig)
    return [(t, t.get_window_extent(renderer)) for t in _texts(fig)]


def _overlap(a: Bbox, b: Bbox, slack: float = 1.0) -> bool:
    """True when the boxes share more than ``slack`` pixels both ways."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > slack and min(a.y1, b.y1) - max(a.y0, b.y0) > slack


@pytest.fixture(scope="module", params=list(FIGURES), ids=list(FIGURES))
def drawn(request):
    """Each figure drawn once for all the checks."""
    fig = FIGURES[request.param]()
    return fig, _boxes(fig)


def test_every_text_lies_inside_the_figure(drawn):
    fig, boxes = drawn
    frame = fig.bbox
    for t, box in boxes:
        assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, t.get_text()
        assert frame.y0 - 0.5 <= box.y0 and box.y1 <= frame.y1 + 0.5, t.get_text()


def test_annotations_lie_inside_their_axes(drawn):
    _, boxes = drawn
    for t, box in boxes:
        ax = t.axes
        if ax is None or t not in ax.texts:  # annotations and ax.text: labels of the data
            continue
        inner = ax.get_window_extent()
        assert inner.x0 - 0.5 <= box.x0 and box.x1 <= inner.x1 + 0.5, t.get_text()
        assert inner.y0 - 0.5 <= box.y0 and box.y1 <= inner.y1 + 0.5, t.get_text()


def test_no_two_texts_overlap(drawn):
    _, boxes = drawn
    clashes = [(a.get_text(), b.get_text()) for (a, p), (b, q) in combinations(boxes, 2) if _overlap(p, q)]
    assert clashes == []


def test_legends_clear_the_data_labels(drawn):
    """A legend box covers no annotation and no tick label."""
    fig, boxes = drawn
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        frame = legend.get_window_extent(renderer)
        own = set(legend.get_texts()) | {legend.get_title()}
        hit = [t.get_text() for t, box in boxes if t not in own and t.figure is fig and _overlap(frame, box)]
        assert hit == [], ax.get_title()
        for inset in ax.child_axes:  # an inset, its tick labels included, stays clear of the legend
            assert not _overlap(frame, inset.get_tightbbox(renderer)), ax.get_title()


def _covered(ax, frame: Bbox, renderer) -> list[str]:
    """The named lines and the points of ``ax`` drawn under ``frame``, a box in pixels."""
    over = Bbox.intersection(frame, ax.get_window_extent(renderer))  # lines are clipped to the axes
    if over is None:
        return []
    hit = []
    for line in ax.get_lines():
        if line.get_gid() is None:  # the backdrop (zero lines, the unit circle) is not labelled
            continue
        xy = line.get_transform().transform(line.get_xydata())
        if line.get_linestyle() not in ("None", ""):
            # every segment, sampled every half pixel: a straight line under the box has a sample inside it
            for (x0, y0), (x1, y1) in pairwise(xy):
                if not np.isfinite([x0, y0, x1, y1]).all():
                    continue
                n = int(max(abs(x1 - x0), abs(y1 - y0)) * 2) + 2
                t = np.linspace(0.0, 1.0, n)[:, None]
                if over.count_contains((1 - t) * [x0, y0] + t * [x1, y1]):
                    hit.append(line.get_gid())
                    break
        if line.get_marker() not in ("None", "", None) and over.count_contains(xy):
            hit.append(line.get_gid())
    for points in ax.collections:
        offsets = np.asarray(points.get_offsets())
        if offsets.size and over.count_contains(points.get_offset_transform().transform(offsets)):
            hit.append(points.get_gid())
    return hit


def test_legends_cover_no_line_and_no_point(drawn):
    """A legend box lies over none of the lines or points it names, nor any other drawn one."""
    fig, _ = drawn
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            assert _covered(ax, legend.get_window_extent(renderer), renderer) == [], ax.get_title()


def test_the_alibi_legend_lists_the_lines_as_they_lie():
    fig = plot.plot_alibi()
    renderer = _draw(fig)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # top to bottom, gentlest first: the press slopes of 12 heads are 2**-1 … 2**-8, then 2**-0.5 … 2**-3.5
    exponents = [float(re.search(r"2\^\{(-[\d.]+)\}", s).group(1)) for s in labels]
    assert exponents == sorted([-0.5 - k for k in range(4)] + [-1.0 - k for k in range(8)])
    assert labels[0].startswith("head 7:") and labels[-1].startswith("head 8:")
    # and the lines lie so at the right edge: each below the one listed before it
    ends = [_by_gid(ax, f"head {int(s.split()[1].rstrip(':'))}").get_ydata()[-1] for s in labels]
    assert ends == sorted(ends, reverse=True)
    frame = ax.get_legend().get_window_extent(renderer)
    assert frame.x0 >= ax.get_window_extent(renderer).x1  # 12 lines fill the axes: the legend stands beside them


def test_a_few_alibi_heads_keep_the_legend_inside():
    fig = plot.plot_alibi(1)
    renderer = _draw(fig)
    ax = fig.axes[0]
    frame, inner = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    assert inner.x0 <= frame.x0 and frame.x1 <= inner.x1 and inner.y0 <= frame.y0 and frame.y1 <= inner.y1


def test_reference_lines_strike_no_text(drawn):
    """A horizontal or vertical reference line (the context, a period) passes through no label."""
    fig, boxes = drawn
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        for line in ax.get_lines():
            x, y = line.get_xdata(), line.get_ydata()
            if len(x) != 2 or not (x[0] == x[1] or y[0] == y[1]) or line.get_gid() is None:
                continue  # only the named reference lines (context, period): the backdrop axes are not labelled
            path = line.get_window_extent(renderer)
            for t, box in boxes:
                if t.axes is ax and t in ax.texts:
                    assert not _overlap(path.padded(1.0), box, slack=0.0), (line.get_gid(), t.get_text())


def test_legends_name_only_what_is_drawn(drawn):
    fig, _ = drawn
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        labels = [t.get_text() for t in legend.get_texts()]
        assert not [s for s in labels if re.search(r"(?<![\d.])0 pairs", s)], labels
        for label in labels:
            source = next((a for a in ax.get_children() if getattr(a, "get_label", lambda: None)() == label), None)
            if isinstance(source, Collection):
                assert len(source.get_offsets()) > 0, label
            if isinstance(source, Line2D):
                assert len(source.get_xdata()) > 0, label


def test_symbols_are_set_as_maths(drawn):
    """Subscripts and powers are typeset: outside $…$ no ``ω_5``, ``h_d``, ``d_model`` or ``^`` (names such as
    ``big_vision`` are names)."""
    _, boxes = drawn
    for t, _ in boxes:
        plain = re.sub(r"\$[^$]*\$", "", t.get_text())
        assert not re.search(r"(?<!\w)\w{1,2}_\w|\w_\w{1,2}(?!\w)|\^", plain), t.get_text()


# ---------------------------------------------------------------- the cases the issue names

def _by_gid(ax, gid):
    (found,) = [a for a in ax.get_children() if a.get_gid() == gid]
    return found


def test_ladder_label_clears_the_context_line_and_drops_the_empty_entry():
    fig = plot.plot_ladder(context=1e5)
    renderer = _draw(fig)
    ax = fig.axes[0]
    (label,) = [t for t in ax.texts if "lambda_{max}" in t.get_text()]
    assert "60611.5" in label.get_text()
    line = _by_gid(ax, "context").get_window_extent(renderer)
    box = label.get_window_extent(renderer)
    assert box.y1 < line.y0 or box.y0 > line.y1  # wholly above or below the context line
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "wraps (λ < context): 256 pairs", "context = 100000 positions"]
    assert [a.get_gid() for a in ax.collections] == ["wrapped"]  # no empty scatter left behind


def test_rotation_inset_ticks_stay_clear_of_the_main_axis():
    fig = plot.plot_rotation()
    renderer = _draw(fig)
    ax = fig.axes[0]
    (inset,) = ax.child_axes
    main_ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() + ax.get_yticklabels()
                  if t.get_text() and _tick_in_view(t, ax)]
    inner = ax.get_window_extent(renderer)
    labels = [t for t in inset.get_xticklabels() + inset.get_yticklabels() if t.get_text() and _tick_in_view(t, inset)]
    assert 4 <= len(labels) <= 8  # a few ticks, not a crowd
    for t in labels:
        box = t.get_window_extent(renderer)
        # inside the main axes with room to spare: clear of its spines and of its own tick labels
        assert box.x0 >= inner.x0 + 8 and box.y0 >= inner.y0 + 8, t.get_text()
        assert not any(_overlap(box.padded(4), m) for m in main_ticks), t.get_text()


def test_rope_titles_are_set_as_maths():
    fig = plot.plot_rope()
    left, right = fig.axes[0], fig.axes[1]
    assert r"$\omega_{5}" in left.get_title() and r"$\lambda_{5}" in left.get_title()
    assert "$h_d = 64$" in right.get_title()
