"""Running the command in process, for the CLI tests."""

from __future__ import annotations

import json
from typing import Any

from posenc.cli import main


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """main(argv) -> (exit status, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: Any, *argv: str) -> tuple[int, Any]:
    """The same with --json: (exit status, parsed output); stderr must be empty."""
    code, out, err = run(capsys, *argv, "--json")
    assert err == ""
    return code, json.loads(out)
