"""numba's on-disk cache failing to be written (a full disk, ``ulimit -f``) does not fail posenc's computation.

Found while building the worked-examples site in ``test_tour_over_the_file_size_limit_keeps_every_old_file``:
under a 4 KiB file-size limit, ``posenc examples flip`` (a table large enough for the compiled engine) exited
with ``posenc: error: cannot write File too large``: numba compiled the kernel, then raised EFBIG writing its
cache index. The compiled kernel is already in memory, so posenc runs the call again.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import numpy as np
from posenc.exact import fill_sincos, seed_ladder
p = np.arange(4096, dtype=np.float64) + 0.5  # a fresh signature is not needed: numba rewrites its index anyway
lad = seed_ladder(64, 10000.0)
s = np.empty((p.size, 32)); c = np.empty((p.size, 32))
fill_sincos(p, lad, s, c, engine="numba")
s0 = np.empty_like(s); c0 = np.empty_like(c)
fill_sincos(p, lad, s0, c0, engine="numpy")  # the same bits (not encode: a second kernel to compile cold, 6 s)
assert np.array_equal(s, s0) and np.array_equal(c, c0) and np.abs(s).max() > 0.9
print("ok")
"""


def test_a_cache_that_cannot_be_written_does_not_fail_the_call():
    pytest.importorskip("numba")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NUMBA_CACHE_DIR": cache}  # a cold cache
        proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                              preexec_fn=limit, timeout=300, check=False)
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok"), proc.stderr[-2000:]
