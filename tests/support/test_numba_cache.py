"""numba's on-disk cache serves every posenc kernel: a second process loads what the first compiled.

posenc's kernels are compiled with ``cache=True``: the first process compiles
(seconds a kernel), later ones load it. numba keys a cached kernel by its
bytecode and the pickled contents of its closure; a kernel whose closure held
another compiled function (a dispatcher, which pickles with an id drawn afresh
in every process) never met its cache: every process compiled
``exact.fill.build_fill``'s kernels again (~3 s each, 10.8 s against 5.3 s for
a process building a table, an encoding and a grid) and added one more entry to
the cache file (65 of them were found in a checkout). Each kernel now calls its
callees as globals (:func:`posenc.support.optional.cacheable`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[2]

#: every kernel compiled with cache=True, by the builder that makes it (name -> expression in the child)
_KERNELS = """
import json, sys
from posenc.exact import fill, _jit, _place_jit
from posenc.torch import _kernels
found = {}
for near in (False, True):
    for paired in (False, True):
        found[f"build_fill(near={near}, paired={paired})"] = fill.build_fill(near=near, paired=paired)
found["exact._jit rows"] = _jit._build()
for i, k in enumerate(_place_jit.build()):
    found[f"exact._place_jit #{i}"] = k
f32, bf16 = _kernels._build()
found["torch._kernels f32"], found["torch._kernels bf16"] = f32, bf16
out = {}
for name, disp in found.items():
    cache = disp._cache
    key = cache._index_key((), disp.targetctx.codegen())
    out[name] = [str(cache._cache_file._index_path), list(key[2])]
print(json.dumps(out))
"""


def _child(code: str, **env: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env={**os.environ, **env})
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def _cache_true_kernels() -> dict[str, int]:
    """``njit(cache=True)`` decorations per file of the package."""
    pkg = ROOT / "src" / "posenc"
    counted = {p.relative_to(pkg).as_posix(): len(re.findall(r"\bnjit\([^)]*cache=True", p.read_text(encoding="utf-8")))
               for p in pkg.rglob("*.py")}
    return {k: v for k, v in counted.items() if v}


def test_every_cached_kernel_has_the_same_cache_key_in_every_process() -> None:
    first, second = (json.loads(_child(_KERNELS)) for _ in range(2))
    assert first == second, {k: (first[k], second.get(k)) for k in first if first[k] != second.get(k)}
    # one cache file per kernel: two variants of one template never share an entry
    files = [path for path, _ in first.values()]
    assert len(set(files)) == len(files), files
    # every cache=True kernel of the package is among them (build_fill's one decoration serves four variants)
    decorations = _cache_true_kernels()
    assert decorations["exact/fill.py"] == 1
    assert len(first) == sum(decorations.values()) - 1 + 4, (sorted(first), decorations)


def test_a_second_process_loads_the_kernel_the_first_compiled(tmp_path: Path) -> None:
    code = ("import numpy as np, posenc\n"
            "from posenc.support.optional import compiled\n"
            "posenc.encode(np.arange(100000.0) + 0.5, 64)\n"  # the near, unpaired fill: compiled on first use
            "k = compiled('exact.fill_near', None)\n"
            "print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))\n")
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}  # an empty cache of the test's own
    assert _child(code, **env).split() == ["0", "1"]  # compiled, and saved
    assert _child(code, **env).split() == ["1", "0"]  # loaded: nothing compiled


# A child that compiles _place_jit's `diagonal` for one dtype of keys into the cache of NUMBA_CACHE_DIR. Its
# save is slowed where numba's own steps race: having read the index, before writing it, it waits (up to 4 s)
# until the other child has read it too, and the first child writes its data file 2 s late, after the second's.
_RACER = """
import sys, time
from pathlib import Path
import numpy as np
from numba.core import caching
from posenc.exact import _place_jit
from posenc.support.optional import compiled

me, dtype, meet = sys.argv[1], sys.argv[2], Path(sys.argv[3])
save_index, save_data = caching.IndexDataCacheFile._save_index, caching.IndexDataCacheFile._save_data

def meet_then_save_index(self, overloads):
    (meet / me).touch()
    deadline = time.monotonic() + 4
    while len(list(meet.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    save_index(self, overloads)

def late_data(self, name, data):
    if me == "first":
        time.sleep(2)
    save_data(self, name, data)

caching.IndexDataCacheFile._save_index = meet_then_save_index
caching.IndexDataCacheFile._save_data = late_data
diagonal = compiled("exact.placement", _place_jit.build)[0]
print(diagonal(np.array([[3, 3], [4, 5]], dtype=dtype)))
"""

_LOADER = """
import sys
import numpy as np
from posenc.exact import _place_jit
from posenc.support.optional import compiled

diagonal = compiled("exact.placement", _place_jit.build)[0]
for dtype in ("float64", "int64"):
    got = diagonal(np.array([[3, 3], [4, 4]], dtype=dtype))
    print(dtype, got, sum(diagonal.stats.cache_hits.values()))
"""


def test_two_processes_saving_at_once_leave_each_signature_its_own_code(tmp_path: Path) -> None:
    """Both children compile one kernel for two signatures and save at once; a third loads both, each right."""
    meet = tmp_path / "meet"
    meet.mkdir()
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, me, dtype, str(meet)], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for me, dtype in (("first", "float64"), ("second", "int64"))]
    for proc in racers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and out.strip() == "False", err[-3000:]
    assert _child(_LOADER, NUMBA_CACHE_DIR=str(cache)).split() == ["float64", "True", "1", "int64", "True", "2"]


# A child that meets the other at a folder, then asks for _place_jit's `diagonal` for one float64 array in the
# cache of NUMBA_CACHE_DIR, and prints its cache (hits, misses) for that kernel
_TWIN = """
import sys, time
from pathlib import Path
import numpy as np
from posenc.exact import _place_jit
from posenc.support.optional import compiled

me, meet = sys.argv[1], Path(sys.argv[2])
diagonal = compiled("exact.placement", _place_jit.build)[0]
(meet / me).touch()
deadline = time.monotonic() + 20
while len(list(meet.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.001)
diagonal(np.array([[3.0, 3.0], [4.0, 5.0]]))
print(sum(diagonal.stats.cache_hits.values()), sum(diagonal.stats.cache_misses.values()))
"""


def test_two_processes_wanting_one_kernel_at_once_compile_it_once(tmp_path: Path) -> None:
    """The second waits for the first's compile and loads it (before: both compiled, seconds each, twice)."""
    meet = tmp_path / "meet"
    meet.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    twins = [subprocess.Popen([sys.executable, "-c", _TWIN, me, str(meet)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for me in ("a", "b")]
    got = []
    for proc in twins:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        got.append(out.split())
    assert sorted(got) == [["0", "1"], ["1", "0"]]  # one compiled (a miss), the other loaded it (a hit)


def test_every_part_of_a_kernel_has_a_name_of_its_own_body() -> None:
    """Two parts of posenc's kernels under one qualified name have one body: the same code, bindings and flags.

    numba names a compiled function by its qualified name, a counter of the process and its types; a kernel
    loaded from the disk cache links to a function of that name already compiled in the process, taking it
    for its own. Under one name for both variants, the far kernel's rows ran the near kernel's parts where
    the counters met: float64 rows off in one pytest-xdist worker, right in the other
    (tests/exact/test_exact.py, the NumPy and numba engines).
    """
    from numba.core.registry import CPUDispatcher

    from posenc.exact import fill

    def named(value: object) -> object:
        if isinstance(value, CPUDispatcher):
            return "jit:" + value.py_func.__qualname__
        return value if isinstance(value, (bool, int, float, str, type(None))) else type(value).__qualname__

    bodies: dict[str, set[object]] = {}
    todo = [fill.build_fill(near=near, paired=paired) for near in (False, True) for paired in (False, True)]
    seen: set[int] = set()
    while todo:
        disp = todo.pop()
        if id(disp) in seen:
            continue
        seen.add(id(disp))
        fn = disp.py_func
        cells = [c.cell_contents for c in fn.__closure__ or ()]
        globs = [fn.__globals__[n] for n in fn.__code__.co_names if n in fn.__globals__]
        todo += [v for v in cells + globs if isinstance(v, CPUDispatcher)]
        body = (fn.__code__, tuple(map(named, cells)), tuple((n, named(fn.__globals__[n])) for n in
                                                               fn.__code__.co_names if n in fn.__globals__))
        bodies.setdefault(fn.__qualname__, set()).add(body)
    assert len(bodies) > 20, sorted(bodies)  # the kernels, their row loops and the arithmetic they share
    shared = {name: len(b) for name, b in bodies.items() if len(b) > 1}
    assert not shared, shared

