"""posenc bench's vLLM row: the cache build, posenc's plugin class beside stock vLLM's, both measured."""

from __future__ import annotations

from posenc.bench.vllm_rows import producers


def test_the_cache_build_rows_time_both():
    (produce,) = producers(quick=True)
    floor, ours = produce(1)
    assert floor.operation == ours.operation == "vLLM rotary cache build 8192x128 f32"
    assert (floor.method, ours.method) == ("floor: stock vLLM", "posenc.vllm")
    assert floor.median_ms > 0 and ours.median_ms > 0 and ours.ratio == ours.median_ms / floor.median_ms
