"""Worked cases for diffusion timesteps and neural-field coordinates, the seed's way.

Each figure is printed as a worked example would state it, beside the value
the library computes; each claim is a check run against the library:
``posenc examples times`` shows them, and the tests require every figure to
agree and every check to pass.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..fields import nerf_encoding
from ..timesteps import Diffusers, timestep_embedding
from .claims import Case, CaseSet, Printed, check

__all__ = ["CELLS", "case", "cases"]


def _exact(ladder_words: tuple[float, float, float]) -> Fraction:
    return sum((Fraction(w) for w in ladder_words), Fraction(0))


def _shift() -> Case:
    dim, half = 320, 160
    one, zero = Diffusers().plan(dim).ladder, Diffusers(downscale_freq_shift=0).plan(dim).ladder
    last = (float(one.w0[-1]), float(one.w1[-1]), float(one.w2[-1]))
    row = timestep_embedding(999, dim, dtype=np.float64)
    gap = abs(_exact(last) - Fraction(1, 10000)) / Fraction(1, 10000)
    return Case(
        "SHIFT", 1, "diffusers' downscale_freq_shift: why half_dim − 1 (320 channels, max_period 10000)",
        "ω_k = 10000^(−k/(half − shift)): with the shift of 1 the exponent of the last k = half − 1 is exactly −1",
        (
            Printed("last frequency with shift 1, 10000^(−159/159)", "0.0001", last[0]),
            Printed("last frequency with shift 0 (guided-diffusion), 10000^(−159/160)", "0.000105925",
                    float(zero.w0[-1])),
            Printed("slowest period with shift 1, 2π·10000", "62831.853", 2 * math.pi / last[0]),
            Printed("slowest period with shift 0", "59317.094", 2 * math.pi / float(zero.w0[-1])),
            Printed("slowest sine at t = 999 (shift 1): sin(0.0999)", "0.09973", float(row[half - 1])),
            Printed("first frequency, both shifts", "1", float(one.w0[0])),
        ),
        (
            check("the last frequency is 1/10000 to ~160 bits (posenc holds ω in three doubles)",
                  gap < Fraction(1, 2**150), f"relative gap {float(gap):.1e}"),
            check("the shift of 0 never reaches 1/P: its last frequency is 10000^(1/160) = 1.0593 times larger",
                  abs(float(zero.w0[-1]) / last[0] - 10000 ** (1 / 160)) < 1e-12,
                  f"ratio {float(zero.w0[-1]) / last[0]:.6f}"),
            check("every frequency with shift 1 lies in [1/P, 1], evenly spaced in log",
                  bool(np.allclose(np.diff(np.log(one.w0)), -math.log(10000) / 159, rtol=0, atol=1e-12)),
                  "Δ log ω = −ln(10000)/159"),
        ),
    )


def _flip() -> Case:
    t = np.array([0.0, 1.0, 500.0])
    plain = timestep_embedding(t, 8, dtype=np.float64)
    flipped = timestep_embedding(t, 8, convention=Diffusers(flip_sin_to_cos=True), dtype=np.float64)
    many = np.arange(1000.0)
    a, b = timestep_embedding(many, 320), timestep_embedding(many, 320, convention=Diffusers(flip_sin_to_cos=True))
    cos_sim = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return Case(
        "FLIP", 2, "flip_sin_to_cos: the same numbers in another order (8 channels)",
        "the flip swaps the sin and cos halves; a UNet trained with one sees noise from the other",
        (
            Printed("channel 0 at t = 1, unflipped: sin(1)", "0.84147", float(plain[1, 0])),
            Printed("channel 0 at t = 1, flipped: cos(1)", "0.54030", float(flipped[1, 0])),
            Printed("channel 3 at t = 500, unflipped: sin(500·10000^(−1))", "0.04998", float(plain[2, 3])),
            Printed("mean cosine similarity of the two orders over t = 0 … 999 (320 channels)", "0.159",
                    float(cos_sim.mean())),
        ),
        (
            check("flipped = unflipped with its halves swapped, bit for bit",
                  bool(np.array_equal(flipped, np.concatenate([plain[:, 4:], plain[:, :4]], axis=1))), "t = 0, 1, 500"),
            check("at t = 0 the unflipped row is [0 0 0 0 1 1 1 1], the flipped one [1 1 1 1 0 0 0 0]",
                  plain[0].tolist() == [0.0] * 4 + [1.0] * 4 and flipped[0].tolist() == [1.0] * 4 + [0.0] * 4,
                  f"{plain[0].tolist()}"),
            check("the two orders are nearly orthogonal as vectors (similarity below 0.25 at every t)",
                  bool(np.all(cos_sim < 0.25)), f"max {float(cos_sim.max()):.3f}"),
        ),
    )


def _nerf_band() -> Case:
    x = np.float32(0.7431)  # a float32 coordinate in [0.5, 1): its spacing is 2**-24
    ulp = float(np.spacing(x))
    enc = nerf_encoding(np.array([x]), 10, include_input=False, dtype=np.float64)
    nxt = nerf_encoding(np.array([np.nextafter(x, np.float32(1))]), 10, include_input=False, dtype=np.float64)
    top = 2**9
    noise_band = math.ceil(math.log2(math.pi / ulp))
    return Case(
        "NERFBAND", 3, "NeRF's highest band against the coordinate's own precision (L = 10, float32 x ≈ 0.7431)",
        "2^k·x is exact in float32 (a power of two), but one ulp of x turns band k by 2^k ulp: the top bands "
        "see the rounding of x",
        (
            Printed("highest band of L = 10, 2^(L−1) (no π: bmild/nerf)", "512", float(top)),
            Printed("spacing of float32 coordinates in [0.5, 1), 2^−24", "0.0000000596", ulp),
            Printed("angle step of the top band per ulp of x, 512·2^−24 (rad)", "0.0000305", top * ulp),
            Printed("so its sine moves: |Δ sin(512·x)| from x to the next float32", "0.0000288",
                    float(abs(nxt[18] - enc[18]))),
            Printed("first band k where one ulp of x turns the angle by π or more (noise)", "26", float(noise_band)),
        ),
        (
            check("the top band's angle 512·x is exact in float32: the product needs no rounding",
                  float(np.float32(x) * np.float32(top)) == float(x) * top, f"{float(x) * top!r}"),
            check("posenc's sin(512·x) is the float64 sine of that exact angle (the value, not a float32 product)",
                  abs(enc[18] - math.sin(float(x) * top)) < 1e-15, f"{enc[18]!r}"),
            check("band 26 turns by π per ulp of x: 2^26·2^−24 = 4 ≥ π, band 25 does not (2 < π)",
                  2**26 * ulp >= math.pi > 2**25 * ulp, f"{2**26 * ulp}, {2**25 * ulp}"),
        ),
    )


_BUILDERS = {"SHIFT": _shift, "FLIP": _flip, "NERFBAND": _nerf_band}

#: The cases, in order: ``posenc examples shift flip nerfband`` (or ``times``).
_SET = CaseSet("cell", _BUILDERS)
CELLS: tuple[str, ...] = _SET.cells


def case(cell: str) -> Case:
    """One case by name (``"shift"``, ``"flip"``, ``"nerfband"``, any case).

    >>> c = case("shift")
    >>> c.passed, c.figures[0].printed
    (True, '0.0001')
    """
    return _SET.case(cell)


def cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """The cases (all three by default), every name validated first."""
    return _SET.cases(cells)
