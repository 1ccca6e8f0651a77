"""The house rules, checked: files stay readable, functions short, and the NumPy API imports no framework.

A file holds one concept, its code at most 330 lines (docstrings, comments
and blank lines not counted: a concept is never split for its documentation,
the split that made two import circles), and a function does one thing
(about 60 lines of code at most, its docstring not counted); numba kernel
factories, whose kernels must live inside one compiled closure, are the
exception. No module imports itself back through others (the import graph
has no circles, lazy imports included).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src" / "posenc"


def _architecture() -> Any:
    """tools/architecture.py, the one reader of the import graph (it draws the floors from it)."""
    spec = importlib.util.spec_from_file_location("architecture_tool", SRC.parents[1] / "tools" / "architecture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_TOOL = _architecture()
import_graph, circles, package_graph = _TOOL.import_graph, _TOOL.circles, _TOOL.package_graph
MAX_CODE_LINES = 330
MAX_FILE_LINES = 700  # code and its documentation together
MAX_FUNCTION_LINES = 60
KERNEL_FACTORIES = {("exact/_jit.py", "_build"), ("torch/_kernels.py", "_build"), ("exact/_place_jit.py", "build")}


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def code_lines(text: str) -> int:
    """Lines holding code: not blank, not a comment, not a module, class or function docstring."""
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                    isinstance(first.value.value, str):
                docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines = {line for tok in tokenize.generate_tokens(io.StringIO(text).readline) if tok.type not in skip
             for line in range(tok.start[0], tok.end[0] + 1)}
    return len(lines - docs)


def test_code_lines_count_code_only():
    text = '"""Doc\n\nmore."""\n# a comment\n\nx = (1,\n     2)\n\n\ndef f():\n    """Doc."""\n    return x\n'
    assert code_lines(text) == 4  # x = (1, / 2) / def f(): / return x


def test_no_file_is_too_long():
    texts = {str(p.relative_to(SRC)): p.read_text(encoding="utf-8") for p in modules()}
    assert {name: n for name, t in texts.items() if (n := code_lines(t)) > MAX_CODE_LINES} == {}
    assert {name: n for name, t in texts.items() if (n := t.count("\n")) > MAX_FILE_LINES} == {}


def test_circles_finds_a_circle_and_only_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_has_no_circles():
    graph = import_graph()
    assert "posenc.errors" in graph["posenc.rope.frequencies"]  # the graph is read (relative imports resolved)
    assert circles(graph) == []


def test_the_packages_stand_on_floors():
    """Package by package (a top-level module counts as one) the imports point one way: no circle between folders."""
    graph = package_graph()
    assert "exact" in graph["rope"] and "rope" not in graph["exact"]
    assert circles(graph) == []
    floors = _TOOL.floors(graph)
    for low, names in enumerate(floors):  # everything a package imports stands on a lower floor
        for name in names:
            assert all(any(dep in f for f in floors[:low]) for dep in graph[name]), name


def test_no_function_is_too_long():
    long = {}
    for p in modules():
        rel = str(p.relative_to(SRC))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (rel, node.name) not in KERNEL_FACTORIES:
                size = (node.end_lineno or node.lineno) - node.lineno + 1 - docstring_lines(node)
                if size > MAX_FUNCTION_LINES:
                    long[f"{rel}:{node.name}"] = size
    assert long == {}


def test_import_posenc_loads_no_framework():
    code = (
        "import sys, posenc\n"
        "heavy = [m for m in ('torch', 'matplotlib', 'numba', 'mpmath', 'jax', 'flax') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_the_top_level_keeps_the_public_entry_points_and_at_most_5_modules():
    # the cross-cutting code lives in posenc/support/, the command's signals and files in posenc/cli/
    loose = sorted(p.name for p in SRC.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(loose) <= 5, loose
    assert not any(name.startswith("_") for name in loose), loose


def test_import_posenc_installs_no_signal_handler_and_loads_none_of_the_command():
    code = (
        "import signal, sys\n"
        "before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]\n"
        "import posenc\n"
        "after = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('posenc.cli') and m != 'posenc.cli.signals')\n"
        "print(before == after, loaded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True ['posenc.cli']"
