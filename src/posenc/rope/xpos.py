"""xPos: RoPE whose pairs also decay with the offset (Sun et al. 2022, arXiv:2212.10554).

A query at position p is rotated as in RoPE and pair i is multiplied by
ζ_i^(p/scale_base); a key at p' by ζ_i^(−p'/scale_base). The score of pair i
then carries ζ_i^((p − p')/scale_base): a decay in the offset alone, strongest
for the fast pairs (ζ_i < 1 for every i), with

    ζ_i = (2i/r + γ) / (1 + γ),   i = 0 … r/2 − 1, r the rotary dimension

(γ = 0.4, ``scale_base`` = 512 in the paper, in microsoft/torchscale
``XPOS`` and in lucidrains/rotary-embedding-torch ``use_xpos=True``: both
write it ``(arange(0, r, 2) + 0.4·r) / (1.4·r)``).

**Centring.** ζ^(p/512) leaves float32's range once |p| passes ~36,000 (γ =
0.4), so both implementations measure positions from the middle of the
sequence: rotary-embedding-torch uses ``p − N//2`` (``get_scale``:
``power = (t − len(t)//2) / scale_base``, N the sequence length), torchscale
``p − ceil(N/2)`` (``min_pos = −(length + offset)//2``, N = offset + length).
The centre cancels in q·k whenever q and k share it; only the tensors differ.
posenc centres like rotary-embedding-torch, at ``N//2`` with N the
``seq_len`` passed (default max(position) + 1); torchscale's tensors are
those of ``seq_len = N + N % 2``. The rotation itself uses the positions
uncentred, as both do.

Scale factors are correctly rounded: the nearest float64 (float32, float16
for :func:`xpos_scale` with that dtype) to the true ζ_i^(u/scale_base),
from ln ζ_i to ~106 bits and posenc's own exp (:mod:`posenc.exact.power`:
no libm, so the same bits on every CPU), with an exact fallback where the
rounding is close. A factor outside the normal range of
the output dtype would make q or k overflow or lose every bit, so it is an
error, raised before any work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, cast

import numpy as np

from ..errors import (
    PosEncError,
    check_d_model,
    check_dtype,
    check_positions,
    check_real,
    check_seq_len,
    show_value,
)
from ..exact import decimal_context
from ..exact.core import split, two_prod
from ..exact.power import exp_dd, nearest_power, round_checked
from ..support.arguments import set_fields
from ..support.memory import allocate, check_size, nbytes, shape_of
from .frequencies import RopeFrequencies
from .tables import cos_sin_tables

__all__ = [
    "XPOS_ROLES",
    "XPos",
    "check_xpos",
    "check_xpos_range",
    "xpos_cos_sin",
    "xpos_decay",
    "xpos_rows",
    "xpos_scale",
]

#: ``role`` of :func:`posenc.apply_rope` with xPos: queries grow with p, keys shrink.
XPOS_ROLES = ("q", "k")


@dataclass(frozen=True)
class XPos:
    """The xPos decay of a rotary embedding.

    >>> XPos().zeta(8).round(6).tolist()          # ζ_i = (2i/8 + 0.4)/1.4
    [0.285714, 0.464286, 0.642857, 0.821429]
    """

    gamma: float = 0.4  # γ in ζ_i = (2i/r + γ)/(1 + γ): the paper's, torchscale's, rotary-embedding-torch's
    scale_base: float = 512.0  # the offset over which pair i decays by ζ_i
    center: bool = True  # measure positions from N//2 (rotary-embedding-torch), keeping ζ^(p/scale_base) in range

    def __post_init__(self) -> None:
        g = check_real(self.gamma, "gamma")
        if not g > 0:
            # γ = 0 makes ζ_0 = 0: pair 0 would be scaled by 0 or ∞
            raise PosEncError(f"gamma must be > 0 (ζ_0 = γ/(1 + γ) must be positive), got {self.gamma!r}")
        sb = check_real(self.scale_base, "scale_base")
        if not sb > 0:
            raise PosEncError(f"scale_base must be > 0, got {self.scale_base!r}")
        if not isinstance(self.center, (bool, np.bool_)):
            raise PosEncError(f"center must be True or False, got {self.center!r}")
        set_fields(self, gamma=g, scale_base=sb, center=bool(self.center))

    def zeta(self, rotary_dim: int) -> np.ndarray:
        """ζ_i for i < r/2, float64 ``[r/2]``, correctly rounded."""
        r = check_d_model(rotary_dim, "rotary_dim")
        return np.array([float(z) for z in _zeta(self.gamma, r)])

    def middle(self, length: int) -> int:
        """The position measured as 0: ``length // 2`` when centring, else 0."""
        return check_seq_len(length) // 2 if self.center else 0


def _zeta(gamma: float, r: int) -> list[Fraction]:
    g = Fraction(gamma)  # a float is a dyadic rational: exact
    return [(Fraction(2 * i, r) + g) / (1 + g) for i in range(r // 2)]


@lru_cache(maxsize=256)
def _log_rate(gamma: float, scale_base: float, r: int) -> tuple[np.ndarray, np.ndarray]:
    """ln ζ_i / scale_base as a double-double (hi, lo), each float64 ``[r/2]``."""
    hi, lo = [], []
    with decimal_context(50):
        for z in _zeta(gamma, r):
            v = (Decimal(z.numerator) / Decimal(z.denominator)).ln() / Decimal(scale_base)
            h = float(v)
            hi.append(h)
            lo.append(float(v - Decimal(h)))
    out = np.array(hi), np.array(lo)
    for a in out:
        a.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def _limit(dtype: np.dtype) -> float:
    """The largest |ln factor| whose factor is a normal number of dtype, both ways (decimal, not libm)."""
    fi = np.finfo(dtype)
    with decimal_context(40):
        return float(min(Decimal(float(fi.max)).ln(), -Decimal(float(fi.tiny)).ln()))


def _exponents(units: np.ndarray, xpos: XPos, r: int) -> tuple[np.ndarray, np.ndarray]:
    """units·ln ζ / scale_base as a double-double ``[*units.shape, r/2]`` (Dekker's exact product)."""
    lh, ll = _log_rate(xpos.gamma, xpos.scale_base, r)
    u = units[..., None]
    uh, ul = split(u)
    lhh, lhl = split(lh)
    p, e = two_prod(u, uh, ul, lh, lhh, lhl)
    return p, e + u * ll


def _check_range(units: np.ndarray, xpos: XPos, r: int, dtype: np.dtype, what: str) -> None:
    if units.size == 0:
        return
    worst = float(np.max(np.abs(units)))
    rate = float(np.max(np.abs(_log_rate(xpos.gamma, xpos.scale_base, r)[0])))
    if worst * rate > _limit(dtype):
        reach = _limit(dtype) / rate
        raise PosEncError(
            f"xPos factors ζ^(±{what}/scale_base) leave {dtype.name}'s range: |{what}| reaches {worst:g}, "
            f"at most {reach:.0f} fits (center=True, a smaller seq_len or a larger scale_base keep it smaller)"
        )


def _centred(pos: np.ndarray, xpos: XPos, seq_len: int | None) -> np.ndarray:
    if not xpos.center:
        return pos
    n = seq_len if seq_len is not None else (max(1, int(np.floor(pos.max())) + 1) if pos.size else 1)
    return pos - xpos.middle(n)


#: Factors per block of :func:`_factors`: its double-double steps hold some 30 temporaries of a block's size.
_BLOCK = 1 << 17


def _factors(units: np.ndarray, xpos: XPos, r: int, dtype: Any = np.float64) -> np.ndarray:
    """ζ^(units/scale_base) ``[..., r/2]``, correctly rounded to ``dtype`` (returned as float64).

    Beyond float64's normal range: 0 or inf. Computed in blocks of positions, so the temporaries stay a
    few MB whatever the output (once 31 times the output).
    """
    flat = units.reshape(-1)
    out = allocate((flat.shape[0], r // 2), np.float64, "xPos factors")
    step = max(1, _BLOCK // max(r // 2, 1))
    for a in range(0, flat.shape[0], step):
        out[a:a + step] = _factors_block(flat[a:a + step], xpos, r, dtype)
    return out.reshape((*units.shape, r // 2))


def _factors_block(units: np.ndarray, xpos: XPos, r: int, dtype: Any) -> np.ndarray:
    rh, rl = exp_dd(*_exponents(units, xpos, r))
    y, hard = round_checked(rh, rl, dtype)
    if hard.any():  # about one value in 2**18: decided exactly
        zeta, sb = _zeta(xpos.gamma, r), Fraction(xpos.scale_base)
        u = np.broadcast_to(units[..., None], y.shape)
        for idx in zip(*np.nonzero(hard), strict=True):
            y[idx] = nearest_power(zeta[idx[-1]], Fraction(float(u[idx])) / sb, dtype)
    return y


def check_xpos(xpos: Any, role: Any) -> XPos | None:
    """None, or the XPos with a valid role (``"q"`` or ``"k"``)."""
    if xpos is None:
        if role is not None:
            raise PosEncError(f"role is for xPos: pass xpos=XPos(...) with it, got role={show_value(role)}")
        return None
    if not isinstance(xpos, XPos):
        raise PosEncError(f"xpos must be None or a posenc.XPos, got {xpos!r}"[:200])
    if not isinstance(role, str) or role not in XPOS_ROLES:  # a str: np.array(["q"]) in XPOS_ROLES is True
        raise PosEncError(f"role must be 'q' (queries, scaled up) or 'k' (keys, scaled down) with xpos, "
                          f"got {show_value(role)}")
    return xpos


def _check_factors_size(shape: tuple[int, ...] | None, r: int, dtype: np.dtype, what: str) -> None:
    """Before any position is read: ``[..., r/2]`` factors, and the float64 exponents and products behind them."""
    if shape is not None:
        n = math.prod(shape)
        # the float64 factors and their cast, the positions (centred, signed), one block's temporaries
        work = 2 * nbytes((n, r // 2), np.float64) + 4 * n * 8 + 40 * 8 * max(_BLOCK, r // 2)
        check_size((*shape, r // 2), dtype, what, work=work)


def xpos_scale(
    positions: Any, rotary_dim: int, *, xpos: XPos | None = None, role: str = "q",
    seq_len: int | None = None, dtype: Any = np.float64,
) -> np.ndarray:
    """The xPos factors ζ_i^(±(p − c)/scale_base) of queries (+) or keys (−), ``[..., r/2]``.

    Args:
        positions: real positions, any shape ``[...]``.
        rotary_dim: r, even.
        xpos: the variant (default ``XPos()``).
        role: ``"q"`` or ``"k"``.
        seq_len: N for the centre c = N//2 (default max(positions) + 1);
            unused without ``center``.
        dtype: float16, float32 or float64.

    >>> xpos_scale([0, 512, 1024], 4, seq_len=1025).round(6).tolist()   # c = 512
    [[3.5, 1.555556], [1.0, 1.0], [0.285714, 0.642857]]
    """
    xp = cast(XPos, check_xpos(XPos() if xpos is None else xpos, role))
    r = check_d_model(rotary_dim, "rotary_dim")
    dt = check_dtype(dtype)
    _check_factors_size(shape_of(positions), r, dt, "xpos_scale output")
    pos = check_positions(positions)
    n = None if seq_len is None else check_seq_len(seq_len)
    units = _centred(pos, xp, n) * (1.0 if role == "q" else -1.0)
    _check_range(units, xp, r, dt, "positions − c" if xp.center else "positions")
    return _factors(units, xp, r, dt).astype(dt)


def xpos_decay(offsets: Any, rotary_dim: int, *, xpos: XPos | None = None) -> np.ndarray:
    """ζ_i^(Δ/scale_base): what xPos multiplies pair i of q·k by at offset Δ = p_q − p_k, ``[..., r/2]`` float64.

    >>> xpos_decay([0, 512], 128)[:, [0, -1]].round(5).tolist()   # fastest and slowest pair
    [[1.0, 1.0], [0.28571, 0.98884]]
    """
    xp = XPos() if xpos is None else cast(XPos, check_xpos(xpos, "q"))
    r = check_d_model(rotary_dim, "rotary_dim")
    _check_factors_size(shape_of(offsets), r, np.dtype(np.float64), "xpos_decay output")
    off = check_positions(offsets, "offsets")
    _check_range(off, xp, r, np.dtype(np.float64), "offsets")
    return _factors(off, xp, r)


def check_xpos_range(lo: float, hi: float, middle: float, xpos: XPos, rotary_dim: int, dtype: Any) -> None:
    """Raise unless every factor for positions ``lo … hi`` (centre ``middle``) is a normal number of ``dtype``."""
    units = np.array([lo - middle, hi - middle], dtype=np.float64)
    _check_range(units, xpos, rotary_dim, np.dtype(dtype), "positions − c" if xpos.center else "positions")


def xpos_rows(freqs: RopeFrequencies, xpos: XPos, positions: np.ndarray, middle: float, dtype: Any) -> np.ndarray:
    """Rows ``[m, 4, r/2]``: (cos·f_q, sin·f_q, cos·f_k, sin·f_k) at positions ``[m]`` for centre ``middle``.

    The tables of :func:`xpos_cos_sin` for both roles, bit for bit: the rows
    behind ``posenc.torch.RotaryEmbedding(xpos=...)``. Factors outside
    float64's range come out as 0 or inf: check positions first
    (:func:`check_xpos_range`).
    """
    pos = positions.astype(np.float64)
    cos, sin = cos_sin_tables(pos, freqs, np.dtype(np.float64))
    with np.errstate(over="ignore", under="ignore"):
        fq = _factors(pos - middle, xpos, freqs.rotary_dim)
        fk = _factors(middle - pos, xpos, freqs.rotary_dim)
    return np.stack([cos * fq, sin * fq, cos * fk, sin * fk], axis=1).astype(dtype)


def xpos_cos_sin(
    pos: np.ndarray, freqs: RopeFrequencies, xpos: XPos, role: str, seq_len: int | None, dtype: np.dtype,
    out_dtype: np.dtype,
) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin ``[..., r/2]`` times the role's factors: float64 products rounded once into ``dtype``.

    First (before any table is built) checks that the factors stay in
    ``out_dtype``'s normal range: ``out_dtype`` is what q or k will be.
    """
    r = freqs.rotary_dim
    units = _centred(pos, xpos, seq_len) * (1.0 if role == "q" else -1.0)
    _check_range(units, xpos, r, out_dtype, "positions − c" if xpos.center else "positions")
    cos, sin = cos_sin_tables(pos, freqs, np.dtype(np.float64))
    f = _factors(units, xpos, r)
    return (cos * f).astype(dtype), (sin * f).astype(dtype)
