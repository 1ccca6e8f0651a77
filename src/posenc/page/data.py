"""What the page's explorer carries: posenc's ladders and constants for every setting its controls offer.

The explorer computes sin/cos in the page with a twin of posenc's exact path
(``exact.js``, the same IEEE operations in the same order, so the same
bits). What that twin cannot compute itself comes from here, made by
posenc: the arithmetic constants of :mod:`posenc.exact.core`, the ladder
ω_i = w0 + w1 + w2 (:func:`~posenc.exact.seed_ladder`) and the
wavelengths of every (d_model, base) the sliders reach, and the smallest
base for every (context, d_model). The ladders travel as one little-endian
float64 blob (base64): 13 bases × 8 widths × 4 words per pair is about
280 kB of text, a tenth of a JSON list of the same numbers.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exact import core, seed_ladder
from ..sinusoidal.frequencies import min_base, wavelengths

__all__ = ["BASES", "CONTEXTS", "D_MODELS", "MAX_DELTA", "MAX_POSITION", "MAX_SHIFT", "Start", "explorer_data"]

#: The widths the d_model slider stops at (the seed's 4 and 512 among them).
D_MODELS: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512)
#: The bases the base slider stops at: 1-2-5 steps from 100 to 10^6 (10000, the paper's; 500000, Llama 3's).
BASES: tuple[float, ...] = tuple(float(m * 10**e) for e in range(2, 7) for m in (1, 2, 5) if m * 10**e <= 10**6)
#: The context lengths the context slider stops at: 2^7 … 2^20 (the seed's 8192 among them).
CONTEXTS: tuple[int, ...] = tuple(2**e for e in range(7, 21))
#: The position field accepts 0 … MAX_POSITION (the slider covers 0 … 10^4).
MAX_POSITION = 10**9
#: The shift k runs over -MAX_SHIFT … MAX_SHIFT.
MAX_SHIFT = 50
#: The kernel is drawn over the offsets -MAX_DELTA … MAX_DELTA.
MAX_DELTA = 100


@dataclass(frozen=True)
class Start:
    """The explorer's settings when the page opens: the seed's Ex 5/6 model at position 1000."""

    position: int = 1000
    d_model: int = 4
    base: float = 10000.0
    shift: int = 5
    pair: int = 1
    context: int = 8192


def _blob(arrays: list[np.ndarray]) -> str:
    flat = np.concatenate([np.asarray(a, dtype="<f8").reshape(-1) for a in arrays])
    return base64.b64encode(flat.tobytes()).decode("ascii")


# Every page of the site carries the explorer's data (the tour and `posenc page` build nine): the ladders and the
# smallest bases are functions of the module's constants alone, made once a process (0.42 s each time before)
@functools.cache
def _ladders() -> str:
    words: list[np.ndarray] = []
    for b in BASES:
        for d in D_MODELS:
            lad = seed_ladder(d, b)
            words += [lad.w0, lad.w1, lad.w2, wavelengths(d, b)]
    return _blob(words)


@functools.cache
def _min_bases() -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(min_base(c, d) for d in D_MODELS) for c in CONTEXTS)


def _constants() -> dict[str, Any]:
    """exact/core.py's constants, as JSON numbers (shortest round-trip text: JavaScript reads the same doubles)."""
    return {
        "SPLITTER": core.SPLITTER,
        "TWO_OVER_PI": core.TWO_OVER_PI,
        "HALF_PI": [float(v) for v in core.HALF_PI],
        "SIN_C": [float(v) for v in core.SIN_C],
        "COS_C": [float(v) for v in core.COS_C],
    }


def explorer_data(start: Start | None = None) -> dict[str, Any]:
    """Everything the explorer's script reads, as JSON-ready values.

    ``ladders`` is base64 of float64 words, base by base, then width by
    width: for each (base, d_model) with n = d_model/2 pairs, ``w0[n]``,
    ``w1[n]``, ``w2[n]`` (the ladder) and ``wavelength[n]``.

    >>> d = explorer_data()
    >>> d["d_models"][0], d["bases"][6], d["contexts"][6], len(d["min_base"]), len(d["min_base"][0])
    (4, 10000.0, 8192, 14, 8)
    """
    s = start or Start()
    return {
        "constants": _constants(),
        "d_models": list(D_MODELS),
        "bases": list(BASES),
        "contexts": list(CONTEXTS),
        "ladders": _ladders(),
        "min_base": [list(row) for row in _min_bases()],
        "max_position": MAX_POSITION,
        "max_shift": MAX_SHIFT,
        "max_delta": MAX_DELTA,
        "start": {
            "position": s.position, "d_model": D_MODELS.index(s.d_model), "base": BASES.index(s.base),
            "shift": s.shift, "pair": s.pair, "context": CONTEXTS.index(s.context),
        },
    }
