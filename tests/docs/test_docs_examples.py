"""Every code block of the README and of the documentation site runs as written.

Each page runs on its own, its blocks in order in one namespace, as a reader
pasting them would (a later block may use what an earlier one defined):

- ```` ```python ```` blocks with ``>>>`` lines are doctests; other python
  blocks are executed;
- ```` ```console ```` blocks are terminal sessions: each ``$ posenc ...``
  line runs the command in process (``posenc.cli.main``) in a temporary
  folder, and what it printed must match the lines below it (a line ``...``
  stands for any lines; ``$ echo $?`` prints the exit status of the command
  before it);
- ```` ```sh ```` blocks are commands to type: a ``posenc ...`` line runs as
  above and must exit 0; the only other commands allowed are the setup ones
  that cannot run inside a test (:data:`NOT_RUN`: installing, ``make``, …);
- ```` ```text ```` and unlabelled blocks are output or trees, not code; any
  other language fails the test, so no block can hide from it.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / "README.md"]
    + [p for p in (ROOT / "docs").rglob("*.md") if "generated" not in p.relative_to(ROOT / "docs").parts]
)
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)
#: Setup commands shown to the reader that a test cannot run (they install or build the environment itself).
NOT_RUN = ("pip install ", "make ", "apt-get ", "git clone ", "cd ", "python -m venv ")
LANGUAGES = {"python", "console", "sh", "text", ""}


def blocks(page: Path) -> list[tuple[str, str]]:
    """(language, code) of every fenced block of a page, in order."""
    return FENCE.findall(page.read_text(encoding="utf-8"))


def _ids(pages: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in pages]


def run_posenc(command: str, cwd: Path) -> tuple[int, str]:
    """(exit status, stdout and stderr) of a ``posenc ...`` command line, run in process in ``cwd``."""
    argv = shlex.split(command)
    assert argv[0] == "posenc", command
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = main(argv[1:])
    finally:
        os.chdir(here)
    return status, out.getvalue()


def matches(expected: str, got: str) -> bool:
    """Doctest's comparison with ``...`` for any text, trailing spaces ignored on both sides."""
    strip = lambda text: "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"  # noqa: E731
    return doctest.OutputChecker().check_output(strip(expected), strip(got), doctest.ELLIPSIS)


def run_console(block: str, cwd: Path, where: str) -> None:
    sessions = re.split(r"^\$ ", block, flags=re.M)
    assert sessions[0].strip() == "", f"{where}: a console block starts with a '$ ' command line"
    status = None
    for session in sessions[1:]:
        command, _, expected = session.partition("\n")
        if command.strip() == "echo $?":
            assert status is not None, f"{where}: 'echo $?' before any command"
            got = f"{status}\n"
        else:
            status, got = run_posenc(command, cwd)
        assert matches(expected, got), f"{where}: $ {command}\n--- shown ---\n{expected}\n--- printed ---\n{got}"


def run_sh(block: str, cwd: Path, where: str) -> None:
    for line in block.splitlines():
        command = line.split(" #", 1)[0].strip()
        if not command or command.startswith("#") or command.startswith(NOT_RUN):
            continue
        status, got = run_posenc(command, cwd)
        assert status == 0, f"{where}: $ {command} exited {status}:\n{got}"


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_code_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    namespace: dict[str, object] = {"np": np, "posenc": posenc}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    name = str(page.relative_to(ROOT))
    for i, (language, code) in enumerate(blocks(page)):
        where = f"{name} block {i} ({language or 'plain'})"
        assert language in LANGUAGES, f"{where}: a ```{language} block would not run; use one of {sorted(LANGUAGES)}"
        if language == "python" and ">>>" in code:
            test = parser.get_doctest(code, namespace, where, str(page), 0)
            result = runner.run(test, clear_globs=False)
            assert result.failed == 0, f"{where}: {result.failed} of {result.attempted} examples failed"
            namespace.update(test.globs)  # DocTest ran on a copy
        elif language == "python":
            here = os.getcwd()
            os.chdir(tmp_path)  # a block that writes a file writes it here
            try:
                exec(compile(code, where, "exec"), namespace)
            finally:
                os.chdir(here)
        elif language == "console":
            run_console(code, tmp_path, where)
        elif language == "sh":
            run_sh(code, tmp_path, where)


def test_the_docs_have_examples_of_each_kind() -> None:
    kinds = {(lang, ">>>" in code) for page in PAGES for lang, code in blocks(page)}
    assert {("python", True), ("python", False), ("console", False), ("sh", False)} <= kinds


def test_a_wrong_output_fails(tmp_path: Path) -> None:
    # the console check can fail: a shown number that the command does not print
    with pytest.raises(AssertionError, match="shown"):
        run_console("$ posenc encode 0 --d-model 4\n999\n", tmp_path, "here")
    with pytest.raises(AssertionError, match="exited 2"):
        run_sh("posenc encode 0 --d-model 3\n", tmp_path, "here")
