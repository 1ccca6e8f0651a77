"""posenc's figures as inline SVG: drawn by :mod:`posenc.plot`, written to a string, made safe to inline.

matplotlib writes each figure as a standalone SVG document. Inlined side by
side in one HTML page, their ids (glyphs, clip paths) would collide and
their ``<style>`` would apply to the whole page, so each figure's ids are
renamed (its prefix and a number, in order of appearance: matplotlib's are
random hashes, so the same figure now gives the same text), the style moves
onto the root element, and the XML prolog and metadata go. No matplotlib
setting is changed: drawing a page touches no global state.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import plot

__all__ = ["FIGURES", "PageFigure", "draw", "inline_svg", "render"]


@dataclass(frozen=True)
class PageFigure:
    """One figure of the page.

    Attributes:
        key: its name, also the prefix of its ids (``wave``).
        cell: the worked case it illustrates (``B``).
        caption: what it shows, in words (the figure's accessible name too).
        draw: the :mod:`posenc.plot` function, called with its defaults.
        size: inches; smaller than the functions' own, so that the text stays
            legible when a phone shows the figure 350 px wide.
    """

    key: str
    cell: str
    caption: str
    draw: Callable[..., Any]
    size: tuple[float, float] = (6.4, 4.2)


FIGURES: tuple[PageFigure, ...] = (
    PageFigure("wave", "B", "Figure s02: the fastest channel, sin(pos), at the integer positions; the dashed red "
               "line marks one full period, 2π.", plot.plot_wave),
    PageFigure("heatmap", "C", "The encoding table: the fast channels on the left alternate down the rows, "
               "the slow ones on the right barely change.", plot.plot_heatmap),
    PageFigure("rotation", "E", "Figure s03: shifting by k rotates the slow pair from pos (blue) to pos + k "
               "(orange) by φ = ω₁·k; sine on top, as the seed stacks it.", plot.plot_rotation, (6.0, 5.8)),
    PageFigure("ladder", "G", "The wavelength ladder against the context: red crosses turn more than once, "
               "and the slowest pair decides whether the base suffices.", plot.plot_ladder),
    PageFigure("kernel", "H", "PE(p)·PE(p + Δ) against the offset Δ for several reference positions: the curves "
               "coincide and are symmetric, the score depends only on |p − q|.", plot.plot_kernel),
)

_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_STYLE = re.compile(r"\s*<defs>\s*<style[^>]*>(.*?)</style>\s*</defs>", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(href="#|url\(#)([^")]+)')
_SIZE = re.compile(r'\s(width|height)="[^"]*pt"')
_XMLNS = re.compile(r'\s(xmlns(:xlink)?|version)="[^"]*"')


def inline_svg(svg: str, prefix: str, label: str) -> str:
    """A standalone matplotlib SVG made fit to sit in an HTML page beside others.

    >>> s = '<?xml ?><svg width="5pt" height="2pt" viewBox="0 0 5 2"><defs><style>*{a: b}</style></defs>'
    >>> out = inline_svg(s + '<g id="x" clip-path="url(#x)"/><use xlink:href="#x"/></svg>', "f", "A & B")
    >>> out[:70]
    '<svg role="img" aria-label="A &amp; B" style="a: b" viewBox="0 0 5 2">'
    >>> out[70:]
    '<g id="f-0" clip-path="url(#f-0)"/><use xlink:href="#f-0"/></svg>'
    """
    from html import escape

    text = _PROLOG.sub("", svg, count=1)
    text = _METADATA.sub("", text)
    style = ""
    m = _STYLE.search(text)
    if m:
        style = " ".join(m.group(1).strip().strip("*{}").split())
        text = text[: m.start()] + text[m.end():]
    text = _SIZE.sub("", text)
    names = {old: f"{prefix}-{n}" for n, old in enumerate(dict.fromkeys(_ID.findall(text)))}
    text = _ID.sub(lambda g: f'id="{names[g.group(1)]}"', text)
    text = _REF.sub(lambda g: g.group(1) + names.get(g.group(2), f"{prefix}-{g.group(2)}"), text)
    # inside HTML the SVG namespace is implied, and the parser knows xlink:href
    root = text.index(">")
    text = _XMLNS.sub("", text[:root]) + text[root:]
    attrs = f'role="img" aria-label="{escape(label)}"' + (f' style="{escape(style)}"' if style else "")
    text = text.replace("<svg", f"<svg {attrs}", 1)
    # matplotlib breaks every path after each point; one space carries the same meaning
    return re.sub(r"\s*\n\s*", " ", text).replace("> <", "><").strip()


def _fit_title(figure: Any, ax: Any) -> None:
    """Shrink the title's type (11 pt down to 8) until, laid out, it fits inside the narrower figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    for size in (11, 10, 9, 8):
        ax.title.set_fontsize(size)
        canvas.draw()  # constrained layout places the axes, and so the title, when drawn
        box = ax.title.get_window_extent(canvas.get_renderer())
        if box.x0 >= 0 and box.x1 <= figure.bbox.width:
            return


def draw(fig: PageFigure) -> Any:
    """The page's matplotlib Figure: the plot at the page's size, its title fitted to the width."""
    figure = plot.require()(figsize=fig.size, dpi=100, layout="constrained")
    ax = figure.add_subplot()
    fig.draw(ax=ax)
    _fit_title(figure, ax)
    return figure


#: Each figure's inline SVG, drawn once per process: a figure is its plot function at its defaults, so it
#: depends on nothing but this code (the family pages are kept the same way, :func:`~posenc.page.build_site`).
#: The index page is built by every ``posenc page`` and ``posenc tour``; its five figures were ~2.4 s of each
#: build (matplotlib's constrained layout and text metrics), the rest of the page ~0.3 s.
_RENDERED: dict[PageFigure, str] = {}


def render(fig: PageFigure) -> str:
    """One figure as inline SVG, drawn on the first call and kept (the same text every time).

    >>> render(FIGURES[0]) is render(FIGURES[0])
    True
    """
    with plot.DRAWING:  # held while drawing anyway: a second caller waits and then reads the first one's SVG
        known = _RENDERED.get(fig)
        if known is None:
            figure = draw(fig)
            buf = io.StringIO()
            figure.savefig(buf, format="svg", metadata={"Date": None})
            known = _RENDERED[fig] = inline_svg(buf.getvalue(), f"fig-{fig.key}", fig.caption)
    return known
