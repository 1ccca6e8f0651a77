"""float16 and bfloat16 rows: the exact value rounded once to the format, on every path (as the NumPy functions).

Before, every path of ``posenc::sincos32`` rounded twice: the device cast its
float32, and the host cast its float64 with torch, whose float64 -> float16 /
bfloat16 cast on CPU goes through float32. The value rounded twice differs
from the one rounded once where the float32 lands on a midpoint of the format:
about 2**-13 of float16 values and 2**-16 of bfloat16 ones, one unit off. So
torch's NeRFEncoding in float16 disagreed with posenc.nerf_encoding (30 of
1,020,000 values at 8 bands). Now the host rounds its float64 once
(posenc.torch._fixed.round_once) and the 32-bit path rounds its 64-bit value
to an odd float32, whose cast rounds once. The battery below holds values
where the two roundings differ.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from posenc.exact import fill_sincos
from posenc.timesteps.conventions import Diffusers, round_to
from posenc.torch._exact import LadderBuffers

LADDER = Diffusers(True, 0, 1, 10000).plan(256).ladder
NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _references(v: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(the float32 core's value rounded once to ``name``, the float64 core's value rounded once), as float64."""
    s64, c64 = np.empty((v.size, len(LADDER))), np.empty((v.size, len(LADDER)))
    fill_sincos(v, LADDER, s64, c64)
    both = np.stack([s64, c64])
    return round_to(both.astype(np.float32).astype(np.float64), name), round_to(both, name)


def _positions(name: str) -> torch.Tensor:
    """float32 times (integers, [0, 1000), tiny): 60 rows where the two roundings differ, and 200 others."""
    rng = np.random.default_rng(11)
    pool = np.concatenate([np.arange(0, 4000), rng.random(12000) * 1000, rng.random(2000) * 2.0**-10])
    pool = pool.astype(np.float32).astype(np.float64)
    twice, once = _references(pool, name)
    differ = np.flatnonzero((twice != once).any(axis=(0, 2)))
    assert differ.size >= 3  # the battery tells the two roundings apart
    keep = np.union1d(differ[:60], rng.choice(pool.size, 200, replace=False))
    return torch.from_numpy(pool[keep].astype(np.float32))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_every_path_gives_the_exact_value_rounded_once(dtype):
    p = _positions(NAMES[dtype])
    twice, want = _references(p.double().numpy(), NAMES[dtype])
    assert np.count_nonzero(twice != want) >= 3
    host, device = LadderBuffers(LADDER), LadderBuffers(LADDER, host_core=False)
    runs = {
        "host": lambda: host.sincos32(p, dtype=dtype),
        "device ops": lambda: device.sincos32(p, dtype=dtype),
        "device ops inlined": lambda: device.sincos32(p, dtype=dtype, inline=True),
        "host traced": lambda: make_fx(lambda t: host.sincos32(t, dtype=dtype))(p)(p),
        "device ops traced": lambda: make_fx(lambda t: device.sincos32(t, dtype=dtype))(p)(p),
    }
    for name, run in runs.items():
        s, c = run()
        assert s.dtype == dtype and c.dtype == dtype, name
        got = np.stack([s.double().numpy(), c.double().numpy()])
        assert np.array_equal(got, want), (name, int(np.count_nonzero(got != want)))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_round_once_rounds_float64_once_and_keeps_the_gradient(dtype):
    from posenc.torch._fixed import round_once

    rng = np.random.default_rng(12)
    x = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 3, 20000), [0.0, -0.0, 1e-30]])
    # midpoints of the format nudged by less than half a float32 ulp: the cases a float32 first gets wrong
    mid = round_to(x, NAMES[dtype])
    ulp = np.abs(mid) * 2.0 ** -(11 if dtype == torch.float16 else 8)
    x = np.concatenate([x, mid + ulp / 2 + ulp * 2.0**-30, mid - ulp / 2 - ulp * 2.0**-30])
    x = x[np.abs(x) < 6e4]
    got = round_once(torch.from_numpy(x), dtype).double().numpy()
    assert np.array_equal(got, round_to(x, NAMES[dtype]))
    assert np.count_nonzero(torch.from_numpy(x).to(dtype).double().numpy() != got) > 0  # the cast alone is wrong
    t = torch.tensor([0.3, -2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(round_once(t, dtype).float().sum(), t)
    assert g.tolist() == [1.0, 1.0]


def test_nerf_and_fourier_features_in_float16_equal_the_numpy_functions():
    import posenc
    from posenc.torch import FourierFeatures, NeRFEncoding

    rng = np.random.default_rng(13)
    x = rng.uniform(-4, 4, (20000, 3)).astype(np.float16)
    nerf = NeRFEncoding(8)
    want = posenc.nerf_encoding(x, 8, dtype=np.float16)
    got = nerf(torch.from_numpy(x))
    assert np.array_equal(got.numpy(), want)  # was 30 values one unit off
    traced = make_fx(nerf)(torch.from_numpy(x))(torch.from_numpy(x))
    assert np.array_equal(traced.numpy(), want)
    b = rng.standard_normal((16, 3)) * 3
    ff = FourierFeatures(torch.from_numpy(b))
    want = posenc.fourier_features(x, b, dtype=np.float16)
    assert np.array_equal(ff(torch.from_numpy(x)).numpy(), want)
