"""What the M-RoPE, ALiBi, T5, xPos and NeRF explorers carry: posenc's ladders and constants, nothing computed.

The pages' ``explorers.js`` computes every number it shows. What it cannot
derive from the settings alone comes from here, made by posenc when the page
is built: the rotary ladders ω_i (three float64 words each, as for the RoPE
explorer), the constants of posenc's own exp (:mod:`posenc.exact.power`),
xPos's ln ζ_i / scale_base as double-doubles, and the NeRF bands of each
preset. ALiBi's slopes and T5's buckets need no data: the script works them
out exactly from the integers of the setting (BigInt comparisons).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exact import power
from ..rope import rope_frequencies
from .rope_data import _blob

__all__ = [
    "ALIBI_BIAS_MAX",
    "MROPE_BASES",
    "MROPE_HEAD",
    "MROPE_SECTIONS",
    "NERF_CONVENTIONS",
    "NERF_MAX_BANDS",
    "T5_BUCKETS",
    "T5_DISTANCES",
    "XPOS_ROTARY",
    "XPOS_SCALE_BASES",
    "XPOS_SEQ_LENS",
    "alibi_data",
    "mrope_data",
    "nerf_data",
    "t5_data",
    "xpos_data",
]

#: M-RoPE: Qwen2-VL's head and bases.
MROPE_HEAD = 128
MROPE_BASES: tuple[float, ...] = (10000.0, 500000.0, 1000000.0)
#: Section presets (pairs per axis t, h, w; 64 in all): Qwen2-VL's, Qwen3-VL's, and two more.
MROPE_SECTIONS: tuple[tuple[int, int, int], ...] = ((16, 24, 24), (24, 20, 20), (32, 16, 16), (44, 10, 10))
#: MPT's alibi_bias_max stops (8: the paper's slopes exactly).
ALIBI_BIAS_MAX: tuple[float, ...] = (4.0, 8.0, 16.0)
#: T5: num_buckets and max_distance stops (some too close to num_buckets/2: edge cases, and refusals).
T5_BUCKETS: tuple[int, ...] = (4, 8, 16, 18, 32, 34, 64, 128)
T5_DISTANCES: tuple[int, ...] = (3, 9, 17, 20, 27, 64, 128, 256, 1000, 4096, 100000, 2**40)
#: xPos: rotary dims, scale_base stops, sequence lengths (the centre is N // 2).
XPOS_ROTARY: tuple[int, ...] = (16, 64, 128)
XPOS_SCALE_BASES: tuple[float, ...] = (64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0)
XPOS_SEQ_LENS: tuple[int, ...] = (1, 1024, 4096, 16384, 65536, 150000)
#: NeRF: the presets and the most bands the explorer offers.
NERF_CONVENTIONS: tuple[str, ...] = ("nerf", "nerfstudio", "tcnn")
NERF_MAX_BANDS = 24


def mrope_data() -> dict[str, Any]:
    """posenc's plain ladder of head 128 for each base (M-RoPE shares one ladder over the pairs).

    >>> d = mrope_data()
    >>> d["keys"], d["sections"][1]
    (['0', '1', '2'], [24, 20, 20])
    """
    words: list[np.ndarray] = []
    for b in MROPE_BASES:
        f = rope_frequencies(MROPE_HEAD, base=b)
        words += [f.ladder.w0, f.ladder.w1, f.ladder.w2]
    return {"keys": [str(j) for j in range(len(MROPE_BASES))],
            "entries": [{"n": MROPE_HEAD // 2, "af": 1.0, "base": b} for b in MROPE_BASES],
            "ladders": _blob(words), "bases": list(MROPE_BASES), "head": MROPE_HEAD,
            "sections": [list(s) for s in MROPE_SECTIONS]}


def alibi_data() -> dict[str, Any]:
    """The ALiBi explorer's stops: the slopes themselves the page works out exactly."""
    return {"max_heads": 64, "bias_max": list(ALIBI_BIAS_MAX), "max_distance": 10**6}


def t5_data() -> dict[str, Any]:
    """The T5 explorer's stops: its buckets (float32 steps, correctly rounded logs) the page works out."""
    return {"buckets": list(T5_BUCKETS), "distances": list(T5_DISTANCES), "max_offset": 2**53 - 1,
            "exp": _exp_constants()}


def _exp_constants() -> dict[str, Any]:
    return {"C0": power.C0, "C1": power.C1, "C2": power.C2, "INV_C": power.INV_C, "EPS": power.EXP_EPS,
            "T_HI": power.T_HI.tolist(), "T_LO": power.T_LO.tolist(), "P_C": power.P_C.tolist()}


def xpos_data() -> dict[str, Any]:
    """posenc's ladders (base 10000) and ζ_i per rotary dim, ln ζ_i / scale_base (double-double, from
    :mod:`decimal`) per rotary dim and scale_base, in the order of ``keys``."""
    from ..rope.xpos import XPos, _log_rate

    words: list[np.ndarray] = []
    keys, entries = [], []
    for r in XPOS_ROTARY:  # per rotary dim: the ladder and ζ; then per scale_base: ln ζ / s
        f = rope_frequencies(r)
        words += [f.ladder.w0, f.ladder.w1, f.ladder.w2, XPos().zeta(r)]
        for si, sb in enumerate(XPOS_SCALE_BASES):
            words += list(_log_rate(0.4, sb, r))
            keys.append(f"{r}|{si}")
            entries.append({"n": r // 2, "af": 1.0, "base": 10000.0})
    return {"keys": keys, "entries": entries, "ladders": _blob(words), "rotary": list(XPOS_ROTARY),
            "scale_bases": list(XPOS_SCALE_BASES), "seq_lens": list(XPOS_SEQ_LENS), "gamma": 0.4,
            "exp": _exp_constants(), "limits": {"float64": _limit("float64"), "float32": _limit("float32")}}


def _limit(name: str) -> float:
    from ..rope.xpos import _limit as limit

    return limit(np.dtype(name))


def nerf_data() -> dict[str, Any]:
    """Each preset's bands for 1 … 24 bands (ω_k as three words, ω_k/2π where a power of two), and 2π itself.

    Where n bands are the first n of 24 (nerf, tcnn) the entry says ``prefix`` and carries no words.

    >>> d = nerf_data()
    >>> d["keys"][:2], d["orders"]
    (['nerf|1', 'nerf|2'], {'nerf': ['nerf', 'first', True], 'nerfstudio': ['blocks', 'last', False], \
'tcnn': ['interleaved', 'last', False]})
    """
    from ..fields.conventions import get
    from ..fields.numpy_backend import two_pi

    words: list[np.ndarray] = []
    keys, entries, orders = [], [], {}
    for name in NERF_CONVENTIONS:
        whole = get(name).plan(NERF_MAX_BANDS)
        for n in range(1, NERF_MAX_BANDS + 1):
            plan = get(name).plan(n)
            lad = plan.ladder
            # band k of n bands is band k of 24 (nerf, tcnn): the page takes the prefix of the 24 (checked here)
            prefix = all(np.array_equal(w[:n], v) for w, v in zip((whole.ladder.w0, whole.ladder.w1, whole.ladder.w2),
                                                                 (lad.w0, lad.w1, lad.w2), strict=True))
            if not prefix or n == NERF_MAX_BANDS:
                words += [lad.w0, lad.w1, lad.w2]
            keys.append(f"{name}|{n}")
            entries.append({"n": n, "af": 1.0, "base": 0.0, "turns": list(plan.turns or (0.0,) * n),
                            "prefix": bool(prefix and n < NERF_MAX_BANDS)})
            orders[name] = [plan.order, plan.input_at, bool(plan.include_input)]
    tp = two_pi()
    return {"keys": keys, "entries": entries, "ladders": _blob(words), "orders": orders,
            "two_pi": [float(tp.w0[0]), float(tp.w1[0]), float(tp.w2[0])], "max_bands": NERF_MAX_BANDS}
