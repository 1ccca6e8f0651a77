"""The one exception class and the boundary checks every entry point shares.

Every public function validates its arguments here, once, before any work is
done, and raises :class:`PosEncError` with a message that names the bad value
and says what was expected.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .layout import LAYOUTS

__all__ = [
    "MAX_POSITION",
    "PosEncError",
    "check_base",
    "check_context",
    "check_d_model",
    "check_dtype",
    "check_int",
    "check_layout",
    "check_length",
    "check_positions",
    "check_real",
]

#: Positions must satisfy ``|p| < MAX_POSITION`` (2**53): beyond it a float64
#: cannot hold every integer, so "position p" would silently mean another one.
MAX_POSITION = 2.0**53

_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


class PosEncError(ValueError):
    """Bad input to posenc: the message names the value and what was expected."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an ``int``; reject bools, floats and anything else."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise PosEncError(f"{name} must be an integer, got {_show(value)}")
    result = int(value)
    if minimum is not None and result < minimum:
        raise PosEncError(f"{name} must be >= {minimum}, got {result}")
    return result


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a finite ``float``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise PosEncError(f"{name} must be a real number, got {_show(value)}")
    result = float(value)
    if not math.isfinite(result):
        raise PosEncError(f"{name} must be finite, got {result}")
    return result


def check_d_model(d_model: Any, name: str = "d_model") -> int:
    """A positive even integer: the formula fills channels in (sin, cos) pairs."""
    if isinstance(d_model, (bool, np.bool_)) or not isinstance(d_model, numbers.Integral):
        raise PosEncError(
            f"{name} must be a positive even integer, got {_show(d_model)}"
        )
    d = int(d_model)
    if d <= 0 or d % 2:
        raise PosEncError(
            f"{name} must be a positive even integer (channels come in (sin, cos) "
            f"pairs, one pair per frequency), got {d}"
        )
    return d


def check_base(base: Any, name: str = "base") -> float:
    """A finite real number > 1, so that the frequencies decrease with i."""
    b = check_real(base, name)
    if not b > 1.0:
        raise PosEncError(f"{name} must be a finite number > 1, got {b}")
    return b


def check_positions(positions: Any, name: str = "positions") -> np.ndarray:
    """Return positions as a float64 array, every value exact.

    Accepts integers, floats and arrays of them. Rejects booleans, complex
    numbers, NaN and infinities, and any ``|p| >= 2**53``: above that a
    float64 no longer holds every integer, so the position itself would be
    rounded before any encoding is computed.
    """
    try:
        arr = np.asarray(positions)
    except (OverflowError, ValueError, TypeError) as exc:
        raise PosEncError(f"{name} must be real numbers, got {_show(positions)}") from exc
    kind = arr.dtype.kind
    if kind == "O":
        try:
            arr = np.asarray(positions, dtype=np.float64)
        except (OverflowError, ValueError, TypeError) as exc:
            raise PosEncError(
                f"{name} must be real numbers with |p| < 2**53, got {_show(positions)}"
            ) from exc
        kind = "f"
    if kind in "iu":
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            worst = hi if abs(hi) >= abs(lo) else lo
            if abs(worst) >= 2**53:
                raise PosEncError(
                    f"{name} must satisfy |p| < 2**53 (float64 holds every integer "
                    f"only below it), got {worst}"
                )
        return arr.astype(np.float64)
    if kind != "f":
        raise PosEncError(
            f"{name} must be real numbers (int or float), got {_show(positions)} "
            f"of dtype {arr.dtype}"
        )
    arr = arr.astype(np.float64, copy=False)
    if arr.size:
        finite = np.isfinite(arr)
        if not finite.all():
            bad = arr[~finite].flat[0]
            raise PosEncError(f"{name} must be finite, got {bad}")
        big = np.abs(arr) >= MAX_POSITION
        if big.any():
            raise PosEncError(
                f"{name} must satisfy |p| < 2**53 (float64 holds every integer only "
                f"below it), got {arr[big].flat[0]!r}"
            )
    return arr


def check_layout(layout: Any, allowed: tuple[str, ...] = LAYOUTS) -> str:
    """One of the known layout names."""
    if not isinstance(layout, str) or layout not in allowed:
        raise PosEncError(
            f"layout must be one of {', '.join(repr(x) for x in allowed)}, got {_show(layout)}"
        )
    return layout


def check_dtype(dtype: Any) -> np.dtype:
    """A NumPy floating dtype posenc can round into: float16, float32, float64."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise PosEncError(
            f"dtype must be one of float16, float32, float64, got {_show(dtype)}"
        ) from exc
    if dt not in _DTYPES:
        raise PosEncError(f"dtype must be one of float16, float32, float64, got {dt}")
    return dt


def check_length(length: Any, name: str = "length") -> int:
    """A non-negative integer count of positions."""
    return check_int(length, name, minimum=0)


def check_context(context: Any, name: str = "context") -> float:
    """A context length: a finite number of positions > 0."""
    c = check_real(context, name)
    if c <= 0:
        raise PosEncError(f"{name} must be > 0 positions, got {context}")
    return c
