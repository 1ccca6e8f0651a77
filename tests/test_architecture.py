"""The house as documented is the house as built: docs/ARCHITECTURE.md is generated from the tree."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "architecture.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("architecture_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_architecture_page_matches_the_tree():
    tool = load_tool()
    current = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert current == tool.render(), "docs/ARCHITECTURE.md is stale: run python tools/architecture.py"


def test_every_package_and_module_is_listed_with_its_docstring():
    text = load_tool().render()
    src = ROOT / "src" / "posenc"
    for path in src.rglob("*.py"):
        if path.name == "__init__.py":
            assert f"{path.parent.name}/" in text or path.parent == src
        else:
            assert f" {path.name} " in text, path


def test_check_mode_fails_on_a_stale_page(tmp_path, monkeypatch):
    tool = load_tool()
    stale = tmp_path / "ARCHITECTURE.md"
    stale.write_text("old\n", encoding="utf-8")
    monkeypatch.setattr(tool, "OUT", stale)
    assert tool.main(["--check"]) == 1
    assert tool.main([]) == 0
    assert tool.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == tool.render()


def test_runs_as_a_script():
    done = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
