"""Rotary position embeddings (RoPE): the seed's shift rotation T_k, applied to q and k.

Seed, Ex 5: moving a (sin, cos) pair from position p to p + k is a rotation
by ω_i·k. RoPE (Su et al. 2021, arXiv:2104.09864) rotates each channel pair
of a query or key by ω_i·p, so that ⟨R(p)q, R(p')k⟩ depends on p' - p only.
Frequencies ω_i = base**(-2i/r) over the rotary dimension r (possibly
rescaled, see :mod:`posenc.scaling`); the angle ω_i·p comes from
:mod:`posenc.exact`, within 1 float32 ulp for every |p| < 2**31.

Layouts: which two channels of a head form pair i.

================  ===============  =============================================
layout            pair i           used by
================  ===============  =============================================
``"half"``        (i, i + r/2)     Hugging Face (``rotate_half``), GPT-NeoX,
                                   Qwen, Phi-3, keras-hub, Liger, flash-attn
                                   default
``"interleaved"`` (2i, 2i + 1)     Meta's Llama checkpoints (complex form),
                                   GPT-J, torchtune Llama, rotary-embedding-torch,
                                   x-transformers, flash-attn ``interleaved=True``
================  ===============  =============================================

Weights move between the two with :func:`permute_qk_weights` (what HF's
``convert_llama_weights_to_hf.py`` ``permute`` does to Meta checkpoints).
Rotation, per pair (x1, x2): (x1·cos - x2·sin, x2·cos + x1·sin).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any

import numpy as np

from .errors import PosEncError, check_base, check_d_model, check_dtype, check_int, check_layout, check_positions
from .exact import Ladder, decimal_pi, fill_range, fill_sincos
from .layout import pair_permutation, sin_cos_views
from .scaling import SCALINGS, Scaled

__all__ = [
    "ROPE_LAYOUTS",
    "RopeFrequencies",
    "apply_rope",
    "permute_qk_weights",
    "qk_permutation",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_table",
]

#: RoPE channel layouts: ``"half"`` pairs (i, i + r/2), ``"interleaved"`` (2i, 2i + 1).
ROPE_LAYOUTS = ("half", "interleaved")

# posenc.layout names the half-split "split" (its sinusoid meaning: sines, then cosines).
_LAYOUT = {"half": "split", "interleaved": "interleaved"}


@dataclass(frozen=True, eq=False)
class RopeFrequencies:
    """The rotary frequencies of one (head, base, scaling, length regime).

    Attributes:
        head_dim: channels per head, h_d.
        rotary_dim: channels rotated, r (the first r of each head).
        base: the effective base (rescaled by NTK / dynamic NTK).
        inv_freq: float64 ``[r/2]``, ω_i correctly rounded.
        wavelengths: float64 ``[r/2]``, 2π/ω_i correctly rounded.
        attention_factor: what HF multiplies into cos and sin (1 for most).
        ladder: ω to ~160 bits, for :mod:`posenc.exact`.
    """

    head_dim: int
    rotary_dim: int
    base: float
    inv_freq: np.ndarray = field(repr=False)
    wavelengths: np.ndarray = field(repr=False)
    attention_factor: float
    ladder: Ladder = field(repr=False)


def _check_scaling(scaling: Any) -> None:
    if scaling is not None and not isinstance(scaling, SCALINGS):
        names = ", ".join(c.__name__ for c in SCALINGS)
        raise PosEncError(f"scaling must be None or one of {names} (posenc.scaling), got {scaling!r}"[:300])


def _check_dims(head_dim: Any, rotary_dim: Any) -> tuple[int, int]:
    h = check_d_model(head_dim, "head_dim")
    if rotary_dim is None:
        return h, h
    r = check_d_model(rotary_dim, "rotary_dim")
    if r > h:
        raise PosEncError(f"rotary_dim must be <= head_dim = {h}, got {r}")
    return h, r


_CACHE: dict[tuple[Any, ...], RopeFrequencies] = {}
_CACHE_SIZE = 256


def _build(head_dim: int, rotary_dim: int, base: float, scaling: Any, seq_len: int | None) -> RopeFrequencies:
    b = Decimal(base)
    if scaling is None:
        with localcontext() as ctx:
            ctx.prec = 70
            ln = b.ln()
            scaled = Scaled([(-(ln * (2 * i)) / rotary_dim).exp() for i in range(rotary_dim // 2)], b, 1.0)
    else:
        scaled = scaling.scale(rotary_dim, b, seq_len)
    with localcontext() as ctx:
        ctx.prec = 40
        two_pi = 2 * decimal_pi()
        lam = np.array([float(two_pi / w) for w in scaled.inv_freq])
    ladder = Ladder.from_decimals(scaled.inv_freq)
    lam.setflags(write=False)
    return RopeFrequencies(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        base=float(scaled.base),
        inv_freq=ladder.w0,
        wavelengths=lam,
        attention_factor=scaled.attention_factor,
        ladder=ladder,
    )


def rope_frequencies(
    head_dim: int,
    *,
    base: float = 10000.0,
    scaling: Any = None,
    rotary_dim: int | None = None,
    seq_len: int | None = None,
) -> RopeFrequencies:
    """The rotary frequencies ω_i (i < rotary_dim/2) and the attention factor.

    Args:
        head_dim: channels per head, a positive even integer.
        base: θ in ω_i = θ**(-2i/rotary_dim) (HF ``rope_theta``).
        scaling: None or a :mod:`posenc.scaling` variant.
        rotary_dim: channels rotated (HF: head_dim·partial_rotary_factor);
            even, <= head_dim; default head_dim.
        seq_len: the sequence length, for the variants that depend on it
            (DynamicNTK, LongRoPE); None means "within the original length".

    Returns:
        A :class:`RopeFrequencies`; equal arguments give the same object.

    Raises:
        PosEncError: for any bad argument.

    >>> f = rope_frequencies(4, base=100.0)
    >>> f.inv_freq.tolist(), f.attention_factor
    ([1.0, 0.1], 1.0)
    """
    h, r = _check_dims(head_dim, rotary_dim)
    b = check_base(base)
    _check_scaling(scaling)
    n = None if seq_len is None else check_int(seq_len, "seq_len", minimum=1)
    # Keyed on what of seq_len matters (the effective length or base), so one
    # entry never serves two rotations and equal rotations share one entry.
    key = (h, r, b, scaling, None if scaling is None else scaling.cache_key(n))
    freqs = _CACHE.get(key)
    if freqs is None:
        freqs = _build(h, r, b, scaling, n)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = freqs
    return freqs


def _default_seq_len(scaling: Any, pos: np.ndarray) -> int | None:
    """HF's choice, max(position) + 1, for the variants that depend on it."""
    if scaling is None or scaling.cache_key(None) is None or pos.size == 0:
        return None
    return max(1, int(np.floor(pos.max())) + 1)


def _tables(pos: np.ndarray, freqs: RopeFrequencies, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin ``[*pos.shape, r/2]`` times the attention factor, rounded once into dtype.

    Each value depends on its position alone: a position gives the same bits
    whatever else is asked (which the torch caches, grown piece by piece,
    rely on). A run of consecutive integers takes the fast table path
    (:func:`posenc.exact.fill_range`, equal to the per-position
    :func:`posenc.exact.fill_sincos` bit for bit).
    """
    n = freqs.rotary_dim // 2
    flat = pos.reshape(-1)
    af = freqs.attention_factor
    # one rounding from the float64 value: write straight into dtype unless af must multiply first
    work = dtype if af == 1.0 else np.dtype(np.float64)
    cos = np.empty((flat.shape[0], n), dtype=work)
    sin = np.empty((flat.shape[0], n), dtype=work)
    first = flat[0] if flat.shape[0] > 1 else 0.5
    if first == np.floor(first) and flat[-1] - first == flat.shape[0] - 1 and np.all(np.diff(flat) == 1.0):
        fill_range(int(first), flat.shape[0], freqs.ladder, sin, cos)
    else:
        fill_sincos(flat, freqs.ladder, sin, cos)
    if af != 1.0:
        cos = (cos * af).astype(dtype, copy=False)
        sin = (sin * af).astype(dtype, copy=False)
    shape = (*pos.shape, n)
    return cos.reshape(shape), sin.reshape(shape)


def rope_table(freqs: RopeFrequencies, start: int, length: int, dtype: Any = np.float32) -> np.ndarray:
    """Rows of cos and sin for positions ``start … start+length-1``: ``[length, 2, r/2]``.

    Row ``j`` holds ``(cos, sin)`` of ω·(start + j), times the attention
    factor: the values of :func:`rope_cos_sin`, bit for bit, whatever
    ``start`` is (the builder behind the torch caches, which grow in pieces),
    built by the fast consecutive path.

    >>> rope_table(rope_frequencies(4, base=100.0), 0, 2, np.float64).round(4).tolist()
    [[[1.0, 1.0], [0.0, 0.0]], [[0.5403, 0.995], [0.8415, 0.0998]]]
    """
    if not isinstance(freqs, RopeFrequencies):
        raise PosEncError(f"freqs must be a RopeFrequencies (rope_frequencies(...)), got {type(freqs).__name__}")
    first = check_int(start, "start")
    n = check_int(length, "length", minimum=0)
    check_positions([first, first + max(n - 1, 0)])
    dt = check_dtype(dtype)
    if freqs.attention_factor == 1.0:
        out = np.empty((n, 2, freqs.rotary_dim // 2), dtype=dt)
        fill_range(first, n, freqs.ladder, out[:, 1], out[:, 0])  # straight into the rows, one rounding
        return out
    cos, sin = _tables(np.arange(first, first + n, dtype=np.float64), freqs, dt)
    return np.stack([cos, sin], axis=1)


def rope_cos_sin(
    positions: Any,
    head_dim: int,
    *,
    base: float = 10000.0,
    scaling: Any = None,
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    dtype: Any = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cos(ω_i p) and sin(ω_i p) tables, times the attention factor.

    Each value is the true one (to ~2**-100) times the scaling's attention
    factor, rounded once to ``dtype``: within 1 ulp for every |p| < 2**31
    (when the factor is 1, the correctly rounded cos/sin up to that ulp).
    HF multiplies its cos and sin by the same factor.

    Args:
        positions: integers or floats, any shape ``[...]`` (|p| < 2**53).
        head_dim, base, scaling, rotary_dim: as :func:`rope_frequencies`.
        seq_len: for DynamicNTK/LongRoPE; default max(positions) + 1, as HF.
        dtype: float16, float32 or float64.

    Returns:
        (cos, sin), each ``[..., rotary_dim/2]`` in ``dtype``.

    >>> c, s = rope_cos_sin([0, 1000], 4, base=10000.0, dtype=np.float64)
    >>> c.round(5).tolist()
    [[1.0, 1.0], [0.56238, -0.83907]]
    >>> s.round(5).tolist()
    [[0.0, 0.0], [0.82688, -0.54402]]
    """
    _check_dims(head_dim, rotary_dim)
    dt = check_dtype(dtype)
    pos = check_positions(positions)
    _check_scaling(scaling)
    if seq_len is None:
        seq_len = _default_seq_len(scaling, pos)
    freqs = rope_frequencies(head_dim, base=base, scaling=scaling, rotary_dim=rotary_dim, seq_len=seq_len)
    return _tables(pos, freqs, dt)


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str, rotary_dim: int) -> np.ndarray:
    """Rotate the first rotary_dim channels of x by (cos, sin); ``[..., n]`` tables broadcast."""
    ct = cos.dtype
    n = rotary_dim // 2
    x1, x2 = sin_cos_views(x, n, _LAYOUT[layout])
    a = x1.astype(ct, copy=False)
    b = x2.astype(ct, copy=False)
    out = np.empty(np.broadcast_shapes(x.shape, (*cos.shape[:-1], x.shape[-1])), dtype=x.dtype)
    o1, o2 = sin_cos_views(out, n, _LAYOUT[layout])
    o1[...] = a * cos - b * sin
    o2[...] = b * cos + a * sin
    out[..., rotary_dim:] = x[..., rotary_dim:]
    return out


def apply_rope(
    x: Any,
    positions: Any,
    *,
    base: float = 10000.0,
    scaling: Any = None,
    layout: str = "half",
    rotary_dim: int | None = None,
    seq_len: int | None = None,
) -> np.ndarray:
    """Rotate queries or keys by their positions.

    Shapes: b batch, n_h heads, s sequence, h_d head_dim.

    Args:
        x: float16/32/64 ``[..., s, h_d]``, e.g. ``[b, n_h, s, h_d]``.
        positions: ``[s]``, or any shape that broadcasts to ``x.shape[:-1]``
            (``[b, 1, s]`` for per-row positions of ``[b, n_h, s, h_d]``).
        base, scaling, rotary_dim, seq_len: as :func:`rope_cos_sin`.
        layout: ``"half"`` (HF, GPT-NeoX) or ``"interleaved"`` (Meta, GPT-J).

    Returns:
        Same shape and dtype as x. The math is float64 for float64 input and
        float32 otherwise, on exact tables; channels past ``rotary_dim`` are
        copied bit for bit.

    Raises:
        PosEncError: for any bad argument, before any work.

    >>> q = np.array([[1.0, 0.0, 0.0, 0.0]])        # [s=1, h_d=4]
    >>> apply_rope(q, [2], base=100.0, layout="interleaved").round(4).tolist()
    [[-0.4161, 0.9093, 0.0, 0.0]]
    """
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        raise PosEncError(f"x must be a float16/32/64 array, got dtype {arr.dtype}")
    check_dtype(arr.dtype)
    if arr.ndim < 2:
        raise PosEncError(f"x must be [..., s, h_d] (at least 2 dimensions), got shape {arr.shape}")
    h, r = _check_dims(arr.shape[-1], rotary_dim)
    lay = check_layout(layout, ROPE_LAYOUTS)
    pos = check_positions(positions)
    try:
        shape = np.broadcast_shapes(pos.shape, arr.shape[:-1])
    except ValueError:
        shape = None
    if shape != arr.shape[:-1]:
        raise PosEncError(
            f"positions of shape {pos.shape} must broadcast to x.shape[:-1] = {arr.shape[:-1]} "
            f"(x is [..., s, h_d]; use [s] or e.g. [b, 1, s] for [b, n_h, s, h_d])"
        )
    _check_scaling(scaling)
    if seq_len is None:
        seq_len = _default_seq_len(scaling, pos)
    freqs = rope_frequencies(h, base=base, scaling=scaling, rotary_dim=r, seq_len=seq_len)
    ct = np.dtype(np.float64) if arr.dtype == np.float64 else np.dtype(np.float32)
    cos, sin = _tables(pos, freqs, ct)
    return _rotate(arr, cos, sin, lay, r)


def qk_permutation(
    head_dim: int, n_heads: int, from_layout: str, to_layout: str, *, rotary_dim: int | None = None
) -> np.ndarray:
    """Row indices ``idx`` with ``w_to = w_from[idx]`` for q/k projections ``[n_heads·h_d, ...]``.

    Within each head the first ``rotary_dim`` rows are reordered so that
    pair i of ``from_layout`` becomes pair i of ``to_layout``; the rest stay.

    >>> qk_permutation(4, 2, "interleaved", "half").tolist()
    [0, 2, 1, 3, 4, 6, 5, 7]
    """
    h, r = _check_dims(head_dim, rotary_dim)
    nh = check_int(n_heads, "n_heads", minimum=1)
    src = _LAYOUT[check_layout(from_layout, ROPE_LAYOUTS)]
    dst = _LAYOUT[check_layout(to_layout, ROPE_LAYOUTS)]
    within = np.concatenate([pair_permutation(r, src, dst), np.arange(r, h)])
    return (np.arange(nh)[:, None] * h + within[None, :]).reshape(-1)


def permute_qk_weights(
    w: Any, n_heads: int, from_layout: str, to_layout: str, *, rotary_dim: int | None = None
) -> Any:
    """Convert a q or k projection (weight or bias) between RoPE layouts.

    ``"interleaved"`` → ``"half"`` is what HF's
    ``models/llama/convert_llama_weights_to_hf.py`` ``permute`` does to Meta
    checkpoints (``view(n_heads, h_d/2, 2, d_in).transpose(1, 2)``); the
    reverse undoes it. A model whose q and k projections are both permuted,
    run with the other layout, gives the same attention scores. Apply it to
    q and k only (v and o are not rotated); for grouped-query attention pass
    the number of key/value heads for k.

    Args:
        w: weight ``[n_heads·h_d, d_in]`` or bias ``[n_heads·h_d]``: a NumPy
            array or anything indexable by an integer array along axis 0
            (a torch tensor works).
        n_heads: heads in this projection.
        from_layout, to_layout: ``"half"`` or ``"interleaved"``.
        rotary_dim: rotated channels per head (default all).

    Returns:
        The permuted copy, same type, shape and dtype.

    >>> permute_qk_weights(np.arange(4), 1, "interleaved", "half").tolist()
    [0, 2, 1, 3]
    """
    shape = tuple(getattr(w, "shape", ()))
    if len(shape) not in (1, 2):
        raise PosEncError(f"w must be a weight [n_heads*h_d, d_in] or a bias [n_heads*h_d], got shape {shape}")
    nh = check_int(n_heads, "n_heads", minimum=1)
    if shape[0] % nh:
        raise PosEncError(f"w has {shape[0]} rows, not a multiple of n_heads = {nh}")
    idx = qk_permutation(shape[0] // nh, nh, from_layout, to_layout, rotary_dim=rotary_dim)
    return w[idx]
