"""The JAX rows' bit identity at scale: 100,000 random int32 positions × 128 channels × 8 scalings (102.4M values).

posenc.jax.rope_cos_sin under jit against posenc.rope_cos_sin's float32 rows,
every bit; plus float32 positions in ±2**31 and the timestep presets. Too
slow for the unit tests (minutes on 2 cores); run it after touching
posenc/exact/fixed*.py or posenc/jax/_rows.py:

    PYTHONPATH=src python tools/jax_identity.py [--count N]

Prints the mismatch count per case and exits 1 if any is not zero.
"""

from __future__ import annotations

import argparse
import sys

import jax.numpy as jnp
import numpy as np

import jax
import posenc
import posenc.jax as pj


def _scalings(n: int) -> list:
    rng = np.random.default_rng(7)
    lr = posenc.LongRoPE(tuple(rng.uniform(0.9, 3, n)), tuple(rng.uniform(1, 40, n)), 4096, factor=16.0)
    return [None, posenc.Linear(4.0), posenc.NTK(8.0), posenc.DynamicNTK(4.0, 4096), posenc.Llama3(8.0, 1.0, 4.0, 8192),
            posenc.YaRN(4.0, 32768), posenc.YaRN(40.0, 4096, mscale=1.0, mscale_all_dim=0.707), lr]


def _mismatches(got: object, want: np.ndarray) -> int:
    return int((np.asarray(got, np.float32).view(np.uint32) != np.asarray(want, np.float32).view(np.uint32)).sum())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100_000, help="random positions per case")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(2222)
    ints = rng.integers(0, 2**31 - 1, args.count).astype(np.int32)
    floats = rng.uniform(-(2.0**31), 2.0**31, args.count).astype(np.float32)
    total = values = 0
    for s in _scalings(64):
        fn = jax.jit(lambda p, s=s: pj.rope_cos_sin(p, 128, base=500000.0, scaling=s, seq_len=20000))
        c, si = fn(jnp.asarray(ints))
        wc, ws = posenc.rope_cos_sin(ints.astype(np.int64), 128, base=500000.0, scaling=s, seq_len=20000,
                                     dtype=np.float32)
        bad = _mismatches(c, wc) + _mismatches(si, ws)
        print(f"int32 {type(s).__name__ if s else 'plain'}: {bad} of {wc.size * 2} values differ", flush=True)
        total, values = total + bad, values + wc.size * 2
    c, si = jax.jit(lambda p: pj.rope_cos_sin(p, 128))(jnp.asarray(floats))
    wc, ws = posenc.rope_cos_sin(floats.astype(np.float64), 128, dtype=np.float32)
    bad = _mismatches(c, wc) + _mismatches(si, ws)
    print(f"float32 positions in ±2**31: {bad} of {wc.size * 2} values differ", flush=True)
    total, values = total + bad, values + wc.size * 2
    t = np.concatenate([rng.uniform(0, 1, args.count // 2), rng.uniform(0, 1000, args.count // 2)]).astype(np.float32)
    for conv in ("diffusers", "guided-diffusion", "flux"):
        got = jax.jit(lambda x, c=conv: pj.timestep_embedding(x, 256, convention=c))(jnp.asarray(t))
        want = posenc.timestep_embedding(t.astype(np.float64), 256, convention=conv)
        bad = _mismatches(got, want)
        print(f"timestep_embedding {conv}, float32 t: {bad} of {want.size} values differ", flush=True)
        total, values = total + bad, values + want.size
    print(f"total: {total} of {values} values differ")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
