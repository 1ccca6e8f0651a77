"""The README stays short, opens with the two make commands CI runs, and links only to pages that exist.

Its code blocks run in test_docs_examples.py; this file checks its shape.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _nav_files(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    items = nav.values() if isinstance(nav, dict) else nav if isinstance(nav, list) else []
    return [f for item in items for f in _nav_files(item)]


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_is_short() -> None:
    assert len(_text().splitlines()) <= 200


def test_it_opens_with_make_tour_and_make_test_which_ci_runs() -> None:
    first = re.search(r"^```(\w*)\n(.*?)^```", _text(), re.S | re.M)
    assert first is not None and first.group(1) == "sh"
    commands = [line.split("#", 1)[0].strip() for line in first.group(2).splitlines()]
    assert commands[:2] == ["make tour", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^tour:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert any(line.startswith("make test") for line in ci)  # "the README's test command"


def test_every_link_is_a_file_and_every_docs_link_a_page_of_the_site() -> None:
    targets = [t for t in LINK.findall(_text()) if "://" not in t]
    assert targets, "the README links into the site"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []
    in_nav = set(_nav_files(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]))
    pages = [t.removeprefix("docs/") for t in targets if t.startswith("docs/") and t.endswith(".md")]
    assert pages and [p for p in pages if p not in in_nav] == []


def test_the_job_table_names_each_job_and_its_function() -> None:
    text = _text()
    table = text[text.index("## Which function do I need"):text.index("## Three examples")]
    for name in ("posenc.hf.patch", "timestep_embedding", "posenc.torch.Timesteps", "rope_preset", "encode_nd",
                 "nerf_encoding", "posenc.jax", "posenc tour"):
        assert name in table, name
    assert "**The seed** is" in text
