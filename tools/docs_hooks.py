"""MkDocs hooks (mkdocs.yml ``hooks:``): the site's generated parts, made from the code at build time.

Nothing here is typed in, so nothing can go stale:

- ``<!-- posenc:command-reference -->`` becomes the help of ``posenc`` and of
  every subcommand, from the argument parser itself (``posenc.cli.build_parser``);
- ``<!-- posenc:hf-config-keys -->`` becomes the table of the rope dict keys
  that :func:`posenc.from_hf_config` reads, from the tables it validates with;
- ``<!-- posenc:bench -->`` becomes ``docs/generated/bench.md``, the output of
  ``posenc bench --markdown`` written by ``make bench-docs`` (the full run
  takes a minute, too long for every build; the file says which machine);
- ``page/index.html`` is the worked-examples page, built by
  :func:`posenc.page.build_html` (what ``posenc page`` writes).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from markdown import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "generated" / "bench.md"
MARKER = re.compile(r"<!-- posenc:([a-z-]+) -->")
#: Sphinx roles in docstrings (:func:`encode`, :mod:`posenc.torch`): shown as code in Markdown.
ROLE = re.compile(r":(?:func|mod|class|meth|data|attr|obj|exc):`~?([^`]+)`")
HELP_WIDTH = "78"  # argparse wraps to $COLUMNS: fixed, so the page does not depend on the terminal


def command_reference() -> str:
    """``posenc --help`` and each subcommand's ``--help``, as Markdown sections."""
    from posenc.cli import build_parser

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        parser = build_parser()
        parts = ["## `posenc`", "", "```text", parser.format_help().rstrip(), "```", ""]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            parts += [f"## `posenc {name}`", "", "```text", p.format_help().rstrip(), "```", ""]
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(parts)


def hf_config_keys() -> str:
    """Each ``rope_type`` with the keys its rope dict must and may hold, and the multi-axis defaults."""
    from posenc.rope import hf_config as hf

    def keys(names: set[str]) -> str:
        return ", ".join(f"`{k}`" for k in sorted(names)) or "—"

    lines = ["| `rope_type` | required keys | optional keys |", "|---|---|---|"]
    for rope_type, (required, optional) in hf._KEYS.items():
        aliases = [a for a, t in hf._ALIASES.items() if t == rope_type]
        also = f" (also `{'`, `'.join(aliases)}`)" if aliases else ""
        lines.append(f"| `{rope_type}`{also} | {keys(required)} | {keys(optional)} |")
    lines += ["", f"Every rope dict may also hold {keys(hf._COMMON)}. Any other key raises `PosEncError`.", "",
              "| `model_type` | `mrope_section` when the config has none | sections laid out |", "|---|---|---|"]
    for model, (interleaved, section) in hf._MROPE_MODELS.items():
        lines.append(f"| `{model}` | `{list(section)}` | {'interleaved' if interleaved else 'contiguous'} |")
    for model in hf._AXIAL_MODELS:
        lines.append(f"| `{model}` | axial: `[head_dim/4, head_dim/4]`, one ladder per axis | contiguous |")
    return "\n".join(lines)


def bench_table() -> str:
    """The committed ``posenc bench --markdown`` output."""
    return BENCH.read_text(encoding="utf-8").rstrip()


GENERATORS = {"command-reference": command_reference, "hf-config-keys": hf_config_keys, "bench": bench_table}


class _DoctestFences(Preprocessor):
    """Docstrings' ``>>>`` examples shown as Python code, not as Markdown (where ``>`` quotes and ``[[0.8, 0.5]]``
    reads as a link): each run of lines from a ``>>>`` line to the next blank line is fenced. Lines already
    inside a fence (the pages' own code blocks) are left as they are; outside fences, Sphinx roles become code."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fence: str | None = None
        in_doctest = False
        for line in lines:
            stripped = line.lstrip()
            if in_doctest and not stripped:
                out.append(line[: len(line) - len(stripped)] + "```")
                in_doctest = False
            elif fence is None and not in_doctest and stripped.startswith(">>>"):
                out.append(line[: len(line) - len(stripped)] + "```pycon")
                in_doctest = True
            elif not in_doctest and stripped.startswith(("```", "~~~")):
                mark = stripped[:3]
                fence = mark if fence is None else (None if stripped.startswith(fence) else fence)
            elif fence is None and not in_doctest:
                line = ROLE.sub(r"`\1`", line)
            out.append(line)
        if in_doctest:
            out.append("```")
        return out


class DoctestFences(Extension):
    """The Markdown extension that registers :class:`_DoctestFences` ahead of the fenced-code parser."""

    def extendMarkdown(self, md: Any) -> None:  # Python-Markdown's name
        md.preprocessors.register(_DoctestFences(md), "posenc_doctest_fences", 40)


@event_priority(100)  # before mkdocstrings reads the extensions
def on_config(config: Any) -> Any:
    config.markdown_extensions.append(DoctestFences())
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def replace(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: unknown generated block {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    from posenc.page import build_html

    files.append(File.generated(config, "page/index.html", content=build_html()))
    return files
