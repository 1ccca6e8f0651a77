#!/usr/bin/env bash
# posenc's GPU check, one prepared command: bits (rows, rotations, modules) equal to the CPU's, then the fused
# Triton RoPE timed against the plain formula, flash-attn's and Liger's (when they import), as a fraction of peak.
# Under 5 minutes on one H100/H200:   tools/gpu_check.sh [--peak-tbs 4.8] [--json gpu_check.json]
# On a CPU, through Triton's interpreter, tiny shapes:   tools/gpu_check.sh --dry-run
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" exec timeout 290 "$PY" tools/gpu_check.py "$@"
