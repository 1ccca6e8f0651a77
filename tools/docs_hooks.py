"""MkDocs hooks (mkdocs.yml ``hooks:``): the site's generated parts, made from the code at build time.

Nothing here is typed in, so nothing can go stale:

- ``<!-- posenc:command-reference -->`` becomes the help of ``posenc`` and of
  every subcommand, from the argument parser itself (``posenc.cli.build_parser``);
- ``<!-- posenc:hf-config-keys -->`` becomes the table of the rope dict keys
  that :func:`posenc.from_hf_config` reads, from the tables it validates with;
- ``<!-- posenc:bench -->`` becomes ``docs/generated/bench.md``, the output of
  ``posenc bench --markdown`` written by ``make bench-docs`` (the full run
  takes a minute, too long for every build; the file says which machine);
- ``page/*.html`` is the worked-examples site, ``page/index.html`` (the sinusoid)
  and one page per family, built by :func:`posenc.page.build_site` (what ``posenc page`` writes).
"""

from __future__ import annotations

import argparse
import ast
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
    """The rope types :func:`posenc.from_hf_config` reads (its registry), the keys every rope dict may hold,
    the families' multi-axis defaults, and the families refused by name."""
    from posenc import PosEncError
    from posenc.hf import config as hf
    from posenc.hf import families as fam
    from posenc.rope.registry import registered_rope_types, scaling_factory
    from posenc.rope.scaling.reading import COMMON_KEYS

    def keys(names: object) -> str:
        return ", ".join(f"`{k}`" for k in sorted(names)) or "—"  # type: ignore[call-overload]

    def own_keys(rope_type: str) -> set[str]:
        # the factory's own answer to a key it cannot know: its check_keys message lists what it allows
        try:
            scaling_factory(rope_type)({"__posenc_probe__": 0}, {"max_position_embeddings": 4096})  # type: ignore[misc]
        except PosEncError as exc:
            text = str(exc)
            if "allowed: " in text:
                return set(ast.literal_eval(text.split("allowed: ", 1)[1])) - COMMON_KEYS
        return set()

    lines = ["| `rope_type` | its own keys | read by |", "|---|---|---|"]
    for rope_type in registered_rope_types():
        factory = scaling_factory(rope_type)
        aliases = [a for a, t in hf._ALIASES.items() if t == rope_type]
        also = f" (also `{'`, `'.join(aliases)}`)" if aliases else ""
        where = f"`{getattr(factory, '__module__', '?')}.{getattr(factory, '__name__', '?')}`"
        lines.append(f"| `{rope_type}`{also} | {keys(own_keys(rope_type))} | {where} |")
    lines += ["", f"Every rope dict may hold {keys(COMMON_KEYS)} beside its type's own keys. Any other key "
              "raises `PosEncError` naming it.", "",
              "| `model_type` | `mrope_section` when the config has none | sections laid out |", "|---|---|---|"]
    for model, (interleaved, section) in hf._MROPE_MODELS.items():
        lines.append(f"| `{model}` | `{list(section)}` | {'interleaved' if interleaved else 'contiguous'} |")
    for model in hf._AXIAL_MODELS:
        lines.append(f"| `{model}` | axial: `[head_dim/4, head_dim/4]`, one ladder per axis | contiguous |")
    lines += ["", "Families refused by name (never read as plain RoPE):", "", "| `model_type` | why |", "|---|---|"]
    for model, why in sorted({**fam.NO_ROPE, **fam._NOT_READ}.items()):
        lines.append(f"| `{model}` | {why} |")
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

    from posenc.page import build_site

    for name, data in build_site().items():
        files.append(File.generated(config, f"page/{name}", content=data.decode("utf-8")))
    return files
