"""The worked-examples page: ``posenc page --out DIR`` writes ``DIR/index.html``.

One self-contained file: the formula, the scenario matrix, the eight worked
cases with their checks and figures (inline SVG from :mod:`posenc.plot`),
an explorer that recomputes the encoding for any setting bit for bit as
posenc does, and the self-test. Needs the ``plot`` extra (matplotlib).
"""

from .build import build_html, write_page

__all__ = ["build_html", "write_page"]
