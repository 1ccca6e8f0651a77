"""The package as shipped: the wheel carries its types and license, the sdist carries its tests, `make clean` cleans.

Builds run on a copy of the tree (the tracked files, no caches), without build
isolation (setuptools and build are pinned in requirements-dev.txt), so the
checkout itself is never written to.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ignored_patterns() -> list[str]:
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]


def _source_files() -> list[Path]:
    """Every file of the checkout that is not ignored (what a clone holds), relative to ROOT."""
    patterns = [*_ignored_patterns(), ".git"]
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not any(fnmatch.fnmatch(d, p) for p in patterns)]
        for name in filenames:
            if not any(fnmatch.fnmatch(name, p) for p in patterns):
                out.append((Path(dirpath) / name).relative_to(ROOT))
    return sorted(out)


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path, str, list[Path]]:
    """(sdist, wheel, the build's log, the tree's files): built once from a copy of the tree."""
    tree = tmp_path_factory.mktemp("tree")
    files = _source_files()
    for rel in files:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tree / rel)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--no-isolation", "-o", str(out),
                           str(tree)], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (sdist,) = out.glob("posenc-*.tar.gz")
    (wheel,) = out.glob("posenc-*.whl")
    return sdist, wheel, proc.stdout + proc.stderr, files


def test_wheel_carries_py_typed_and_the_license(dists):
    _, wheel, _, _ = dists
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(meta).decode()
        license_file = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        shipped = z.read(license_file).decode()
    assert "posenc/py.typed" in names
    assert {"posenc/page/exact.js", "posenc/page/explorer.js", "posenc/page/page.css"} <= set(names)  # the page's
    assert "License-Expression: MIT" in metadata.splitlines()
    assert shipped == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert shipped.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in shipped


def test_the_license_is_an_spdx_string_without_deprecation_warnings(dists):
    _, _, log, _ = dists
    assert "deprecat" not in log.lower(), [line for line in log.splitlines() if "eprecat" in line]


def test_sdist_holds_every_file_of_the_tree(dists):
    sdist, _, _, files = dists
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    missing = [str(f) for f in files if str(f) not in names]
    assert missing == []
    for helper in ("tests/conftest.py", "tests/cli_helpers.py", "tests/reference.py", "LICENSE", "src/posenc/py.typed"):
        assert helper in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


_PYTEST_WITHOUT_NUMBA = """
import sys
class NoNumba:
    def find_spec(self, name, path=None, target=None):
        if name == "numba" or name.startswith("numba."):
            raise ImportError(name + " blocked by the sdist test")
sys.meta_path.insert(0, NoNumba())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_pytest_runs_from_an_unpacked_sdist(dists, tmp_path):
    """The shared helpers, the mpmath reference and the README travel with the tests (a sample of them)."""
    sdist, _, _, _ = dists
    with tarfile.open(sdist) as t:
        t.extractall(tmp_path, filter="data")
    (top,) = tmp_path.iterdir()
    env = {**os.environ, "PYTHONPATH": str(top / "src")}
    where = subprocess.run([sys.executable, "-c", "import posenc; print(posenc.__file__)"], cwd=top, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(top)  # the sdist's copy, not the checkout
    tests = ["tests/seed", "tests/test_architecture.py", "tests/cli/test_cli_main.py", "tests/sinusoidal/test_shift.py"]
    # numba blocked, as on a machine without the `fast` extra: the copy's kernels would otherwise compile afresh
    # (their cache is keyed by file path), 30 s of the suite spent on what tests/exact checks already
    proc = subprocess.run([sys.executable, "-c", _PYTEST_WITHOUT_NUMBA, "-q", "-x", *tests], cwd=top, env=env,
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " passed" in proc.stdout.splitlines()[-1] and "error" not in proc.stdout.splitlines()[-1]


# what the tools leave behind: one instance of every kind, at the depths they appear
CACHES = [
    ".venv/bin/python", ".venv-vllm/bin/python", ".venv-sglang/bin/python", ".venv-hf/5.25.0/transformers/__init__.py",
    "posenc-tour/wave.png",
    "posenc-page/index.html", "site/index.html",
    "site/search/search_index.js", "build/lib/posenc/__init__.py",
    "dist/posenc-0.1.0.tar.gz",
    "src/posenc.egg-info/PKG-INFO", "src/posenc/__pycache__/layout.cpython-311.pyc",
    "src/posenc/exact/__pycache__/_jit.kernel-40.py311.nbi", "src/posenc/exact/__pycache__/_jit.kernel-40.py311.1.nbc",
    "tests/cli/__pycache__/test_cli_main.cpython-311-pytest-9.2.0.pyc", ".hypothesis/examples/0a/1b",
    ".mypy_cache/3.10/posenc/layout.data.json", ".ruff_cache/0.17.6/123", ".pytest_cache/v/cache/nodeids",
    "tools/stray.pyc",
]
KEPT = ["Makefile", "src/posenc/support/layout.py", "tests/cli/test_cli_main.py", "docs/figures/rope.png"]


def test_make_clean_removes_every_cache(tmp_path):
    for pattern in _ignored_patterns():  # every ignored kind has an instance here
        assert any(fnmatch.fnmatch(part, pattern) for c in CACHES for part in Path(c).parts), pattern
    for rel in CACHES + KEPT:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    make = shutil.which("make")
    assert make is not None, "make is part of the developer setup (README)"
    proc = subprocess.run([make, "clean"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == sorted(KEPT)
