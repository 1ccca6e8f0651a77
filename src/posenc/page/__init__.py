"""The worked-examples site: ``posenc page --out DIR`` writes ``DIR/index.html`` and one page per family.

``index.html`` is the seed's sinusoid: the formula, the scenario matrix, the
eight worked cases with their checks and figures (inline SVG from
:mod:`posenc.plot`), an explorer that recomputes the encoding for any
setting bit for bit as posenc does, and the self-test. The family pages
(RoPE, the scalings, M-RoPE, ALiBi, T5, xPos, timesteps, NeRF bands;
:mod:`posenc.page.families`) follow the same form; RoPE and the scalings
carry explorers and a precision view (:mod:`posenc.parity.precision`). Each
file is self-contained; they link to one another. Needs the ``plot`` extra
(matplotlib).
"""

from .build import build_html
from .site import build_family, build_site

__all__ = ["build_family", "build_html", "build_site"]
