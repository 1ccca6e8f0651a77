import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]

# One thread per pytest-xdist worker: `make test` starts one worker per core, and torch's OpenMP pool (as many
# threads as cores, in every worker) then oversubscribes the machine: its idle threads spin on the cores the other
# worker needs. Read by OpenMP and MKL when torch loads, so set before anything imports it; where the caller set
# either, both are left as they are. posenc's values do not depend on it (elementwise work, split or not, gives
# the same bits). tests/torch, timesteps, fields and two JAX files, `-n 2`, back to back: 148.6, 147.0 s -> 140.8,
# 142.6 s.
_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
if os.environ.get("PYTEST_XDIST_WORKER") and not any(_name in os.environ for _name in _THREADS):
    os.environ.update(dict.fromkeys(_THREADS, "1"))

# Python's full (oldest-generation) garbage collections, rarer, over less: with torch, JAX, transformers and
# matplotlib loaded a worker holds ~3 M tracked objects, and each full collection walks them all (0.3 s). At the
# default threshold (10) that was 26 of them in 230 s of tests/jax, 8.5 s a worker; the young generations still
# collect as before, and pytest_collection_finish freezes what collection imported (modules, classes, kept for the
# whole run) out of the walk. tests/jax, the backend parity and JAX fuzz files, `-n 2`: 231.3 s, 225.3 s (the
# freeze alone) -> 220.4 s; the garbage collector's time 10.5 -> 2.7 s a worker. The price, garbage kept longer:
# a worker's peak memory over tests/jax, torch, hf, page and the compile fuzz, 3.5 -> 3.8 GB. Nothing posenc
# computes reads it.
FULL_COLLECTION_EVERY = 1000  # young-generation collections per full one considered (CPython's default: 10)
gc.set_threshold(*gc.get_threshold()[:2], FULL_COLLECTION_EVERY)

# posenc.triton's kernels run on CPU tensors through Triton's interpreter (tests/triton_kernels): it must be set
# before anything imports triton, and with xdist another test of the same worker may import it first (torch does)
os.environ.setdefault("TRITON_INTERPRET", "1")

# XLA's compiled programs shared on disk for this run, by the pytest-xdist workers and the child processes: many
# tests compile the same posenc program (a preset, a dim) through a lambda of their own, which JAX's in-memory
# cache keys apart; the disk cache keys the program itself. Made here, before anything imports jax (which reads
# these at import), in the first process; the workers inherit it; removed at the end (pytest_unconfigure).
# tests/jax alone: 178 s -> 157 s on two cores. The programs and their bits are the same either way.
_XLA_CACHE: str | None = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import tempfile

    _XLA_CACHE = os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="posenc-tests-xla-")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.05")  # ours take 0.1-1 s; default 1 s

#: Hypothesis profiles. "posenc" is the suite's (``make test``): a fixed number of examples per property, derandomized,
#: so every run checks the same inputs. "deep" (``make test-deep``, HYPOTHESIS_PROFILE=deep) checks ten times as
#: many. A test that sets its own count scales it by ``settings().max_examples / settings.get_profile("posenc")
#: .max_examples``, so the deep profile reaches it too.
SUITE_EXAMPLES = 60
settings.register_profile(
    "posenc",
    deadline=None,
    max_examples=SUITE_EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile("deep", settings.get_profile("posenc"), max_examples=10 * SUITE_EXAMPLES)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "posenc"))


#: The tiers ``make test-fast`` leaves out (``-m "not slow"``): node-id prefixes, each marked ``slow`` at
#: collection, with why it is slow. ``make test`` runs them all; a test of its own can say ``@pytest.mark.slow``.
SLOW: dict[str, str] = {
    "tests/jax/": "every new shape compiles with XLA; eager calls dispatch op by op",
    "tests/fuzz/test_fuzz_jax.py": "JAX",
    "tests/fields/test_fields_trust.py::test_the_bits_are_posenc_jaxs": "JAX",
    "src/posenc/jax/": "the JAX doctests",
    "tests/hf/": "transformers models, built and run",
    "tests/rope/test_hf_sweep.py": "imports every transformers modeling file",
    "tests/torch/test_hf_rotary.py": "transformers models",
    "tests/page/": "the page in a browser",
    "tests/docs/": "the site's build, in a browser",
    "tests/bench/": "timings",
    "tests/cli/test_cli_bench.py::test_bench_small_json": "a timed run",
    "tests/cli/test_cli_bench.py::test_bench_markdown_is_the_readme_table": "a timed run",
    "tests/fuzz/test_fuzz_compile.py": "torch.compile of every public name",
    "tests/torch/test_torch_compile": "torch.compile",
    "tests/torch/test_distributed.py": "two processes importing torch",
    "tests/torch/test_torch_sparse.py": "a process measuring its peak memory",
    "tests/cli/test_cli_signals.py::test_the_signal_tests_pass_with_sigint_ignored": "a pytest inside pytest",
    "tests/cli/test_cli_hostile.py::test_sigint_mid_tour": "the tour draws every figure",
    "tests/cli/test_cli_hostile.py::test_a_full_disk_at_the_page": "the page",
    "tests/cli/test_cli_hostile.py::test_a_failed_rename": "the tour",
    "tests/cli/test_cli_plot_write.py::test_tour": "the tour",
    "tests/cli/test_cli_proofs.py::test_a_page": "the page",
    "tests/cli/test_cli_proofs.py::test_a_tour": "the tour",
    "tests/cli/test_cli_seed.py::test_tour": "the tour",
    "tests/cli/test_cli_spellings.py::test_page_and_tour": "the page and the tour",
    "tests/cli/test_cli_written_proof.py::test_the_page": "the page",
    "tests/fuzz/test_fuzz_cli.py::test_hostile_command_lines[page]": "the page, per example",
    "tests/plot/test_plot_layout.py": "every figure drawn",
    "tests/seed/test_grid_cases.py::test_examples_shows_both_sets": "the examples command, every figure",
    "tests/timesteps/test_timesteps_trust.py::test_the_size_check_covers_the_measured_peak": "memory peaks",
    "tests/test_package.py": "the sdist and the wheel, built",
    "tests/test_fingerprint.py::test_every_mode_gives_the_committed_digests": "three fresh processes, node too",
    "tests/torch/test_torch_fields.py::test_under_compile": "torch.compile",
    "tests/torch/test_torch_fields_trust.py::test_quarter_turns_in_the_compiled": "torch.compile",
    "tests/torch/test_torch_bias.py::test_alibi_compile": "torch.compile",
    "tests/torch/test_torch_bias.py::test_t5_compile": "torch.compile",
    "tests/torch/test_torch_mrope.py::test_compile": "torch.compile",
    "tests/cli/test_cli_messages.py::test_a_100kb_argument_gives_a_one_line_message[page": "the page",
    "tests/cli/test_cli_plot_write.py::test_plot_": "matplotlib figures, written",
    "tests/support/test_memory.py::test_the_size_check_covers_the_measured_peak": "memory peaks",
    "tests/bias/test_alibi.py::test_bloom_slopes_against_transformers": "transformers",
    "tests/bias/test_t5_bucket.py::test_equal_to_transformers": "transformers",
    "tests/test_backend_parity.py": "every backend on every spec: JAX's programs compiled",
    "tests/test_backend_names.py": "every public name in every backend: JAX's programs compiled",
    "tests/timesteps/test_timesteps_backend.py": "torch and JAX against NumPy, JAX compiled",
    "tests/fields/test_fields_backend.py": "torch and JAX against NumPy, JAX compiled",
    "tests/sinusoidal/test_sinusoidal_backend.py": "torch and JAX against NumPy, JAX compiled",
    "tests/bias/test_bias_backend.py": "torch and JAX against NumPy, JAX compiled",
    "tests/support/test_numba_cache.py::test_a_second_process": "processes compiling numba's kernels",
    "tests/support/test_numba_cache.py::test_two_processes_saving_at_once": "processes compiling numba's kernels",
    "tests/support/test_numba_cache.py::test_every_cached_kernel": "processes compiling numba's kernels",
    "tests/exact/test_exact_cache_write.py::test_a_cache_that_cannot_be_written": "a process compiling numba's kernels",
    "tests/triton_kernels/test_gpu_check.py::test_the_gpu_check_runs_on_the_cpu": "Triton's interpreter, every kernel",
    "tests/test_suite.py::test_each_xdist_worker_runs_torch": "a child process importing torch",
    "tests/test_suite.py::test_a_finished_xdist_worker": "a pytest inside pytest",
    "tests/test_suite.py::test_a_torn_xla_cache_entry": "child processes compiling with XLA",
}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m "not slow"`` (``make test-fast``), the files and folders that are slow as a whole are not even
    imported (importing JAX, transformers or the browser's tests costs seconds of collection on each worker)."""
    if config.getoption("markexpr", "") != "not slow":
        return None
    path = collection_path.resolve()
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
    whole = [k.rstrip("/") for k in SLOW if "::" not in k and (k.endswith("/") or k.endswith(".py"))]
    return True if rel and any(rel == k or rel.startswith(k + "/") for k in whole) else None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The :data:`SLOW` marks; and, under pytest-xdist, the tests that share expensive set-up kept on one worker.

    A file whose tests share a module- or session-scoped fixture of ours (a page or site build, a wheel, a
    subprocess's measurements) runs on one worker: spread over the workers, the fixture would be made once per
    worker. Every other test is sent alone to whichever worker is free. ``make test`` runs ``--dist loadgroup``,
    which reads these groups.
    """
    slow = tuple(SLOW)
    for item in items:
        if item.nodeid.startswith(slow):
            item.add_marker(pytest.mark.slow)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    shared: set[str] = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)  # none for doctests
        if info is None:
            continue
        for defs in info.name2fixturedefs.values():
            if defs and defs[-1].baseid and defs[-1].scope in ("module", "package", "session"):
                shared.add(item.nodeid.split("::")[0])
    for item in items:
        path = item.nodeid.split("::")[0]
        if path in shared:
            item.add_marker(pytest.mark.xdist_group(path))


def _groups(item: pytest.Item) -> str:
    """The ``xdist_group`` names of ``item`` joined as pytest-xdist joins them ("" for none)."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker sends the collected ids to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    """On a pytest-xdist worker under ``--dist loadgroup``, every grouped test's id ends with ``@group``.

    The controller groups tests by that suffix alone. pytest-xdist 3.8 writes it into ``item._nodeid``, which
    pytest 9.2 no longer reads (its node ids are structured, ``item._id``): the groups were silently dropped, so
    each test of a file sharing a module fixture went to any worker, and the fixture (the bench's measurement)
    was made on each (pytest-dev/pytest-xdist#1386). Here the suffix is written where the id is read; where it
    is there already (an older pytest, or a fixed pytest-xdist), nothing changes.

    And the objects collection made (the test modules and what they imported) are frozen: the garbage
    collector's full collections no longer walk them (see :data:`FULL_COLLECTION_EVERY`).
    """
    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()
    if not getattr(session.config.option, "loadgroup", False):  # set on the workers only, for --dist loadgroup
        return
    for item in session.items:
        group = _groups(item)
        if not group or item.nodeid.endswith("@" + group):
            continue
        grouped = f"{item.nodeid}@{group}"
        if hasattr(item, "_id"):  # pytest >= 9.2
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(grouped)
        else:
            item._nodeid = grouped


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the whole run (tests/browser_session.py), shared by the page's and the site's tests."""
    from browser_session import ARGS, chromium

    exe = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=ARGS)
        yield b
        b.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    site = sys.modules.get("site_build")  # tests/docs/site_build.py, once the site's tests ran
    if site is not None and site.MEASURED:
        terminalreporter.section("posenc docs: measured")
        for key, value in site.MEASURED.items():
            terminalreporter.write_line(f"{key}: {value}")


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around pytest-xdist's own, which sends workerfinished after it
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """A pytest-xdist worker whose session has finished leaves at once, with the session's exit status.

    By then it has written every report and its ``workerfinished`` to the pipe (pytest-xdist's
    ``pytest_sessionfinish``, inside this one), and the controller waits for the worker's process to end. What
    followed was measured at the end of a full run at 10 s, results in none of it: the workers' unconfigure
    hooks (2.5 s), joining the thread pools, JAX's atexit ``clean_up`` clearing thousands of cached programs
    (3.4 s), then freeing every module, until pytest-xdist's 10 s timeout killed the process.
    """
    result = yield
    finished = getattr(session.config, "workeroutput", {}).get("exitstatus")  # set on a worker only
    if finished is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(finished))
    return result


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's XLA cache (see :data:`_XLA_CACHE`) removed by the process that made it."""
    if _XLA_CACHE is not None:
        import shutil

        shutil.rmtree(_XLA_CACHE, ignore_errors=True)
