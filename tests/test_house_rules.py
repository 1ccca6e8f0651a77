"""The house rules, checked: files stay readable, functions short, and the NumPy API imports no framework.

A file holds one concept (about 400 lines at most) and a function does one
thing (about 60 lines of code at most, its docstring not counted); numba
kernel factories, whose kernels must live inside one compiled closure, are
the exception.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "posenc"
MAX_FILE_LINES = 420
MAX_FUNCTION_LINES = 60
KERNEL_FACTORIES = {("exact/_jit.py", "_build"), ("torch/_kernels.py", "_build"), ("exact/_place_jit.py", "build")}


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def test_no_file_is_too_long():
    sizes = {str(p.relative_to(SRC)): p.read_text(encoding="utf-8").count("\n") for p in modules()}
    assert {name: n for name, n in sizes.items() if n > MAX_FILE_LINES} == {}


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
