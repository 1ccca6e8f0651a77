"""The README's examples run as written: every ``>>>`` line is a doctest, every other python block executes.

Blocks run in order in one namespace, as a reader pasting them would: a later
block may use what an earlier one defined (the torch RoPE example reads the
``llama31`` config of the NumPy one).
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import numpy as np

import posenc

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_python_examples():
    blocks = python_blocks()
    assert any(">>>" in b for b in blocks) and any(">>>" not in b for b in blocks)


def test_readme_python_blocks_run_as_written():
    namespace: dict[str, object] = {"np": np, "posenc": posenc}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(python_blocks()):
        if ">>>" in block:
            test = parser.get_doctest(block, namespace, f"README block {i}", str(README), 0)
            result = runner.run(test, clear_globs=False)
            assert result.failed == 0, f"README block {i}: {result.failed} of {result.attempted} examples failed"
            namespace.update(test.globs)  # DocTest ran on a copy
        else:
            exec(compile(block, f"README block {i}", "exec"), namespace)
