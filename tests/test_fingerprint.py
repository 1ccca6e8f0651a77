"""The golden fingerprint: the same bits natively, without SIMD above NumPy's baseline, and without numba.

tools/fingerprint.py computes a fixed battery of outputs (every family, every
dtype, the page's JS twin under node) and its SHA-256 digests; the committed
tests/golden/fingerprints.json holds them. Each mode runs in a fresh process:

- ``native``: whatever this CPU has (NumPy's dispatched AVX-512/AVX2 kernels,
  torch's best capability), with numba's compiled engine loaded up front;
- ``simd-off``: ``NPY_DISABLE_CPU_FEATURES`` naming every level NumPy
  dispatches to above its baseline on this machine (read from NumPy, not
  written here), ``ATEN_CPU_CAPABILITY=default`` and ``NUMBA_CPU_NAME=generic``:
  the code paths of an older CPU (no AVX-512, no AVX2), numba's included;
- ``no-numba``: ``import numba`` blocked, so posenc takes its NumPy-only path.

All three must give the committed digests. Regenerate them (after a change
meant to alter values) with ``python tools/fingerprint.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import fingerprint  # noqa: E402  (tools/ is not a package)

GOLDEN = json.loads(fingerprint.GOLDEN.read_text())["digests"]


def test_the_golden_file_covers_every_family_and_dtype() -> None:
    want = {f"{fam}/{dt}" for fam, (_, dts) in fingerprint.FAMILIES.items() for dt in dts}
    assert set(GOLDEN) == want
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in GOLDEN.values())


@pytest.mark.parametrize("mode", fingerprint.MODES)
def test_every_mode_gives_the_committed_digests(mode: str) -> None:
    run = fingerprint.run_mode(mode)
    env = run["environment"]
    if mode == "simd-off":
        assert env["dispatch_on"] == [] and env["torch_capability"] == "DEFAULT", env
        assert env["numba"] is True and env["numba_cpu"] == "generic", env
    elif mode == "no-numba":
        assert env["numba"] is False, env
    else:
        assert env["numba"] is True, env  # numba: the `fast` extra, installed by make test
        assert env["dispatch_on"] == fingerprint.native_dispatch(), env
    differ = sorted(k for k in GOLDEN if run["digests"].get(k) != GOLDEN[k])
    assert not differ, f"{mode}: digests differ from tests/golden/fingerprints.json for {differ}"


def test_a_changed_value_changes_the_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    import posenc.rope.xpos as xp

    battery, _ = fingerprint.FAMILIES["xpos"]
    assert fingerprint.digest(list(fingerprint._flatten(battery("float16")))) == GOLDEN["xpos/float16"]
    real = xp._factors

    def one_float16_ulp_off(*args: object) -> np.ndarray:
        f = real(*args)  # type: ignore[arg-type]
        f.flat[len(f.flat) // 2] *= 1 + 2.0**-10  # one value, one float16 ulp
        return f

    monkeypatch.setattr(xp, "_factors", one_float16_ulp_off)
    assert fingerprint.digest(list(fingerprint._flatten(battery("float16")))) != GOLDEN["xpos/float16"]


def test_digest_sees_dtype_shape_and_bits() -> None:
    a = np.arange(6, dtype=np.float64)
    d = fingerprint.digest([a])
    assert d != fingerprint.digest([a.reshape(2, 3)]) and d != fingerprint.digest([a.astype(np.float32)])
    b = a.copy()
    b.view(np.int64)[3] ^= 1
    assert d != fingerprint.digest([b]) and d == fingerprint.digest([a.copy()])
