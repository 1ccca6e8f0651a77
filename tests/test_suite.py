"""The suite's own set-up (tests/conftest.py, the Makefile): the slow tiers name real tests, the profiles hold.

``make test-fast`` leaves out what :data:`conftest.SLOW` names; a renamed file
or test would silently move into the fast tier, so every entry must still
name a file and a test in it. ``make test`` runs every tier on every core.
"""

from __future__ import annotations

import gc
import importlib.util
import re
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]


def _load_conftest():  # by path: `import conftest` finds whichever folder's conftest a worker loaded first
    spec = importlib.util.spec_from_file_location("posenc_tests_conftest", ROOT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conftest = _load_conftest()


def test_every_slow_tier_names_a_file_and_a_test_in_it():
    stale = []
    for key in conftest.SLOW:
        path, _, test = key.partition("::")
        where = ROOT / path
        if path.endswith("/"):
            ok = where.is_dir() and any(where.rglob("*.py"))
        elif path.endswith(".py"):
            ok = where.is_file() and (not test or f"def {test.split('[')[0]}" in where.read_text(encoding="utf-8"))
        else:  # a prefix of file names: tests/torch/test_torch_compile -> test_torch_compile*.py
            ok = any(where.parent.glob(where.name + "*.py"))
        if not ok:
            stale.append(key)
    assert stale == [], f"tests/conftest.py SLOW names what is no longer there: {stale}"


def test_the_deep_profile_checks_ten_times_the_examples():
    suite, deep = settings.get_profile("posenc"), settings.get_profile("deep")
    assert suite.max_examples == conftest.SUITE_EXAMPLES and suite.derandomize and suite.deadline is None
    assert deep.max_examples == 10 * suite.max_examples and deep.derandomize


def test_full_collections_are_rare_and_skip_what_the_collection_imported():
    assert gc.get_threshold()[2] == conftest.FULL_COLLECTION_EVERY > 10 * 10  # CPython's default is 10
    assert gc.get_freeze_count() > 10_000  # pytest's, numpy's, the test modules' objects, at least


def test_make_test_runs_every_tier_on_every_core_and_test_fast_leaves_the_slow_out():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    parallel = re.search(r"^PYTEST_PARALLEL \?= (.+)$", make, re.M)
    assert parallel is not None and "-n auto" in parallel.group(1) and "--dist loadgroup" in parallel.group(1)
    recipe = {m.group(1): m.group(2) for m in re.finditer(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)+)", make, re.M)}
    pytest_lines = {t: [ln for ln in r.splitlines() if "-m pytest" in ln] for t, r in recipe.items()}
    assert [ln for ln in pytest_lines["test"] if "-m " in ln.split("pytest", 1)[1]] == []  # no selection: all
    assert all("$(PYTEST_PARALLEL)" in ln for ln in pytest_lines["test"]) and pytest_lines["test"]
    assert any('-m "not slow"' in ln for ln in pytest_lines["test-fast"])
    assert any("HYPOTHESIS_PROFILE=deep" in ln for ln in pytest_lines["test-deep"])


def _with_the_suites_hooks(folder: Path) -> None:
    """A conftest in ``folder`` that runs tests/conftest.py (its module code and its hooks), under bare settings."""
    (folder / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('suite_conftest', {str(ROOT / 'tests' / 'conftest.py')!r})\n"
        "suite = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(suite)\n"
        "globals().update((k, v) for k, v in vars(suite).items() if k.startswith('pytest_'))\n",  # its hooks
        encoding="utf-8",
    )
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not the project's settings


def test_a_file_sharing_a_module_fixture_runs_on_one_xdist_worker(tmp_path):
    """``--dist loadgroup`` keeps such a file on one worker, so its fixture is made once (the bench's measurement).

    Run on a file of six tests sharing a module fixture, beside six that share none, under two workers: the
    grouped ones must all report one worker. Before the fix (pytest 9.2 with pytest-xdist 3.8, whose group
    suffix no longer reached the controller) they were dealt to both.
    """
    import subprocess
    import sys

    _with_the_suites_hooks(tmp_path)
    body = (
        "import os\nimport pytest\n\n"
        "@pytest.fixture(scope='module')\ndef made_once():\n    return 1\n\n"
        "@pytest.mark.parametrize('i', range(6))\ndef test_it(i{arg}):\n"
        "    with open(os.path.join({out!r}, '{name}-%d' % i), 'w') as f:\n"
        "        f.write(os.environ['PYTEST_XDIST_WORKER'])\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "test_grouped.py").write_text(body.format(arg=", made_once", out=str(out), name="grouped"))
    (tmp_path / "test_free.py").write_text(body.format(arg="", out=str(out), name="free"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {p.name: p.read_text() for p in out.iterdir()}
    grouped = {w for n, w in workers.items() if n.startswith("grouped")}
    assert len(workers) == 12 and len(grouped) == 1, workers


_CACHED_CHILD = """
import warnings, hashlib, numpy as np, jax, jax.numpy as jnp
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    out = jax.jit(lambda p: jnp.sin(p * 0.1) * 3 + p)(jnp.arange(40, dtype=jnp.float32))
torn = [w for w in seen if "Error reading persistent compilation cache entry" in str(w.message)]
print(hashlib.sha256(np.asarray(out).tobytes()).hexdigest(), len(torn))
"""


def test_a_torn_xla_cache_entry_is_compiled_again_with_the_same_bits(tmp_path):
    """What a worker meets when it reads an entry another is still writing (pyproject's filterwarnings)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(tmp_path), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
           "JAX_COMPILATION_CACHE_MAX_SIZE": "-1"}

    def child() -> tuple[str, int]:
        run = subprocess.run([sys.executable, "-c", _CACHED_CHILD], env=env, capture_output=True, text=True,
                             check=True, timeout=300)
        digest, torn = run.stdout.split()
        return digest, int(torn)

    first, torn = child()
    assert torn == 0
    entries = [p for p in tmp_path.iterdir() if p.name.endswith("-cache")]
    assert entries  # the programs were written
    for p in entries:  # half written, as a reader racing the writer sees them
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    again, torn = child()
    assert torn >= 1 and again == first


_THREADS_CHILD = """
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("suite_conftest", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))  # what a worker does first: load the conftest
import torch
print(torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"))
"""


def test_each_xdist_worker_runs_torch_on_one_thread_and_a_plain_run_keeps_its_default():
    """tests/conftest.py: one worker per core, each with one OpenMP thread (no oversubscribed, spinning pool);
    a run without pytest-xdist, or a value the caller set, is left as it is."""
    import os
    import subprocess
    import sys

    ours = ("PYTEST_XDIST_WORKER", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    bare = {k: v for k, v in os.environ.items() if k not in ours}  # this test may itself run in a worker

    def threads(**env: str) -> str:
        run = subprocess.run([sys.executable, "-c", _THREADS_CHILD, str(ROOT / "tests" / "conftest.py")],
                             env={**bare, **env}, capture_output=True, text=True, check=True, timeout=300)
        return run.stdout.strip()

    assert threads(PYTEST_XDIST_WORKER="gw0") == "1 1 1"
    assert threads(PYTEST_XDIST_WORKER="gw0", OMP_NUM_THREADS="2") == "2 2 None"
    assert threads().endswith(" None None")  # torch's own default (its count of cores)


def test_a_finished_xdist_worker_leaves_without_its_interpreters_exit_and_its_results_stand(tmp_path):
    """tests/conftest.py's ``pytest_sessionfinish``: a worker's atexit work (JAX's cache clearing, thread joins) is
    skipped once its session has finished, and the run's outcome is still every report's: a failure fails it."""
    import os
    import subprocess
    import sys

    _with_the_suites_hooks(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "test_exit.py").write_text(
        "import atexit, os, pytest\n\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_it(i):\n"
        f"    atexit.register(lambda: open(os.path.join({str(marks)!r}, 'atexit-%d' % i), 'w').close())\n"
        "    assert os.environ.get('FAIL') != str(i)\n",
        encoding="utf-8",
    )
    bare = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "-c", str(tmp_path / "pytest.ini"),
             str(tmp_path)], cwd=tmp_path, env={**bare, **env}, capture_output=True, text=True, timeout=300,
        )

    ok = run("-n", "2")
    assert ok.returncode == 0 and "4 passed" in ok.stdout, ok.stdout + ok.stderr
    assert list(marks.iterdir()) == []  # the workers ran no atexit handler
    failed = run("-n", "2", FAIL="2")
    assert failed.returncode == 1 and "1 failed, 3 passed" in failed.stdout, failed.stdout + failed.stderr
    plain = run()  # no workers: the process exits as any does
    assert plain.returncode == 0 and len(list(marks.iterdir())) == 4
