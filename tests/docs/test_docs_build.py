"""The documentation site builds with ``--strict``, is complete, and works from disk with the network blocked.

``built`` (site_build.py) is one ``mkdocs build --strict`` of this checkout, for the whole session.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from site_build import MEASURED, ROOT, Built, build_site, built, open_page

import posenc

__all__ = ["built"]  # the session's build, a fixture

DOCS = ROOT / "docs"
#: A tag that makes the browser fetch something: a script, a style sheet, a font, an image, a frame.
LOADS = re.compile(r"<(?:script|link|img|iframe|source|embed|object|audio|video)\b[^>]*?\b(?:src|href|data|srcset)"
                   r"\s*=\s*[\"']?\s*(?:https?:)?//", re.I)
CSS_LOADS = re.compile(r"(?:url\(\s*[\"']?\s*(?:https?:)?//"
                       r"|@import\s+[\"']?\s*(?:url\()?\s*[\"']?(?:https?:)?//)", re.I)


def _public_names() -> dict[str, object]:
    """Every public name a user imports: posenc, posenc.torch, posenc.jax, posenc.hf, posenc.plot, posenc.page."""
    import posenc.hf
    import posenc.jax
    import posenc.page
    import posenc.plot
    import posenc.torch

    names: dict[str, object] = {}
    for module in (posenc, posenc.torch, posenc.jax, posenc.hf, posenc.plot, posenc.page):
        for name in module.__all__:
            if name != "__version__":
                names[f"{module.__name__}.{name}"] = getattr(module, name)
    return names


def _reference_kinds(site: Path) -> dict[str, str]:
    """Each reference entry's id and the kind of object mkdocstrings rendered there (module, class, function …)."""
    heading = re.compile(r'<h\d id="(posenc[\w.]*)" class="doc doc-heading">\s*'
                         r'<code class="doc-symbol doc-symbol-heading doc-symbol-(\w+)">')
    kinds: dict[str, str] = {}
    for page in (site / "reference").glob("*.html"):
        kinds.update(heading.findall(page.read_text(encoding="utf-8")))
    return kinds


def _kind(obj: object) -> str:
    if isinstance(obj, type(posenc)):
        return "module"
    if isinstance(obj, type):
        return "class"
    return "function" if callable(obj) else "attribute"


def test_the_site_builds_with_strict(built: Built) -> None:
    assert (built.site / "index.html").is_file()
    assert (built.site / "search" / "search_index.js").is_file()  # the offline plugin's inlined index
    assert "WARNING" not in built.log


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The project's config (its strictness and link validation) with one link to a page that does not exist.

    The config inherits mkdocs.yml as it is, and its hooks but one: ``on_files`` builds the worked-examples
    site (~25 s), which has nothing to do with the links between the docs; here its pages are empty files of
    the same names, so the one warning left is the broken link's (without it, the same build passes clean).
    """
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("__pycache__"))
    index = docs / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\nSee [the missing page](no-such-page.md).\n",
                     encoding="utf-8")
    (tmp_path / "hooks.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "from docs_hooks import *  # every event of the project's hooks\n"
        "from mkdocs.structure.files import File\n"
        "from posenc.page.families import FAMILIES\n\n"
        "def on_files(files, config):\n"
        "    for name in ['index', *(fam.slug for fam in FAMILIES)]:\n"
        "        files.append(File.generated(config, f'page/{name}.html', content=''))\n"
        "    return files\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nhooks: [{tmp_path / 'hooks.py'}]\n",
                      encoding="utf-8")
    proc = build_site(tmp_path / "site", config)
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("WARNING")]
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert len(warnings) == 1 and "no-such-page.md" in warnings[0], proc.stderr[-2000:]


def test_nothing_is_loaded_from_the_network(built: Built) -> None:
    offenders = []
    for path in built.site.rglob("*"):
        if path.suffix == ".html":
            offenders += [f"{path.relative_to(built.site)}: {m}" for m in LOADS.findall(path.read_text("utf-8"))]
        elif path.suffix == ".css":
            offenders += [f"{path.relative_to(built.site)}: {m}" for m in CSS_LOADS.findall(path.read_text("utf-8"))]
    assert offenders == []
    home = (built.site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis" not in home and "unpkg.com" not in home
    assert LOADS.search('<script src="https://unpkg.com/iframe-worker/shim"></script>')  # the check can fail


def test_every_public_name_has_its_reference_entry(built: Built) -> None:
    # under its public name or where it is defined (posenc.frequencies, the function, is also the name of a
    # module, which mkdocstrings would render instead), and as what it is: a function, not its module
    kinds = _reference_kinds(built.site)
    wrong = []
    for ref, obj in _public_names().items():
        kind = _kind(obj)
        defined = getattr(obj, "__name__", "") if kind == "module" else \
            f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        found = [kinds[i] for i in (ref, defined) if i in kinds]
        if kind not in found:
            wrong.append(f"{ref} ({kind}; rendered: {found or 'nothing'})")
    assert wrong == [], f"add a '::: NAME' entry to a docs/reference/api-*.md page for {wrong}"


def _signatures(site: Path) -> dict[str, str]:
    """Each reference entry's id and the text of the signature rendered under it."""
    entry = re.compile(r'<h\d id="(posenc[\w.]*)" class="doc doc-heading">.*?<div class="doc-signature[^"]*"[^>]*>'
                       r'(.*?)</div>', re.S)
    found: dict[str, str] = {}
    for page in (site / "reference").glob("*.html"):
        for ident, sig in entry.findall(page.read_text(encoding="utf-8")):
            found.setdefault(ident, " ".join(html.unescape(re.sub(r"<[^>]+>", "", sig)).split()))
    return found


def test_each_framework_form_shows_the_parameters_python_gives_it(built: Built) -> None:
    # a torch or JAX form is `def f(*args, **kwargs)` given NumPy's parameters at import
    # (posenc.support.signatures); tools/griffe_signatures.py shows the page the same ones, defaults included
    shown = _signatures(built.site)
    forms = {ref: obj for ref, obj in _public_names().items() if hasattr(obj, "__signature_of__")}
    assert {"posenc.jax.alibi_bias", "posenc.torch.t5_bias", "posenc.jax.apply_rope"} <= set(forms)
    wrong = {}
    for ref, obj in forms.items():
        text = shown.get(ref, "")
        dtype = "dtype=torch.float32" if ref.startswith("posenc.torch.") else "dtype=jnp.float32"
        for p in inspect.signature(obj).parameters.values():
            prefix = {p.VAR_KEYWORD: "**", p.VAR_POSITIONAL: "*"}.get(p.kind, "")
            if f"{prefix}{p.name}" not in text or (p.name == "dtype" and dtype not in text):
                wrong[ref] = text
    assert wrong == {}


def _nav_files(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in _nav_files(value)]
    return []


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = _nav_files(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "generated" not in p.parts)
    assert sorted(in_nav) == pages
    assert all((DOCS / f).is_file() for f in in_nav)


def test_the_generated_parts_are_there(built: Built) -> None:
    from posenc.cli import build_parser

    command = (built.site / "reference" / "command.html").read_text(encoding="utf-8")
    parser = build_parser()
    subcommands = next(a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)).choices
    for name in subcommands:
        assert f"usage: posenc {name}" in command, name
    keys = (built.site / "reference" / "hf-config-keys.html").read_text(encoding="utf-8")
    for rope_type in ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "original_max_position_embeddings"):
        assert f"<code>{rope_type}</code>" in keys, rope_type
    bench = (built.site / "reference" / "benchmarks.html").read_text(encoding="utf-8")
    machine = (DOCS / "generated" / "bench.md").read_text(encoding="utf-8").splitlines()[0]
    assert machine.removeprefix("Machine: ").split(",")[0] in bench
    page = (built.site / "page" / "index.html").read_text(encoding="utf-8")
    assert "0.079915" in page and "<svg" in page  # the seed's Ex 5 number and the inline figures


def test_the_bench_table_is_the_commands_output() -> None:
    from posenc.bench import Report, format_markdown

    lines = (DOCS / "generated" / "bench.md").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("Machine: ") and lines[0].count(",") >= 2 and lines[1] == ""
    header = format_markdown(Report("", ())).splitlines()
    assert lines[2:4] == header
    rows = [line for line in lines[4:] if line.startswith("|")]
    assert rows and all(line.count("|") == header[0].count("|") for line in rows)
    assert any("**posenc" in line for line in rows)


SHOT_PAGES = ("index.html", "how-to/rope-checkpoint.html", "how-to/hf-patch.html")


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("rel", SHOT_PAGES)
def test_pages_render_from_disk_offline(built: Built, browser: Any, rel: str, width: int) -> None:
    o = open_page(browser, built.site, rel, width)
    try:
        assert o.page.locator("article h1").first.is_visible()
        assert o.page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling
        # the theme's style sheet and script loaded from disk: the header is laid out, the search box exists
        assert o.page.locator("header.md-header").first.bounding_box()["height"] > 0
        assert o.page.locator("input.md-search__input").count() == 1
        shots = os.environ.get("POSENC_DOCS_SHOTS")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            name = rel.replace("/", "-").removesuffix(".html")
            o.page.screenshot(path=str(Path(shots) / f"{name}-{width}.png"))
            MEASURED["screenshots"] = shots
        assert o.outside == [] and o.problems == []
    finally:
        o.page.context.close()


def test_search_works_from_disk_offline(built: Built, browser: Any) -> None:
    o = open_page(browser, built.site, "index.html", 1280)
    try:
        box = o.page.locator("input.md-search__input")
        # The theme starts its search worker when the box takes focus and runs a query on a key press; a value
        # filled in (an input event, no key) is searched only if it is there when the worker gets ready, so
        # filled after that, nothing was ever searched (a 15 s timeout in a full run here). Wait for the
        # worker, then type.
        box.focus()
        o.page.wait_for_function(
            "document.querySelector('.md-search-result__meta').textContent.trim() !== 'Initializing search'",
            timeout=60000,
        )
        box.press_sequentially("rope_cos_sin")
        o.page.wait_for_selector(".md-search-result__item", timeout=15000)
        meta = o.page.locator(".md-search-result__meta").inner_text()
        assert re.match(r"\d+ matching document", meta), meta
        o.page.locator(".md-search-result__item a").first.click()
        o.page.wait_for_load_state("load")
        assert o.page.url.startswith(built.site.resolve().as_uri()) and "rope_cos_sin" in o.page.content()
        assert o.outside == [] and o.problems == []
    finally:
        o.page.context.close()


def test_the_worked_examples_page_opens_from_the_site(built: Built, browser: Any) -> None:
    o = open_page(browser, built.site, "worked-examples.html", 1280)
    try:
        o.page.get_by_role("link", name="Open the worked-examples page").click()
        o.page.wait_for_load_state("load")
        assert o.page.url == (built.site / "page" / "index.html").resolve().as_uri()
        assert "0.079915" in o.page.content()
        assert o.outside == [] and o.problems == []
    finally:
        o.page.context.close()
