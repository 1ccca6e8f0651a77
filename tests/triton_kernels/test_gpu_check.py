"""tools/gpu_check.sh, the one prepared GPU command, dry-run on the CPU through Triton's interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")  # pinned in requirements-dev.txt (the posenc[triton] extra)

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_check_runs_on_the_cpu_and_finds_every_bit_equal(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    out = tmp_path / "summary.json"
    run = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh"), "--dry-run", "--json", str(out)],
                         capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert json.loads(run.stdout.strip().splitlines()[-1]) == summary
    counts = {k: v for k, v in summary.items() if "differing bits" in k or "vs NumPy" in k or "values off" in k}
    assert len(counts) == 8 and set(counts.values()) == {0}, counts
    assert summary["RotaryEmbedding real positions cpu vs cpu: max |diff|"] == 0.0
    for name in ("posenc.triton fused (exact rows)", "plain formula (tables, rotate_half)"):
        assert summary[f"{name}: ms"] > 0


def test_the_gpu_check_refuses_without_a_gpu_in_one_line():
    if __import__("torch").cuda.is_available():
        pytest.skip("a GPU is here: the check would run")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check.py")], capture_output=True, text=True,
                         env=env, stdin=subprocess.DEVNULL, timeout=300, check=False)
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0 and "no CUDA device" in run.stderr
