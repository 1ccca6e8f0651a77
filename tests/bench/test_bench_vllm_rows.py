"""posenc bench's vLLM rows: none in an environment without vLLM (tests/vllm times them beside vLLM)."""

from __future__ import annotations

import importlib.util

from posenc.bench.vllm_rows import producers


def test_no_vllm_rows_without_vllm():
    # the main test environment keeps its CPU torch, no vLLM (tests/vllm on sys.path is a namespace "vllm")
    assert importlib.util.find_spec("vllm.plugins") is None
    assert producers() == [] and producers(quick=True) == []
