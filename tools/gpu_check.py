"""The GPU check of posenc's device path, one prepared command (tools/gpu_check.sh): bits, then speed.

On a CUDA GPU (one H100/H200, under 5 minutes):

1. bits: posenc.triton's rows (int32 and float32 positions) against the NumPy
   32-bit path and the CPU's own rows; the fused rotation against
   posenc.apply_rope on the CPU; posenc.torch's modules (Timesteps,
   NeRFEncoding, RotaryEmbedding at real positions) on the GPU against the
   same modules on the CPU; the torch integer path (no Triton) too;
2. speed: the fused kernel against the plain formula (cos/sin tables gathered,
   rotate_half in the dtype), flash-attn's Triton rotary and Liger's rope when
   they import; achieved bandwidth (q and k read and written) as a fraction of
   the GPU's peak (``--peak-tbs`` or the table below).

``--dry-run`` runs the same steps on the CPU through Triton's interpreter
(TRITON_INTERPRET=1, tiny shapes): tests/triton_kernels/test_gpu_check.py does, so the
script is known to work before a GPU is lent. The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

#: HBM peak (TB/s) by a substring of torch.cuda.get_device_name()
PEAKS = {"H200": 4.8, "H100 PCIe": 2.0, "H100": 3.35, "B200": 8.0, "A100": 2.0, "L40S": 0.864, "A10": 0.6}


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, Triton's interpreter, tiny shapes")
    ap.add_argument("--peak-tbs", type=float, default=None, help="the GPU's HBM peak in TB/s")
    ap.add_argument("--json", default=None, help="also write the summary here")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    import numpy as np
    import torch

    import posenc
    import posenc.torch as pt
    from posenc.exact.fixed import fixed_ladder
    from posenc.exact.fixed_phase import phase_of_floats, phase_of_integers
    from posenc.exact.fixed_sincos import NUMPY_OPS, sincos_f32
    from posenc.timesteps.conventions import Diffusers
    from posenc.torch._fixed import FixedWords, fixed_sincos, words_of
    from posenc.triton import apply_rope, sincos_rows

    dev = torch.device("cpu" if args.dry_run else "cuda")
    if not args.dry_run and not torch.cuda.is_available():
        print("gpu_check: no CUDA device (use --dry-run on a CPU)", file=sys.stderr)
        return 2
    summary: dict[str, Any] = {"device": "cpu (interpreter)" if args.dry_run else torch.cuda.get_device_name()}
    rng = np.random.default_rng(0)
    small = args.dry_run

    def bits_differ(a: Any, b: Any) -> int:
        x = np.ascontiguousarray(np.asarray(a, dtype=np.float32)).view(np.uint32)
        y = np.ascontiguousarray(np.asarray(b, dtype=np.float32)).view(np.uint32)
        return int(np.count_nonzero(x != y))

    # 1. bits
    ladder = Diffusers(True, 0, 1, 10000).plan(32 if small else 128).ladder
    fx = fixed_ladder(ladder)
    m = 8 if small else 65536
    pi = rng.integers(-2**31, 2**31, m).astype(np.int32)
    pf = (rng.standard_normal(m) * 10.0 ** rng.integers(-4, 9, m)).astype(np.float32)
    for name, p, phase_of in (("int32", pi, phase_of_integers), ("float32", pf, phase_of_floats)):
        s, c = sincos_rows(torch.from_numpy(p).to(dev), ladder)
        ws, wc = sincos_f32(NUMPY_OPS, phase_of(NUMPY_OPS, p[:, None], fx))
        summary[f"rows {name}: differing bits vs NumPy 32-bit"] = bits_differ(s.cpu(), ws) + bits_differ(c.cpu(), wc)
        words = FixedWords(*(torch.from_numpy(a).to(dev) for a in words_of(ladder)))  # type: ignore[misc]
        ts, tc = fixed_sincos(torch.from_numpy(p).to(dev), words)
        summary[f"rows {name}: torch integer path vs NumPy 32-bit"] = bits_differ(ts.cpu(), ws) + bits_differ(
            tc.cpu(), wc)
    t = torch.from_numpy((rng.random(m) * 1000).astype(np.float32))
    for name, mod, x in (("Timesteps", pt.Timesteps(64, True, 0), t),
                         ("NeRFEncoding", pt.NeRFEncoding(6), t[: m - m % 3].reshape(-1, 3) / 100)):
        summary[f"{name} {dev.type} vs cpu: differing bits"] = bits_differ(mod.to(dev)(x.to(dev)).cpu(),
                                                                           mod.cpu()(x))
    rope = pt.RotaryEmbedding(64)
    qx = torch.randn(1, 2, 16, 64)
    real = torch.from_numpy((rng.random(16) * 500).astype(np.float32))
    a = rope.to(dev)(qx.to(dev), qx.to(dev), positions=real.to(dev))[0].cpu()
    b = rope.cpu()(qx, qx, positions=real)[0]
    summary[f"RotaryEmbedding real positions {dev.type} vs cpu: max |diff|"] = float((a - b).abs().max())
    spec = posenc.RopeConfig(64)
    pos = torch.arange(16) * 997
    for dt in (torch.float32, torch.bfloat16):
        q = torch.randn(1, 2, 16, 64).to(dt)
        qo, _ = apply_rope(q.to(dev), q.to(dev), pos.to(dev), spec)
        want = torch.from_numpy(np.ascontiguousarray(posenc.apply_rope(q.float().numpy(), pos.numpy(), spec=spec)))
        diff = (qo.cpu().float() - want.to(dt).float()).abs()
        summary[f"fused rope {str(dt)[6:]}: values off posenc.apply_rope (rotation rounding)"] = int(
            torch.count_nonzero(diff))
    # 2. speed
    summary.update(_speed(args, dev, spec, small))
    for k, v in summary.items():
        print(f"{k}: {v}")
    line = json.dumps(summary)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(line + "\n")
    print(line)
    return 0


def _speed(args: argparse.Namespace, dev: Any, spec: Any, small: bool) -> dict[str, Any]:
    import torch

    import posenc.torch as pt
    from posenc.triton import apply_rope

    b, h, s, d = (1, 2, 2, 64) if small else (4, 32, 4096, 128)
    spec = type(spec)(d)
    dt = torch.bfloat16
    q = torch.randn(b, h, s, d, device=dev, dtype=dt)
    k = torch.randn(b, h // 4 or 1, s, d, device=dev, dtype=dt)
    pos = torch.arange(s, device=dev)
    cos, sin = pt.RotaryEmbedding(d).to(dev).cos_sin(s, positions=pos, dtype=torch.float32, device=dev)

    def plain() -> Any:
        c = torch.cat([cos, cos], -1).to(dt)
        si = torch.cat([sin, sin], -1).to(dt)

        def rot(x: Any) -> Any:
            x1, x2 = x[..., : d // 2], x[..., d // 2:]
            return x * c + torch.cat([-x2, x1], -1) * si
        return rot(q), rot(k)

    fns: dict[str, Any] = {"posenc.triton fused (exact rows)": lambda: apply_rope(q, k, pos, spec),
                           "plain formula (tables, rotate_half)": plain}
    try:
        from flash_attn.ops.triton.rotary import apply_rotary

        c2, s2 = cos.to(dt), sin.to(dt)
        fns["flash-attn triton rotary"] = lambda: (apply_rotary(q.transpose(1, 2), c2, s2),
                                                   apply_rotary(k.transpose(1, 2), c2, s2))
    except Exception as exc:  # any failure to import (a CUDA-less build too) is a row left out
        print(f"flash-attn rotary: left out ({type(exc).__name__})")
    try:
        from liger_kernel.ops.rope import LigerRopeFunction

        c3 = torch.cat([cos, cos], -1)[None].to(dt)
        s3 = torch.cat([sin, sin], -1)[None].to(dt)
        fns["Liger rope"] = lambda: LigerRopeFunction.apply(q, k, c3, s3)
    except Exception as exc:
        print(f"Liger rope: left out ({type(exc).__name__})")
    moved = 2 * (q.numel() + k.numel()) * q.element_size()  # q and k read once, written once
    peak = args.peak_tbs
    if peak is None and not small:
        name = torch.cuda.get_device_name()
        peak = next((v for key, v in PEAKS.items() if key in name), None)
    out: dict[str, Any] = {"shape": f"q {list(q.shape)} k {list(k.shape)} {str(dt)[6:]}", "peak TB/s": peak}
    for name, fn in fns.items():
        ms = _time(fn, dev, 1 if small else 20)
        tbs = moved / (ms * 1e-3) / 1e12
        out[f"{name}: ms"] = round(ms, 4)
        out[f"{name}: TB/s"] = round(tbs, 3)
        if peak:
            out[f"{name}: fraction of peak"] = round(tbs / peak, 3)
    return out


def _time(fn: Any, dev: Any, reps: int) -> float:
    import torch

    fn()  # compile, warm
    if dev.type != "cuda":
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) * 1e3 / reps
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


if __name__ == "__main__":
    sys.exit(main())
