"""Worked cases for the relative position biases (ALiBi, T5 buckets, xPos), the seed's way.

Each case states its numbers as a worked example would print them (the
``printed`` text of each :class:`~posenc.seed.claims.Printed`) beside the
value the library computes, and its claims as checks run against the library:
``posenc examples bias`` shows them, the tests require every figure to agree
and every check to pass. Nothing here is typed-in output: a printed figure
that stopped agreeing with the library would show as an erratum.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..bias.alibi import alibi_bias, alibi_slopes
from ..bias.t5 import t5_bucket, t5_bucket_edges
from ..errors import PosEncError
from ..rope.apply import apply_rope
from ..rope.xpos import XPos, xpos_decay, xpos_scale
from .claims import Case, CaseSet, Printed, check

__all__ = ["CELLS", "case", "cases"]

def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _alibi() -> Case:
    n = 12
    m = alibi_slopes(n)
    q = 6
    press = alibi_bias(q, q, n, dtype=np.float64)
    bloom = alibi_bias(q, q, n, convention="bloom", dtype=np.float64)
    live = np.isfinite(press)
    shift = np.where(live, np.where(live, bloom, 0.0) - np.where(live, press, 0.0), np.nan)
    scores = np.random.default_rng(0).normal(size=(n, q, q))
    gap = float(np.max(np.abs(_softmax(scores + bloom) - _softmax(scores + press))))
    far = alibi_bias(1, 2049, n, offset=2048, dtype=np.float64)[:, 0]  # a query 2048 keys in, trained on 1024
    return Case(
        "ALIBI", 1, "ALiBi with 12 heads (not a power of two)",
        "the slopes of 12 heads are two interleaved series; BLOOM's m·j is not the paper's −m·(i − j) as a tensor",
        (
            Printed("slope of head 0, 2^(-8/8)", "0.5", float(m[0])),
            Printed("slope of head 7, 2^(-8·8/8)", "0.00390625", float(m[7])),
            Printed("slope of head 8, first of the 16-head series' odd terms, 2^-0.5", "0.70711", float(m[8])),
            Printed("slope of the last head (11), 2^-3.5", "0.08839", float(m[11])),
            Printed("bias at distance 0, every head", "0", float(np.abs(np.diagonal(press, 0, 1, 2)).max())),
            Printed("bias of the last head at distance 5, −5·2^-3.5", "-0.44194", float(press[11, 5, 0])),
            Printed("BLOOM − paper in row i = 5 of head 0: m·i", "2.5", float(np.nanmax(shift[0, 5]))),
            Printed("head 7 at distance 2048, twice a 1024 training length", "-8", float(far[7, 0])),
            Printed("that key's weight factor, e^-8", "0.000335", math.exp(float(far[7, 0]))),
        ),
        (
            check("heads 0 … 7 are 2^-1 … 2^-8 (the 8-head series), heads 8 … 11 2^-0.5 … 2^-3.5, between them",
                  m[:8].tolist() == [2.0**-k for k in range(1, 9)]
                  and all(2.0 ** -(t + 1) < m[8 + t] < 2.0**-t for t in range(4)),
                  f"slopes {np.round(m, 5).tolist()}"),
            check("the diagonal (distance 0) is 0 in every head; keys after the query are masked",
                  bool(np.all(np.diagonal(press, 0, 1, 2) == 0) and np.all(np.isneginf(press[:, 0, 1:]))),
                  "−m·0 = 0; −inf above the diagonal"),
            check("BLOOM's m·j differs from −m·(i − j) by m·i, the same for every key of row i",
                  bool(np.allclose(np.nanmax(shift, -1), np.nanmin(shift, -1), rtol=0, atol=1e-12)
                       and np.allclose(np.nanmax(shift, -1), m[:, None] * np.arange(q), rtol=1e-15)),
                  "a constant per row: softmax cancels it"),
            check("so the attention weights are equal, row by row", gap < 1e-15, f"max |Δ softmax| = {gap:.1e}"),
            check("past the training length the penalty keeps growing linearly: −m·2048 exactly, nothing wraps",
                  bool(np.array_equal(far[:, 0], -2048 * m)), f"head 0: {far[0, 0]:g}, head 7: {far[7, 0]:g}"),
        ),
    )


def _t5() -> Case:
    edges = t5_bucket_edges()
    before = t5_bucket(-np.arange(0, 2000))
    after = t5_bucket(np.arange(1, 2000))
    far = t5_bucket([-128, -1000, -(10**6)])
    return Case(
        "T5", 2, "T5's buckets (32 buckets, max_distance 128)",
        "half the buckets per direction; exact up to 7, then logarithmic; the last starts before max_distance",
        (
            Printed("first logarithmic bucket (keys before the query)", "8", float(t5_bucket([-8])[0])),
            Printed("its first distance", "8", float(edges[8])),
            Printed("its width: distances 8 … 11", "4", float(edges[9] - edges[8])),
            Printed("bucket of distance 16, log(16/8)/log(16)·8 = 2 exactly in float32", "10",
                    float(t5_bucket([-16])[0])),
            Printed("where the last bucket (15) starts", "91", float(edges[15])),
            Printed("bucket at max_distance 128, key before", "15", float(far[0])),
            Printed("bucket at offset −5 (key 5 before the query)", "5", float(t5_bucket([-5])[0])),
            Printed("bucket at offset +5 (key 5 after): 5 + 32/2", "21", float(t5_bucket([5])[0])),
            Printed("decoder (unidirectional) at offset +5", "0", float(t5_bucket([5], bidirectional=False)[0])),
            Printed("decoder at offset −20", "17", float(t5_bucket([-20], bidirectional=False)[0])),
        ),
        (
            check("distances 0 … 7 each have their own bucket", before[:8].tolist() == list(range(8)),
                  f"{before[:9].tolist()}"),
            check("every distance from 91 on, max_distance 128 and beyond, shares bucket 15",
                  bool(np.all(before[91:] == 15) and np.all(far == 15)), f"{far.tolist()}"),
            check("a key after the query is in bucket 16 + its distance's bucket; bucket 16 itself is never used",
                  bool(np.array_equal(after, before[1:] + 16) and 16 not in set(after.tolist())),
                  "offset 0 is bucket 0"),
            check("the buckets never decrease with distance", bool(np.all(np.diff(before) >= 0)), "0 … 1999"),
        ),
    )


def _xpos() -> Case:
    r = 128
    xp = XPos()
    d512 = xpos_decay([512, 1024], r)
    rng = np.random.default_rng(1)
    qv, kv = rng.normal(size=(2, 1, r))

    def score(pq: int, pk: int) -> float:
        a = apply_rope(qv, [pq], xpos=xp, role="q", seq_len=4096)
        b = apply_rope(kv, [pk], xpos=xp, role="k", seq_len=4096)
        return float((a * b).sum())

    s1, s2 = score(600, 88), score(3000, 2488)
    top = xpos_scale([0], r, seq_len=1024)[0, 0]
    return Case(
        "XPOS", 3, "xPos: the decay at an offset of 512 (rotary dim 128, γ = 0.4, scale_base 512)",
        "every pair decays by ζ_i per 512 positions; the fast pairs most; positions are centred",
        (
            Printed("ζ_0 = 0.4/1.4 (fastest pair)", "0.28571", float(xp.zeta(r)[0])),
            Printed("ζ_63 = (126/128 + 0.4)/1.4 (slowest pair)", "0.98884", float(xp.zeta(r)[-1])),
            Printed("decay of pair 0 at offset 512", "0.28571", float(d512[0, 0])),
            Printed("decay of pair 63 at offset 512", "0.98884", float(d512[0, -1])),
            Printed("decay of pair 0 at offset 1024, ζ_0²", "0.08163", float(d512[1, 0])),
            Printed("q factor of pair 0 at position 0 of a 1024-token sequence, ζ_0^(-512/512)", "3.5", float(top)),
        ),
        (
            check("the score depends on the offset only: (600, 88) and (3000, 2488) score the same",
                  abs(s1 - s2) <= 1e-12 * float(np.abs(qv).sum() * np.abs(kv).sum()),
                  f"{s1:.12f} vs {s2:.12f}"),
            check("the decay at offset 512 is ζ_i itself, for every pair",
                  bool(np.allclose(d512[0], xp.zeta(r), rtol=4e-16)), "ζ_i^(512/512)"),
            check("every pair decays (ζ_i < 1), the fast ones most (ζ increasing in i)",
                  bool(np.all(xp.zeta(r) < 1) and np.all(np.diff(xp.zeta(r)) > 0)), "ζ_0 < ζ_1 < … < ζ_63 < 1"),
            check("centring keeps a 65,536-token sequence inside float32's range; uncentred it is refused",
                  _fits(65535, XPos()) and not _fits(65535, XPos(center=False)),
                  "|p − 32768| <= 32768 < 35,690 = 512·87.3/ln 3.5"),
        ),
    )


def _fits(p: int, xp: XPos) -> bool:
    try:
        xpos_scale([p], 128, xpos=xp, seq_len=p + 1, dtype=np.float32)
    except PosEncError:
        return False
    return True


_BUILDERS: dict[str, Callable[[], Case]] = {"ALIBI": _alibi, "T5": _t5, "XPOS": _xpos}

#: The cases, in order: ``posenc examples alibi t5 xpos`` (or ``bias``).
_SET = CaseSet("cell", _BUILDERS)
CELLS: tuple[str, ...] = _SET.cells


def case(cell: str) -> Case:
    """One case by name (``"alibi"``, ``"t5"``, ``"xpos"``, any case).

    >>> c = case("t5")
    >>> c.passed, [f.printed for f in c.figures][:3]
    (True, ['8', '8', '4'])
    """
    return _SET.case(cell)



def cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """The cases (all three by default), every name validated first."""
    return _SET.cases(cells)
