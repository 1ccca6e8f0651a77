"""``posenc page``: one self-contained file, written atomically, with posenc's ladders inside it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser

import mpmath
import numpy as np
import pytest

import posenc
from cli_helpers import run
from posenc.cli.page import write_page
from posenc.page import build_html
from posenc.page.data import BASES, CONTEXTS, D_MODELS, explorer_data
from posenc.page.families import SITE
from posenc.page.figures import inline_svg
from posenc.plot import MISSING


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.meta: list[dict[str, str | None]] = []
        self._in: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._in = dict(attrs)
            self.scripts.append((self._in, ""))
        elif tag == "meta":
            self.meta.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in = None


def test_command_writes_the_site(capsys, tmp_path):
    code, out, err = run(capsys, "page", "--out", str(tmp_path / "site"))
    path = tmp_path / "site" / "index.html"
    assert (code, err) == (0, "")
    assert out.startswith(f"wrote {path} and {len(SITE) - 1} more pages (") and out.count("\n") == 1
    # every page of the navigation, nothing else, no temp file left
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == sorted(f for f, _ in SITE)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert path.stat().st_size < 2_000_000


@pytest.fixture(scope="module")
def html() -> str:
    return build_html()


def test_self_contained_no_url(html):
    assert "://" not in html  # no http(s), no namespace URL, no file link
    # links only to the page's own anchors and to the site's other pages, by relative name
    targets = re.findall(r"""\s(?:src|href)=["']([^"'#][^"']*)["']""", html)
    assert targets and set(targets) <= {f for f, _ in SITE}
    assert not re.search(r"""\ssrc=""", html)
    assert "@import" not in html and "url(" not in html.replace("url(#", "")


def test_csp_allows_exactly_the_page_script(html):
    p = _Collect()
    p.feed(html)
    csp = next(m["content"] for m in p.meta if m.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None and "default-src 'none'" in csp
    code = [text for attrs, text in p.scripts if "type" not in attrs]
    assert len(code) == 1
    digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp


def test_rebuilds_are_identical_and_replace_atomically(tmp_path, monkeypatch, html):
    """Two writers at once: each writes aside and renames, so the file is always one whole page, the same one."""
    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(lambda _: write_page(tmp_path), range(2)))
    assert paths == [tmp_path / "index.html"] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]
    first = paths[0].read_text(encoding="utf-8")
    assert first == html  # the same page whoever builds it, whenever

    def broken(*_a, **_k):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr("posenc.page.build.render", broken)
    with pytest.raises(RuntimeError, match="drawing failed"):
        write_page(tmp_path)
    assert paths[0].read_text(encoding="utf-8") == first  # the old page survives a failed build
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]


def test_without_matplotlib_exits_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code, out, err = run(capsys, "page", "--out", str(tmp_path / "p"))
    assert (code, out, err) == (2, "", f"posenc: error: {MISSING}\n")
    assert not (tmp_path / "p").exists()


def test_ladders_in_the_page_are_posencs():
    data = json.loads(json.dumps(explorer_data()))  # what the page reads: JSON text
    words = np.frombuffer(base64.b64decode(data["ladders"]), dtype="<f8")
    assert words.size == 4 * len(BASES) * sum(d // 2 for d in D_MODELS)
    at = 0
    with mpmath.workdps(60):
        for b in BASES:
            for d in D_MODELS:
                n = d // 2
                w0, w1, w2, lam = (words[at + j * n: at + (j + 1) * n] for j in range(4))
                at += 4 * n
                assert np.array_equal(w0, posenc.frequencies(d, b)) and np.array_equal(lam, posenc.wavelengths(d, b))
                for i in (0, n // 2, n - 1):  # the triple holds ω_i to ~160 bits (mpmath, independently)
                    true = mpmath.power(mpmath.mpf(b), -mpmath.mpf(2 * i) / d)  # 2i/d: exact, d a power of 2
                    err = abs(mpmath.mpf(w0[i]) + mpmath.mpf(w1[i]) + mpmath.mpf(w2[i]) - true) / true
                    assert err < mpmath.mpf(2) ** -150, (b, d, i)
    assert data["min_base"] == [[posenc.min_base(c, d) for d in D_MODELS] for c in CONTEXTS]
    assert data["constants"]["HALF_PI"][0] == np.pi / 2


def test_inline_svg_prefixes_ids_and_drops_the_global_style():
    svg = ('<?xml version="1.0"?>\n<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="10pt" height="5pt" '
           'viewBox="0 0 10 5" xmlns="http://www.w3.org/2000/svg" version="1.1"><metadata>m</metadata><defs>'
           '<style type="text/css">*{stroke-linecap: butt}</style></defs><defs><path id="g1" d="M 0 0 \nL 1 1"/>'
           '</defs><g clip-path="url(#c1)"><use xlink:href="#g1"/></g><clipPath id="c1"/></svg>')
    out = inline_svg(svg, "fig-x", 'a "quoted" <label>')
    assert out.startswith('<svg role="img" aria-label="a &quot;quoted&quot; &lt;label&gt;" '
                          'style="stroke-linecap: butt" viewBox="0 0 10 5">')
    assert "<style" not in out and "metadata" not in out and "xmlns" not in out and "pt\"" not in out
    assert re.findall(r'id="([^"]+)"', out) == ["fig-x-0", "fig-x-1"]
    assert 'href="#fig-x-0"' in out and "url(#fig-x-1)" in out and "\n" not in out


def test_each_figure_is_drawn_once_per_process_even_by_threads_at_once(monkeypatch):
    """The index page's figures are kept after their first drawing (every ``posenc page`` and ``tour`` builds the
    page): eight threads asking at once get one drawing each, the same text, and a later build draws nothing."""
    from posenc.page import figures

    monkeypatch.setattr(figures, "_RENDERED", {})
    drawn: list[str] = []
    real = figures.draw
    monkeypatch.setattr(figures, "draw", lambda fig: drawn.append(fig.key) or real(fig))
    with ThreadPoolExecutor(8) as pool:
        svgs = list(pool.map(figures.render, figures.FIGURES * 2 + figures.FIGURES[:1] * 6))
    assert sorted(drawn) == sorted(f.key for f in figures.FIGURES)
    keys = [f.key for f in figures.FIGURES * 2 + figures.FIGURES[:1] * 6]
    pairs = list(zip(svgs, keys, strict=True))
    assert all(s.startswith('<svg role="img" aria-label=') and f'id="fig-{k}-0"' in s for s, k in pairs)
    assert len({s for s, k in pairs if k == "wave"}) == 1
    build_html()
    assert len(drawn) == len(figures.FIGURES)
