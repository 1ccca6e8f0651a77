"""What posenc.jax's in-graph rows cost XLA: jaxpr equations, compile time and run time, per case.

The exact rows (:mod:`posenc.jax._rows`, :mod:`posenc.jax._xpos`) are
straight-line 32-bit integer code; XLA's compile time grows with it. This
prints, per case, the equations of the traced program (counted through every
sub-jaxpr: cond branches, pjit, custom_jvp), the least of ``--repeat``
compile times, wall-clock and CPU (caches cleared between tries; the CPU time, all threads, is the
steadier on a shared machine), the least CPU time of tracing and lowering before it and, with
``--run``, the least of the run times of programs at a realistic size. To
compare two trees, run it with each on PYTHONPATH, alternating, on the same
machine:

    PYTHONPATH=src python tools/jax_compile_cost.py [--repeat 5] [--run]

Timings are wall-clock seconds on this machine; only ratios measured in one
session mean anything.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

import jax
import posenc.jax as pj
from posenc import XPos


def equations(jaxpr: Any) -> int:
    """Equations of ``jaxpr`` and of every jaxpr in its equations' parameters, recursively."""
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for p in eqn.params.values():
            for q in p if isinstance(p, (tuple, list)) else (p,):
                inner = getattr(q, "jaxpr", None)
                if inner is not None:
                    n += equations(inner if hasattr(inner, "eqns") else inner.jaxpr)
    return n


def _compile_cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    x = jnp.ones((16, 64), jnp.float32)
    pi, pf = jnp.arange(16, dtype=jnp.int32), jnp.arange(16, dtype=jnp.float32) + 0.5

    def xpos(x: Any, p: Any) -> Any:
        return pj.apply_rope(x, p, xpos=XPos(), role="q", seq_len=16)

    return {
        "rope int": (lambda x, p: pj.apply_rope(x, p), (x, pi)),
        "rope float": (lambda x, p: pj.apply_rope(x, p), (x, pf)),
        "xpos int": (xpos, (x, pi)),
        "xpos float": (xpos, (x, pf)),
        "timesteps float": (lambda p: pj.timestep_embedding(p, 64), (pf,)),
        "timesteps int": (lambda p: pj.timestep_embedding(p, 64), (pi,)),
    }


def _run_cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    q = jnp.asarray(jax.random.normal(jax.random.key(0), (1, 4096, 32, 128), jnp.float32))
    pi = jnp.arange(4096, dtype=jnp.int32)[None, :, None]  # [b, s, 1] for [b, s, n_h, h_d]
    pf = pi.astype(jnp.float32) + 0.25
    return {
        "rotate q [1,4096,32,128] int": (lambda x, p: pj.apply_rope(x, p), (q, pi)),
        "rotate q [1,4096,32,128] float": (lambda x, p: pj.apply_rope(x, p), (q, pf)),
        "rotate q xpos [1,4096,32,128] int": (
            lambda x, p: pj.apply_rope(x, p, xpos=XPos(), role="q", seq_len=4096), (q, pi)),
        "rows [4096] d128 int": (lambda p: pj.rope_cos_sin(p, 128), (pi[0, :, 0],)),
        "rows [4096] d128 float": (lambda p: pj.rope_cos_sin(p, 128), (pf[0, :, 0],)),
        "timesteps [4096] d128 float": (lambda p: pj.timestep_embedding(p, 128), (pf[0, :, 0],)),
    }


def _compile_time(f: Callable[..., Any], a: tuple[Any, ...]) -> tuple[float, float, float]:
    """(wall, CPU) seconds of one XLA compile of ``f`` at ``a``, and the CPU seconds of its tracing and
    lowering before it (caches cleared: all afresh)."""
    jax.clear_caches()
    c0 = time.process_time()
    lowered = jax.jit(f).lower(*a)
    t, c = time.perf_counter(), time.process_time()
    lowered.compile()
    return time.perf_counter() - t, time.process_time() - c, c - c0


def _least(f: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="tries per timing (the least is printed)")
    ap.add_argument("--run", action="store_true", help="also time the compiled programs at a realistic size")
    ap.add_argument("--only", default="", help="cases whose name contains this")
    args = ap.parse_args(argv)
    for name, (f, a) in _compile_cases().items():
        if args.only not in name:
            continue
        n = equations(jax.make_jaxpr(f)(*a).jaxpr)
        wall, cpu, trace = zip(*(_compile_time(f, a) for _ in range(args.repeat)), strict=True)
        print(f"{name:34s} eqns {n:6d}  compile {min(wall):6.3f} s  cpu {min(cpu):6.3f} s  "
              f"trace+lower cpu {min(trace):6.3f} s", flush=True)
    if args.run:
        for name, (f, a) in _run_cases().items():
            if args.only not in name:
                continue
            g = jax.jit(f)
            jax.block_until_ready(g(*a))
            t = _least(lambda g=g, a=a: jax.block_until_ready(g(*a)), max(args.repeat, 5))
            print(f"{name:34s} run {1e3 * t:9.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
