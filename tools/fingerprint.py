"""The golden fingerprint: SHA-256 digests of a fixed battery of posenc's outputs, one per family and dtype.

posenc promises the same bits on every machine: with or without AVX-512 (NumPy
dispatches its ufuncs by CPU), with or without numba (the ``fast`` extra).
This tool computes the battery and its digests; tests/test_fingerprint.py runs
it three times (natively, with every SIMD level above NumPy's baseline turned
off, and with numba blocked) and compares each run with the committed
tests/golden/fingerprints.json.

    python tools/fingerprint.py                # the digests of this process, as JSON
    python tools/fingerprint.py --no-numba     # the same with numba unimportable
    python tools/fingerprint.py --write        # all three modes; write the file if they agree

Outputs that pass through libm or the framework's own float arithmetic are not
posenc's and are left out: see docs/explanation/guarantees.md. The page's twin of the
exact path (src/posenc/page/exact.js) runs under node; its bits must equal
``posenc.encode``'s (checked here) and the committed digest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "fingerprints.json"
sys.path.insert(0, str(ROOT / "src"))

FLOATS = ("float64", "float32", "float16")


class _NoNumba:
    """A meta-path finder that makes ``import numba`` fail, as on a machine without the ``fast`` extra."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "numba" or name.startswith("numba."):
            raise ImportError(f"{name} blocked by tools/fingerprint.py --no-numba")


def digest(arrays: list[Any]) -> str:
    """SHA-256 over each array's dtype, shape and little-endian bytes, in order."""
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def positions() -> Any:
    import numpy as np

    return np.array([0, 1, 2, 3, 7, 100, 1000.5, -5, 12345.678, 1e6, 1e6 + 1, 2**31 - 1, 1e9, 2.0**40 + 3,
                     0.25, 1e-3, -1000.5, 99991])


def sinusoid(dt: str) -> Iterator[Any]:
    import numpy as np

    import posenc

    p = positions()
    for d in (4, 6, 64, 130):
        for base in (100.0, 1e4, 5e5):
            for layout in posenc.CHANNEL_LAYOUTS:
                yield posenc.encode(p, d, base=base, layout=layout, dtype=dt)
                yield posenc.table(40, d, start=3, base=base, layout=layout, dtype=dt)
    yield posenc.table(1024, 128, dtype=dt)  # 131072 values: the compiled engine's size when numba is there
    yield posenc.shift_matrix(7.5, 16, dtype=dt)
    if dt == "float64":
        yield posenc.similarity(1000, 1000 + np.arange(-100, 101), 64)
        yield posenc.similarity([0, 5, 1e6], 3, 16, per_channel=True)


def convention(dt: str) -> Iterator[Any]:
    import posenc
    from posenc import conventions, conventions_nd

    p = positions()
    for name in conventions.NAMES:
        for d in (16, 64, 33):
            try:
                yield posenc.encode(p, d, convention=name, dtype=dt)
                yield posenc.table(50, d, convention=name, dtype=dt)
            except posenc.PosEncError:  # an odd width some conventions refuse: the refusal is the answer
                yield [name, d]
    coords = posenc.grid(5, 7).reshape(-1, 2)
    for name in conventions_nd.NAMES:
        yield posenc.encode_nd(coords, 32, convention=name, dtype=dt)
        yield posenc.encode_nd(coords * 13 + 1, 64, convention=name, dtype=dt)


def _scalings() -> list[Any]:
    import posenc

    short = tuple(1.0 + 0.01 * i for i in range(32))
    long = tuple(1.0 + 0.5 * i for i in range(32))
    return [None, posenc.Linear(4.0), posenc.NTK(4.0), posenc.DynamicNTK(4.0, 256), posenc.YaRN(4.0, 256),
            posenc.YaRN(8.0, 512, beta_fast=16.0, mscale=0.7, mscale_all_dim=0.5),
            posenc.Llama3(8.0, 1.0, 4.0, 256), posenc.LongRoPE(short, long, 256)]


def rope(dt: str) -> Iterator[Any]:
    import numpy as np

    import posenc

    pos = np.concatenate([np.arange(0, 600, 7), [1e4, 131071, 2**20]])
    x = np.random.default_rng(7).normal(size=(2, pos.size, 64)).astype(dt)
    for sc in _scalings():
        for seq_len in (None, 300, 4096):
            yield from posenc.rope_cos_sin(pos, 64, scaling=sc, seq_len=seq_len, dtype=dt)
        for layout in ("half", "interleaved"):  # the battery as fixed (head_half came later)
            yield posenc.apply_rope(x, pos, scaling=sc, layout=layout, seq_len=2048)
            if not isinstance(sc, posenc.LongRoPE):  # its factors are per pair of the full rotary dim
                yield posenc.apply_rope(x, pos, scaling=sc, layout=layout, rotary_dim=32, base=5e5)
    yield posenc.rope_table(posenc.rope_frequencies(128, base=1e6), 0, 1024, dtype=dt)


def grid(dt: str) -> Iterator[Any]:
    import numpy as np

    import posenc

    segs = [posenc.Text(3), posenc.VisionGrid(2, 4, 6), posenc.Text(5), posenc.VisionGrid(1, 3, 3, time_step=2.0)]
    for adv in posenc.MROPE_ADVANCES:
        mpos, delta = posenc.mrope_positions(segs, advance=adv)
        yield mpos, np.array([delta])
        yield posenc.mrope_decode_positions(delta, mpos.size // 3, 4)  # the cache position after the prompt
        for sizes, layout in (((16, 24, 24), "contiguous"), ((24, 20, 20), "interleaved")):
            yield from posenc.rope_cos_sin(mpos, 128, sections=sizes, section_layout=layout, dtype=dt)
    yield posenc.grid(3, 4, 5)
    big = posenc.grid(64, 64).reshape(-1, 2)  # 4096 points × 64: the compiled placement's size
    yield posenc.encode_nd(big, 64, dtype=dt)
    from posenc.sinusoidal.conventions_nd import Timm

    for flags in ((True, False), (False, True), (True, True)):  # the default Timm() is in convention()
        yield posenc.encode_nd(big[::7] * 3 + 1, 64, convention=Timm(333.0, *flags), dtype=dt)
    yield posenc.encode_nd(big[:200].reshape(2, 100, 2), 32, convention="mae", cls_token=True, dtype=dt)


def alibi(dt: str) -> Iterator[Any]:
    import posenc

    for conv in posenc.ALIBI_CONVENTIONS:
        for n in (*range(1, 13), 16, 24, 64, 100):
            yield posenc.alibi_slopes(n, convention=conv)
        for causal in (True, False):
            yield posenc.alibi_bias(6, 9, 12, offset=3, convention=conv, causal=causal, dtype=dt)
            yield posenc.alibi_bias(4, 4, 8, positions=[0, 5, 9, 1000], convention=conv, causal=causal, dtype=dt)


def t5(dt: str) -> Iterator[Any]:
    import numpy as np

    import posenc

    rel = np.concatenate([np.arange(-3000, 3001), -(2 ** np.arange(0, 53)), 2 ** np.arange(0, 53)])
    for bi, nb, md in ((True, 32, 128), (False, 32, 128), (True, 32, 256), (True, 34, 27), (True, 18, 128),
                       (False, 129, 486), (True, 320, 131072), (False, 2, 3), (True, 4, 10**6)):
        yield posenc.t5_bucket(rel, bidirectional=bi, num_buckets=nb, max_distance=md)
        yield posenc.t5_bucket_edges(bidirectional=bi, num_buckets=nb, max_distance=md)


def xpos(dt: str) -> Iterator[Any]:
    import numpy as np

    import posenc

    pos = np.arange(0, 9000, 3.0)
    variants = [posenc.XPos(), posenc.XPos(gamma=0.1, scale_base=256.0), posenc.XPos(gamma=1.0, center=False)]
    for xp in variants:
        for role in posenc.rope.xpos.XPOS_ROLES:
            n = 9000 if xp.center and dt != "float16" else 2000  # float16's range: |p − c| below ~1100
            yield posenc.xpos_scale(pos[pos < n], 64, xpos=xp, role=role, seq_len=n, dtype=dt)
        if dt == "float64":
            yield posenc.xpos_decay(np.arange(-4096, 4097, 2.5), 128, xpos=xp)
    x = np.random.default_rng(11).normal(size=(3, 40, 32)).astype(dt)
    for role in posenc.rope.xpos.XPOS_ROLES:
        yield posenc.apply_rope(x, np.arange(40) * 37, xpos=posenc.XPos(), role=role, seq_len=2000)


def _torch_array(t: Any) -> Any:
    import torch

    t = t.detach().cpu().contiguous()
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()


def torch_family(dt: str) -> Iterator[Any]:
    """posenc.torch's modules: tables are posenc's, the rotation is torch's own multiply and add (IEEE, unfused)."""
    import torch

    import posenc
    import posenc.torch as pt

    tdt = getattr(torch, dt)
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 4, 96, 64, generator=g, dtype=torch.float64).to(tdt)
    k = torch.randn(2, 4, 96, 64, generator=g, dtype=torch.float64).to(tdt)
    for sc in _scalings()[:5]:
        rot = pt.RotaryEmbedding(64, scaling=sc, max_len=512)
        yield from (_torch_array(t) for t in rot(q, k, offset=300))
    for seq_len in (None, 2048):
        rot = pt.RotaryEmbedding(64, xpos=posenc.XPos(), seq_len=seq_len, max_len=2048)
        yield from (_torch_array(t) for t in rot(q, k, offset=17))
    for name, coords in (("eva02", posenc.eva02_coords((8, 12), (7, 7))), ("dinov3", posenc.dinov3_coords(8, 12))):
        cfg = posenc.rope_preset(name)  # real-valued positions: the torch twin's rows, no table
        rot = pt.RotaryEmbedding(cfg.head_dim, layout=cfg.layout, **cfg.kwargs())
        yield from (_torch_array(t) for t in rot(q, k, positions=torch.from_numpy(coords)))
    yield _torch_array(pt.encode(positions(), 32, dtype=tdt))
    yield _torch_array(pt.AlibiBias(12)(5, 9, offset=4, dtype=tdt))
    if dt == "float32":
        rel = torch.arange(-2000, 2001)
        yield _torch_array(pt.T5RelativeBias(4).bucket(rel))
        yield _torch_array(pt.T5RelativeBias(4, bidirectional=False, num_buckets=34, max_distance=27).bucket(rel))


def times_fields(dt: str) -> Iterator[Any]:
    """Diffusion timesteps and neural-field encodings, every preset, fractional inputs (issue 21)."""
    import numpy as np

    import posenc
    from posenc.timesteps import Diffusers, Flux

    t = np.concatenate([np.arange(0, 1000, 0.75), np.random.default_rng(21).uniform(0, 1, 500), [1e6, -3.5]])
    for conv in ("diffusers", "guided-diffusion", "flux", Diffusers(True, 0, 1000.0), Flux(time_dtype="bfloat16")):
        yield posenc.timestep_embedding(t / 1000 if conv in ("flux",) or isinstance(conv, Flux) else t, 257,
                                        convention=conv, dtype=dt)
    x = np.random.default_rng(22).uniform(-1, 1, (400, 3))
    for conv in ("nerf", "nerfstudio", "tcnn"):
        yield posenc.nerf_encoding(x, 12, convention=conv, include_input=True, dtype=dt)
    yield posenc.fourier_features(x, np.random.default_rng(23).normal(0, 10, (64, 3)), dtype=dt)


def torch_twin(dt: str) -> Iterator[Any]:
    """posenc.torch's twin of exact/ itself (what runs on accelerators and under compile), float64 sin/cos."""
    from fractions import Fraction

    import numpy as np
    import torch

    from posenc.exact import geometric_ladder
    from posenc.torch._exact import LadderBuffers, sincos

    lad = LadderBuffers(geometric_ladder(128, 10000.0, Fraction(127), 1000))
    p = torch.from_numpy(np.concatenate([np.random.default_rng(24).uniform(0, 1, 3000), [0.0, 1e9, -2.5]]))
    yield from (t.numpy() for t in sincos(p[:, None], lad.words()))
    yield from (t.numpy() for t in sincos(p[:, None], lad.words(), p[:, None] * 2.0**-60))


_NODE_JS = r"""
const fs = require("fs");
const job = JSON.parse(fs.readFileSync(0, "utf8"));
const makeExact = new Function(job.source + "\nreturn makeExact;")();
const EX = makeExact(job.constants);
const out = [];
for (const [w0, w1, w2] of job.ladders) {
  const lad = EX.ladder(Float64Array.from(w0), Float64Array.from(w1), Float64Array.from(w2));
  const s = new Float64Array(lad.n), c = new Float64Array(lad.n);
  for (const p of job.positions) {
    EX.sincos(p, lad, s, c);
    for (let i = 0; i < lad.n; i++) out.push(s[i], c[i]);  // posenc.encode's interleaved row
  }
  const ss = new Float64Array(lad.n), cc = new Float64Array(lad.n);
  for (const d of job.deltas) out.push(EX.kernel(d, lad, ss, cc));
}
process.stdout.write(Buffer.from(Float64Array.from(out).buffer).toString("base64"));
"""


def page_js(dt: str) -> Iterator[Any]:
    """exact.js under node, over every (base, d_model) of the page: checked against posenc here, then digested."""
    import base64

    import numpy as np

    import posenc
    from posenc.exact import seed_ladder
    from posenc.page.data import BASES, D_MODELS, MAX_DELTA, explorer_data

    node = shutil.which("node") or os.environ.get("POSENC_NODE")
    if not node:
        raise SystemExit("tools/fingerprint.py: the page's JS twin needs node (apt-get install nodejs)")
    pos = positions()[positions() >= 0]  # the page's position field takes 0 … 10**9 and beyond
    deltas = np.arange(-MAX_DELTA, MAX_DELTA + 1)
    pairs = [(b, d) for b in BASES for d in D_MODELS]
    ladders = [[seed_ladder(d, b).w0.tolist(), seed_ladder(d, b).w1.tolist(), seed_ladder(d, b).w2.tolist()]
               for b, d in pairs]
    job = {"source": (ROOT / "src/posenc/page/exact.js").read_text(), "constants": explorer_data()["constants"],
           "ladders": ladders, "positions": pos.tolist(), "deltas": deltas.tolist()}
    run = subprocess.run([node, "-e", _NODE_JS], input=json.dumps(job), capture_output=True, text=True, check=True)
    got = np.frombuffer(base64.b64decode(run.stdout), dtype="<f8")
    want = np.concatenate([np.concatenate([posenc.encode(pos, d, base=b, dtype=np.float64).ravel(),
                                           posenc.similarity(1000, 1000 + deltas, d, base=b)]) for b, d in pairs])
    if got.shape != want.shape or not np.array_equal(got.view(np.int64), want.view(np.int64)):
        raise SystemExit("tools/fingerprint.py: exact.js under node differs from posenc.encode/similarity")
    yield got


_NODE_FAMILY_JS = r"""
const fs = require("fs");
const job = JSON.parse(fs.readFileSync(0, "utf8"));
const [makeExact, makeCommon] = new Function(job.source + "\nreturn [makeExact, makeCommon];")();
const EX = makeExact(job.constants), C = makeCommon(EX);
const out = [];
for (const e of job.ladders) {
  const w = [e.w0, e.w1, e.w2].map((a) => Float64Array.from(a));
  const L = { lad: EX.ladder(w[0], w[1], w[2]), n: e.w0.length };
  const s = new Float64Array(L.n), c = new Float64Array(L.n);
  for (const p of job.positions) {
    EX.sincos(p, L.lad, s, c);
    for (let i = 0; i < L.n; i++) out.push(c[i] * e.af);  // posenc.rope_cos_sin: cos·af, then sin·af
    for (let i = 0; i < L.n; i++) out.push(s[i] * e.af);
  }
  for (const p of job.decades) { const r = C.precisionAt(p, L); out.push(r.f32, r.bf16, r.f16); }
}
process.stdout.write(Buffer.from(Float64Array.from(out).buffer).toString("base64"));
"""


def page_family_js(dt: str) -> Iterator[Any]:
    """The family pages' script (exact.js + common.js) under node, on the RoPE and scalings explorers' ladders:
    cos·af and sin·af checked against posenc.rope_cos_sin and the precision view against posenc/parity/precision.py
    here, bit for bit, then digested."""
    import base64

    import numpy as np

    import posenc
    from posenc.page.data import explorer_data
    from posenc.page.rope_data import (
        FACTORS,
        HEAD_DIMS,
        KINDS,
        ROPE_BASES,
        SCALING_HEAD,
        rotary_dim_of,
        scaling_of,
    )
    from posenc.parity.precision import rope_precision

    node = shutil.which("node") or os.environ.get("POSENC_NODE")
    if not node:
        raise SystemExit("tools/fingerprint.py: the page's JS twin needs node (apt-get install nodejs)")
    pos = np.array([0.0, 1.0, 5.0, 1000.0, 4095.0, 65536.0, 123456.0, 999999.0, 2.0**31 - 1])
    decades = np.array([1.0, 10.0, 100.0, 1000.0, 1e4, 1e5, 1e6])
    freqs = [posenc.rope_frequencies(h, base=b) for h in HEAD_DIMS for b in ROPE_BASES]
    freqs += [posenc.rope_frequencies(SCALING_HEAD, base=500000.0, scaling=scaling_of(k, f),
                                      rotary_dim=rotary_dim_of(k), seq_len=16384)
              for k, _, _ in KINDS for f in FACTORS[1:3]]
    source = "\n".join((ROOT / f"src/posenc/page/{n}").read_text() for n in ("exact.js", "common.js"))
    job = {"source": source, "constants": explorer_data()["constants"], "positions": pos.tolist(),
           "decades": decades.tolist(),
           "ladders": [{"w0": f.ladder.w0.tolist(), "w1": f.ladder.w1.tolist(), "w2": f.ladder.w2.tolist(),
                        "af": f.attention_factor} for f in freqs]}
    run = subprocess.run([node, "-e", _NODE_FAMILY_JS], input=json.dumps(job), capture_output=True, text=True,
                         check=True)
    got = np.frombuffer(base64.b64decode(run.stdout), dtype="<f8")
    from posenc.rope.cos_sin import cos_sin_tables

    want = []
    for f in freqs:
        c, s = cos_sin_tables(pos, f, np.dtype(np.float64))
        want.append(np.concatenate([c, s], axis=1).ravel())
        e = rope_precision(f.ladder, decades)
        want.append(np.stack([e["f32"], e["bf16"], e["f16"]], axis=1).ravel())
    ref = np.concatenate(want)
    if got.shape != ref.shape or not np.array_equal(got.view(np.int64), ref.view(np.int64)):
        raise SystemExit("tools/fingerprint.py: the family pages' JS under node differs from posenc")
    yield got


#: family → (battery, dtypes)
FAMILIES: dict[str, tuple[Callable[[str], Iterator[Any]], tuple[str, ...]]] = {
    "sinusoid": (sinusoid, FLOATS),
    "conventions": (convention, FLOATS),
    "rope": (rope, FLOATS),
    "grid-mrope": (grid, FLOATS),
    "alibi": (alibi, FLOATS),
    "t5": (t5, ("int64",)),
    "xpos": (xpos, FLOATS),
    "torch": (torch_family, ("float64", "float32", "float16", "bfloat16")),
    "page-js": (page_js, ("float64",)),
    "page-family-js": (page_family_js, ("float64",)),
    "times-fields": (times_fields, FLOATS),
    "torch-twin": (torch_twin, ("float64",)),
}


def _flatten(items: Iterator[Any]) -> Iterator[Any]:
    import numpy as np

    for it in items:
        if isinstance(it, tuple):
            yield from _flatten(iter(it))
        else:
            yield np.asarray(it)


def digests() -> dict[str, str]:
    """``family/dtype`` → digest, for this process."""
    out = {}
    for fam, (battery, dtypes) in FAMILIES.items():
        for dt in dtypes:
            out[f"{fam}/{dt}"] = digest(list(_flatten(battery(dt))))
    return out


def environment() -> dict[str, Any]:
    """What this process runs on: the SIMD levels NumPy dispatches to, numba, torch's CPU capability."""
    import numpy as np
    import torch
    from numpy._core import _multiarray_umath as feats  # numpy >= 2

    from posenc.exact.angles import prefer_compiled

    return {
        "numpy": np.__version__,
        "dispatch_on": [f for f in feats.__cpu_dispatch__ if feats.__cpu_features__.get(f)],
        "numba": prefer_compiled(1 << 30),  # loads the compiled engine up front when numba is there
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "numba_cpu": os.environ.get("NUMBA_CPU_NAME", "host"),
    }


_SIMD_VARS = ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY", "NUMBA_CPU_NAME",
              "NUMBA_CPU_FEATURES")


def _clean_env() -> dict[str, str]:
    """This process's environment without any SIMD override, and with posenc's sources first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in _SIMD_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return env


def native_dispatch() -> list[str]:
    """The SIMD levels NumPy dispatches to above its baseline on this CPU (asked of a fresh, unrestricted process)."""
    code = ("import json, numpy as np; f = np._core._multiarray_umath; "
            "print(json.dumps([x for x in f.__cpu_dispatch__ if f.__cpu_features__.get(x)]))")
    run = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, check=True)
    return list(json.loads(run.stdout))


def simd_off_env() -> dict[str, str]:
    """Environment turning off every SIMD level NumPy dispatches to above its baseline here, torch's and numba's.

    numba then compiles for a generic x86-64 (no AVX), torch takes its default (non-vectorised-ISA) kernels.
    """
    return {"NPY_DISABLE_CPU_FEATURES": " ".join(native_dispatch()), "ATEN_CPU_CAPABILITY": "default",
            "NUMBA_CPU_NAME": "generic"}


MODES = ("native", "simd-off", "no-numba")


def run_mode(mode: str) -> dict[str, Any]:
    """This tool in a fresh process in ``mode``: {"environment": …, "digests": …}."""
    env = _clean_env()  # native: whatever this CPU has, even when the caller runs restricted
    args = [sys.executable, str(Path(__file__).resolve())]
    if mode == "simd-off":
        env.update(simd_off_env())
    elif mode == "no-numba":
        args.append("--no-numba")
    run = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if run.returncode:
        raise RuntimeError(f"fingerprint ({mode}) failed:\n{run.stderr[-4000:]}")
    return json.loads(run.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-numba", action="store_true", help="block numba (posenc takes its NumPy-only path)")
    ap.add_argument("--write", action="store_true", help=f"run all modes; write {GOLDEN.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    if args.write:
        runs = {m: run_mode(m) for m in MODES}
        first = runs["native"]["digests"]
        for m, r in runs.items():
            if r["digests"] != first:
                bad = sorted(k for k in first if r["digests"].get(k) != first[k])
                print(f"modes disagree: {m} differs from native in {bad}", file=sys.stderr)
                return 1
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"digests": first, "written_on": {m: r["environment"] for m, r in runs.items()}}, indent=1)
        tmp = GOLDEN.with_suffix(".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(GOLDEN)
        print(f"wrote {GOLDEN.relative_to(ROOT)}: {len(first)} digests, all {len(MODES)} modes agree")
        return 0
    if args.no_numba:
        sys.meta_path.insert(0, _NoNumba())  # type: ignore[arg-type]
    env = environment()
    print(json.dumps({"environment": env, "digests": digests()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
