"""The 32-bit path as one graph node, ``posenc::sincos32``: what each device computes for it.

Traced (``torch.compile``, ``make_fx``), :func:`sincos32` is one custom
operator with float32 (or float16, bfloat16) outputs: a graph holds no
float64, and Inductor compiles a module in seconds (the 32-bit algorithm
inlined is ~2,000 operations, minutes of Inductor's scheduling). Run, it
computes on the positions' device (:func:`device_path`).
"""

from __future__ import annotations

import numpy as np
import torch

from ..exact.angles import fill_sincos
from ..exact.ladder import Ladder
from ..triton.positions import HOST_LIMIT, check_range
from ._fixed import NARROW_FLOATS, FixedWords, fixed_sincos, round_once

__all__ = ["device_path", "register_ladder", "sincos32"]


_LADDERS: list[Ladder] = []
_KEYS: dict[int, int] = {}


def register_ladder(ladder: Ladder) -> int:
    """A key for ``ladder`` that :func:`sincos32` can carry through a graph (an int, not an object)."""
    key = _KEYS.get(id(ladder))
    if key is None or _LADDERS[key] is not ladder:
        _LADDERS.append(ladder)
        key = _KEYS[id(ladder)] = len(_LADDERS) - 1
    return key


def _host_rows(p: torch.Tensor, key: int, factor: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The NumPy core's rows of a CPU ``p`` (numba when installed), each float64 value rounded once to ``dtype``
    (:func:`~posenc.torch._fixed.round_once`: torch's own cast to float16 or bfloat16 would round twice).

    What the CPU computes eagerly too.
    """
    flat = p.detach().reshape(-1)
    v = flat.to(torch.int64).numpy().astype(np.float64) if not flat.is_floating_point() else \
        flat.to(torch.float32).numpy().astype(np.float64)
    bad = ~(np.abs(v) < HOST_LIMIT)
    v = np.where(bad, 0.0, v)
    ladder = _LADDERS[key]
    n = len(ladder)
    s64 = np.empty((v.shape[0], n), dtype=np.float64)
    c64 = np.empty_like(s64)
    fill_sincos(v, ladder, s64, c64)
    if factor != 1.0:  # the float64 product, rounded once (as posenc.rope_cos_sin)
        s64 *= factor
        c64 *= factor
    s64[bad] = np.nan
    c64[bad] = np.nan
    shape = (*p.shape, n)
    s, c = round_once(torch.from_numpy(s64), dtype), round_once(torch.from_numpy(c64), dtype)
    return s.reshape(shape), c.reshape(shape)


def device_path(device: torch.device, host: bool) -> str:
    """Which computation :func:`sincos32` runs on ``device``: ``"host"`` (the NumPy core, CPU), ``"triton"``
    (:mod:`posenc.triton`'s kernel: CUDA with Triton installed) or ``"torch"`` (the integer operations).

    >>> device_path(torch.device("cpu"), True), device_path(torch.device("cpu"), False)
    ('host', 'torch')
    """
    if device.type == "cpu":
        return "host" if host else "torch"
    from ..triton import use_triton

    return "triton" if use_triton(device) else "torch"


@torch.library.custom_op("posenc::sincos32", mutates_args=())
def _sincos32_op(p: torch.Tensor, frac: torch.Tensor, unwrap: torch.Tensor, whole: torch.Tensor, key: int,
                 host: bool, factor: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    path = device_path(p.device, host)
    if path == "host":
        return _host_rows(p, key, factor, dtype)
    odd = dtype in NARROW_FLOATS  # float32 rounded to odd: its cast rounds the 64-bit value once
    if path == "triton":
        from ..triton import rows_unchecked

        s, c = rows_unchecked(p, _LADDERS[key], factor, odd)  # checked by sincos32, before the node
    else:
        s, c = fixed_sincos(p, FixedWords(frac, unwrap, whole), factor, odd=odd)
    return s.to(dtype), c.to(dtype)


@_sincos32_op.register_fake
def _(p: torch.Tensor, frac: torch.Tensor, unwrap: torch.Tensor, whole: torch.Tensor, key: int,
      host: bool, factor: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (*p.shape, whole.shape[0])
    return p.new_empty(shape, dtype=dtype), p.new_empty(shape, dtype=dtype)


def sincos32(p: torch.Tensor, words: FixedWords, key: int, factor: float = 1.0,
             dtype: torch.dtype = torch.float32, host: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """sin/cos of ``p[..., None]·ω`` in ``dtype`` ``[..., n]``, one opaque graph node (``posenc::sincos32``).

    ``dtype`` float32, float16 or bfloat16, each value rounded once into it:
    on the host from the core's float64, on a device from the 32-bit path's
    64-bit fixed-point value (through a float32 rounded to odd). Both are the
    exact value rounded once but within ~2**-53 of a midpoint, so they agree
    over the golden batteries, and with the NumPy functions
    (:func:`posenc.nerf_encoding` in float16). Before, the float32 value was
    cast (and torch's float64 cast goes through float32 too): rounded twice,
    one unit off on ~2**-13 of float16 and ~2**-16 of bfloat16 values.

    Traced (``torch.compile``, ``make_fx``) it is one custom operator with
    float32 outputs, so a graph holds no float64 and Inductor compiles in
    seconds (the 32-bit algorithm inlined is ~2,000 operations, minutes of
    Inductor's scheduling). Run, it computes on p's device:

    - CPU: the NumPy core (numba when installed), the bits the CPU gives
      eagerly, which are the 32-bit path's over the golden batteries
      (``host=False``: the integer operations, as on a device);
    - CUDA with Triton installed: :func:`posenc.triton.sincos_rows`, the
      same algorithm generated into one Triton kernel (:func:`device_path`);
    - any other device: :func:`fixed_sincos`, 32-bit integer operations only
      (no float64: MPS has none, GPUs run it at 1/32 to 1/64 rate).

    Positions outside the range of the path p's device takes are refused
    first (:func:`check_range`): a :class:`~posenc.PosEncError` naming the
    value, or under tracing a device assert; never NaN rows.
    """
    check_range(p, device_path(p.device, host))
    return _sincos32_op(p.detach(), words.frac_words, words.unwrap_words, words.int_words, key, bool(host),
                        float(factor), dtype)
