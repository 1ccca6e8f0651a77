"""What the RoPE and scalings explorers carry: posenc's rotary ladders for every setting their controls reach.

The page computes cos and sin with ``exact.js`` (the twin of posenc's exact
path); what it cannot compute itself comes from here, made by posenc: each
ladder ω_i = w0 + w1 + w2 after the scaling (:func:`posenc.rope_frequencies`),
the attention factor and the effective base. Ladders travel as one
little-endian float64 blob (base64), in the order of ``keys``.

RoPE explorer: rotary dims 2 … 128 × the bases below (partial rotary is a
ladder over r, so r is the key). Scalings explorer: head_dim 64, three
bases, five factors, and each variant's own knob (the sequence length for
dynamic NTK and LongRoPE's switch, β_fast for YaRN).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..rope import NTK, DynamicNTK, Linear, Llama3, LongRoPE, YaRN, rope_frequencies
from ..rope.scaling import Proportional

__all__ = [
    "BETAS",
    "FACTORS",
    "HEAD_DIMS",
    "KINDS",
    "ORIGINAL_MAX",
    "ROPE_BASES",
    "ROTARY_FRACTIONS",
    "SCALING_BASES",
    "SCALING_HEAD",
    "SEQ_LENS",
    "TIME_DIMS",
    "TIME_SHIFTS",
    "RopeStart",
    "longrope_factors",
    "rope_data",
    "scaling_data",
    "scaling_of",
    "timestep_data",
]

#: head_dim stops of the RoPE explorer.
HEAD_DIMS: tuple[int, ...] = (8, 16, 32, 64, 128)
#: Bases of the RoPE explorer (10000: the paper's; 500000: Llama 3's; 10^6: Qwen's).
ROPE_BASES: tuple[float, ...] = (100.0, 1000.0, 10000.0, 100000.0, 500000.0, 1000000.0)
#: rotary_dim / head_dim stops (partial rotary).
ROTARY_FRACTIONS: tuple[float, ...] = (1.0, 0.5, 0.25)
#: The scalings explorer's head.
SCALING_HEAD = 64
#: Its bases.
SCALING_BASES: tuple[float, ...] = (10000.0, 500000.0, 1000000.0)
#: Its factors.
FACTORS: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0, 32.0)
#: The trained length of every variant that has one.
ORIGINAL_MAX = 4096
#: Sequence lengths for dynamic NTK and LongRoPE.
SEQ_LENS: tuple[int, ...] = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
#: YaRN's β_fast stops (β_slow stays 1).
BETAS: tuple[float, ...] = (16.0, 32.0, 64.0)
#: The variants, in the order of the explorer's menu: (key, label, knob).
KINDS: tuple[tuple[str, str, str], ...] = (
    ("none", "none (plain RoPE)", ""),
    ("linear", "linear (position interpolation)", ""),
    ("ntk", "NTK-aware", ""),
    ("dynamic", "dynamic NTK", "seq"),
    ("yarn", "YaRN", "beta"),
    ("llama3", "Llama 3.1 smoothing", ""),
    ("longrope", "LongRoPE", "seq"),
    ("proportional", "proportional (Gemma 4, 16 of 64 channels)", ""),
)
#: The RoPE explorer's position field goes to 10^6 (the precision view's range); the slider to 10^4.
MAX_POSITION = 10**6
#: Offsets Δ of the score panel.
MAX_OFFSET = 64


@dataclass(frozen=True)
class RopeStart:
    """The explorers' settings when the page opens."""

    position: int = 1000
    head_dim: int = 64
    base: float = 10000.0
    offset: int = 7
    pair: int = 4
    kind: str = "yarn"
    factor: float = 8.0
    scaling_base: float = 500000.0
    seq_len: int = 16384
    beta: float = 32.0


def longrope_factors(factor: float, n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Illustrative per-pair lists: short 1 … 1.25, long 1 … factor, both rising with i (a ramp, as Phi-3's do).

    >>> s, l = longrope_factors(8.0, 4)
    >>> s[0], l[-1]
    (1.0, 8.0)
    """
    short = tuple(1.0 + 0.25 * i / (n - 1) for i in range(n))
    long = tuple(1.0 + (factor - 1.0) * i / (n - 1) for i in range(n))
    return short, long


def scaling_of(kind: str, factor: float, beta: float = 32.0) -> Any:
    """The posenc scaling object the explorer's menu entry stands for (None for plain RoPE)."""
    n = SCALING_HEAD // 2
    if kind == "none":
        return None
    if kind == "linear":
        return Linear(factor)
    if kind == "ntk":
        return NTK(factor)
    if kind == "dynamic":
        return DynamicNTK(factor, ORIGINAL_MAX)
    if kind == "yarn":
        return YaRN(factor, ORIGINAL_MAX, beta_fast=beta)
    if kind == "llama3":
        return Llama3(factor, 1.0, 4.0, ORIGINAL_MAX)
    if kind == "longrope":
        short, long = longrope_factors(factor, n)
        return LongRoPE(short, long, ORIGINAL_MAX, factor=factor)
    if kind == "proportional":
        return Proportional(SCALING_HEAD, factor)
    raise ValueError(kind)


def rotary_dim_of(kind: str) -> int:
    """Channels rotated by the scalings explorer's head for this variant."""
    return SCALING_HEAD // 4 if kind == "proportional" else SCALING_HEAD


def _blob(arrays: list[np.ndarray]) -> str:
    flat = np.concatenate([np.asarray(a, dtype="<f8").reshape(-1) for a in arrays]) if arrays else np.zeros(0)
    return base64.b64encode(flat.tobytes()).decode("ascii")


def _entry(f: Any, words: list[np.ndarray]) -> dict[str, Any]:
    words += [f.ladder.w0, f.ladder.w1, f.ladder.w2]
    return {"n": int(f.rotary_dim // 2), "af": float(f.attention_factor), "base": float(f.base)}


def rope_data(start: RopeStart | None = None) -> dict[str, Any]:
    """The RoPE explorer's data: one plain ladder per (rotary_dim, base).

    >>> d = rope_data()
    >>> len(d["keys"]), d["keys"][0], d["head_dims"][-1]
    (42, '2|0', 128)
    """
    s = start or RopeStart()
    words: list[np.ndarray] = []
    keys, entries = [], []
    for r in sorted({int(h * fr) for h in HEAD_DIMS for fr in ROTARY_FRACTIONS}):
        for bi, b in enumerate(ROPE_BASES):
            keys.append(f"{r}|{bi}")
            entries.append(_entry(rope_frequencies(r, base=b), words))
    return {
        "keys": keys, "entries": entries, "ladders": _blob(words),
        "head_dims": list(HEAD_DIMS), "bases": list(ROPE_BASES), "fractions": list(ROTARY_FRACTIONS),
        "max_position": MAX_POSITION, "max_offset": MAX_OFFSET,
        "start": {"position": s.position, "head_dim": HEAD_DIMS.index(s.head_dim), "base": ROPE_BASES.index(s.base),
                  "offset": s.offset, "pair": s.pair},
    }


#: The timesteps explorer's widths (diffusers' dim) and downscale_freq_shift stops.
TIME_DIMS: tuple[int, ...] = (32, 64, 128, 256)
TIME_SHIFTS: tuple[int, ...] = (1, 0)


def timestep_data() -> dict[str, Any]:
    """The timesteps explorer's data: diffusers' ladder for every (dim, downscale_freq_shift), from posenc.

    >>> d = timestep_data()
    >>> d["keys"][:2], d["dims"]
    (['32|1', '32|0'], [32, 64, 128, 256])
    """
    from ..timesteps import Diffusers

    words: list[np.ndarray] = []
    keys, entries = [], []
    for dim in TIME_DIMS:
        for shift in TIME_SHIFTS:
            lad = Diffusers(downscale_freq_shift=shift).plan(dim).ladder
            words += [lad.w0, lad.w1, lad.w2]
            keys.append(f"{dim}|{shift}")
            entries.append({"n": dim // 2, "af": 1.0, "base": 10000.0})
    return {"keys": keys, "entries": entries, "ladders": _blob(words), "dims": list(TIME_DIMS),
            "shifts": list(TIME_SHIFTS), "max_position": MAX_POSITION}


def scaling_key(kind: str, bi: int, fi: int, knob: int) -> str:
    """The key of one ladder in :func:`scaling_data`: variant, base, factor and knob stop."""
    return f"{kind}|{bi}|{fi}|{knob}"


def scaling_data(start: RopeStart | None = None) -> dict[str, Any]:
    """The scalings explorer's data: every (variant, base, factor, knob) ladder, from posenc.

    >>> d = scaling_data()
    >>> len(d["keys"]), d["kinds"][4][0]
    (330, 'yarn')
    """
    s = start or RopeStart()
    words: list[np.ndarray] = []
    keys, entries = [], []
    for bi, b in enumerate(SCALING_BASES):
        for key, _, knob in KINDS:
            for fi, fac in enumerate(FACTORS):
                stops = {"seq": len(SEQ_LENS), "beta": len(BETAS)}.get(knob, 1)
                for k in range(stops):
                    sc = scaling_of(key, fac, BETAS[k] if knob == "beta" else 32.0)
                    seq = SEQ_LENS[k] if knob == "seq" else None
                    f = rope_frequencies(SCALING_HEAD, base=b, scaling=sc, rotary_dim=rotary_dim_of(key), seq_len=seq)
                    keys.append(scaling_key(key, bi, fi, k))
                    entries.append(_entry(f, words))
    return {
        "keys": keys, "entries": entries, "ladders": _blob(words),
        "kinds": [list(k) for k in KINDS], "bases": list(SCALING_BASES), "factors": list(FACTORS),
        "seq_lens": list(SEQ_LENS), "betas": list(BETAS), "original_max": ORIGINAL_MAX,
        "head_dim": SCALING_HEAD, "max_position": MAX_POSITION,
        "start": {"position": s.position, "kind": [k for k, _, _ in KINDS].index(s.kind),
                  "base": SCALING_BASES.index(s.scaling_base), "factor": FACTORS.index(s.factor),
                  "seq": SEQ_LENS.index(s.seq_len), "beta": BETAS.index(s.beta), "pair": s.pair},
    }
