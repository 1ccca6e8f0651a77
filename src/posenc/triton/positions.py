"""The positions the 32-bit device path holds, checked on tensors before any work: never NaN rows.

One check for every torch entry to the 32-bit algorithm (``posenc::sincos32``
in :mod:`posenc.torch`, and this package's kernels), so it sits on the floor
below both (docs/ARCHITECTURE.md); it needs torch, never Triton.
"""

from __future__ import annotations

import math

import torch

from ..errors import PosEncError, show_value
from ..exact.fixed import FLOAT_LIMIT, INT_LIMIT

__all__ = ["HOST_LIMIT", "check_range", "check_values"]

#: The host's NumPy core holds |p| < 2**53 (what ``posenc::sincos32`` computes with on a CPU tensor).
HOST_LIMIT = 2.0**53

_HOST_INT_LIMIT = 2**53

#: integer dtypes whose every value lies inside both paths' ranges: nothing to check
_NARROW = (torch.int8, torch.int16, torch.int32, torch.uint8, torch.bool)


def _values_unknown(p: torch.Tensor) -> bool:
    """Whether p's values cannot be read now (a trace, a fake or meta tensor): then the check is a device assert."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    return (torch.compiler.is_compiling() or get_proxy_mode() is not None or p.is_meta
            or torch._subclasses.fake_tensor.is_fake(p))


def check_range(p: torch.Tensor, path: str) -> None:
    """Refuse positions the path cannot hold, before any work: never NaN rows.

    The 32-bit path (``"torch"``, ``"triton"``) holds integers in
    [−2**31, 2**31) and floats with |p| < 2**31; the host's NumPy core
    |p| < 2**53. NaN and ±inf are refused on every path. Eagerly the values
    are read (on an accelerator that waits for it: one reduction) and a bad one
    is named in a :class:`~posenc.PosEncError`; under tracing (``torch.compile``,
    ``make_fx``) the same condition is a ``torch._assert_async`` node, as
    :func:`posenc.torch.positions_from_cu_seqlens` asserts, which fails the run
    (a RuntimeError, or a device-side assert on CUDA) instead of giving NaN.
    """
    if p.dtype in _NARROW or p.numel() == 0:
        return
    host = path == "host"
    if p.is_floating_point():
        limit: float = HOST_LIMIT if host else FLOAT_LIMIT
    else:  # an int: an int64 tensor against a float compares in float32 (2**53 − 1 would round to 2**53)
        limit = _HOST_INT_LIMIT if host else INT_LIMIT
    ok = (torch.abs(p) < limit) if p.is_floating_point() else (p >= -limit) & (p < limit)
    span = "|p| < 2**53 (the host's exact core)" if host else (
        "|p| < 2**31 (the 32-bit exact path)" if p.is_floating_point() else "[-2**31, 2**31) (the 32-bit exact path)")
    if _values_unknown(p):
        torch._assert_async(ok.all(), f"posenc: a position is outside {span}, or not finite")
        return
    if not bool(ok.all()):
        bad = p.detach().reshape(-1)[~ok.reshape(-1)][0].item()
        raise PosEncError(f"position {show_value(bad)} is outside {span} on {p.device}, or not finite: "
                          "positions must be finite and inside it (an int64 past int32 or a float past 2**31 "
                          "has no exact 32-bit phase; on the host int64 and float64 reach 2**53)")


def check_values(x: torch.Tensor, name: str) -> None:
    """Refuse what :func:`posenc.errors.check_positions` refuses, on a tensor on any device: NaN, ±inf, |x| >= 2**53.

    For the inputs the NumPy functions check on the host (a field's
    coordinates x), off the host: a device tensor, or one being traced. Read
    eagerly (one reduction, which an accelerator waits for), a bad value is
    named as the host names it; under tracing the same condition is a
    ``torch._assert_async`` node, as :func:`check_range`'s, which fails the
    run instead of giving NaN (or, on some paths, finite numbers of no meaning).

    >>> check_values(torch.tensor([0.5, float("inf")]), "x")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: x must be finite, got inf
    """
    if x.dtype in _NARROW or x.numel() == 0:
        return
    limit = HOST_LIMIT if x.is_floating_point() else _HOST_INT_LIMIT  # as in check_range
    ok = (x > -limit) & (x < limit)  # False at NaN; no abs, which wraps int64's lowest value
    if _values_unknown(x):
        torch._assert_async(ok.all(), f"posenc: {name} must be finite with |{name}| < 2**53")
        return
    if not bool(ok.all()):
        bad = x.detach().reshape(-1)[~ok.reshape(-1)][0].item()
        if isinstance(bad, float) and not math.isfinite(bad):
            raise PosEncError(f"{name} must be finite, got {show_value(bad)}")
        raise PosEncError(f"{name} must satisfy |p| < 2**53 (float64 holds every integer only below it), "
                          f"got {show_value(bad)}")
