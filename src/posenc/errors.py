"""The one exception class and the boundary checks every entry point shares.

Every public function validates its arguments here, once, before any work is
done, and raises :class:`PosEncError` with a message that names the bad value
and says what was expected.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "MAX_ANGLE",
    "MAX_BASE",
    "MAX_D_MODEL",
    "MAX_POSITION",
    "MIN_FREQUENCY",
    "SHOW_LIMIT",
    "PosEncError",
    "as_array",
    "check_angle",
    "check_base",
    "check_channels",
    "check_context",
    "check_d_model",
    "check_dtype",
    "check_int",
    "check_length",
    "check_positions",
    "check_real",
    "check_seq_len",
    "check_span",
    "read_array",
    "shape_text",
    "show_value",
]

#: Positions must satisfy ``|p| < MAX_POSITION`` (2**53): beyond it a float64
#: cannot hold every integer, so "position p" would silently mean another one.
MAX_POSITION = 2.0**53

#: The widest encoding posenc builds, channels (``d_model``, ``head_dim``).
#: The accuracy guarantee (docs/explanation/guarantees.md) is tested up to it: the exact
#: path's error does not grow with the width (every ω lies in [1/base, 1]),
#: so the bound is the cost of building the ladder (~0.2 s at 65536, ~3 s at
#: 10**6, hours at 10**9), not accuracy. It is 4× the widest model trained
#: so far (16384); a wider request is refused at once.
MAX_D_MODEL = 65536

#: The largest base: the slowest frequency, about 1/base, must stay above
#: :data:`MIN_FREQUENCY`, with room for presets whose last frequency is
#: exactly 1/base (computed to 70 digits, it may land a hair below).
MAX_BASE = 2.0**950

#: The smallest frequency the exact path holds to full precision: ω and its
#: first correction word (ω·2**-53) stay normal doubles, so the ladder keeps
#: more than 110 bits (it keeps ~160 above 2**-860).
MIN_FREQUENCY = 2.0**-960

#: Angles must satisfy ``|p·ω| < MAX_ANGLE`` (2**53): the reduction mod π/2
#: counts quarter turns k in a double, exact only below 2**53; past it the
#: quadrant, hence the sign of sin/cos, would be wrong. Without a scaling
#: ω <= 1 and |p| < 2**53, so only scaled frequencies above 1 can reach it.
MAX_ANGLE = 2.0**53

_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


class PosEncError(ValueError):
    """Bad input to posenc: the message names the value and what was expected."""


#: The longest a value is shown in a message; longer ones keep their head and tail.
SHOW_LIMIT = 60


def show_value(value: Any, limit: int = SHOW_LIMIT) -> str:
    """``value`` as the user wrote it, at most about ``limit`` characters: the one way messages show a value.

    A number whose type defines its own ``__repr__`` shows as that repr;
    Python's and NumPy's show as plain numbers, never ``np.float64(1e+300)``;
    a long value keeps its head and tail and says how long it was (a huge
    integer, how many digits), so a 100 KB argument gives a one-line
    message; a hostile ``__repr__`` never replaces the error.

    >>> show_value(np.float64(1e300)), show_value(np.int64(7)), show_value("diagonal")
    ('1e+300', '7', "'diagonal'")
    >>> show_value("9" * 100_000)
    "'99999999999999999999999999999999999999…9999999999999999999' (100002 characters)"
    >>> show_value(10**400), show_value(np.arange(1000.0))
    ('10000000000000000000… (401 digits)', '[0.0, 1.0, 2.0, …, 999.0] (shape (1000,))')
    """
    try:
        text = repr(value) if _shows_itself(value) else _plain(value)
    except Exception:  # a hostile __repr__ (or attribute) must not replace the error being reported
        text = f"<{type(value).__name__} object>"
    return _clip(text, limit)


def _shows_itself(value: Any) -> bool:
    """Whether ``value`` is a number whose own type says how it is shown: a subclass with its own ``__repr__``."""
    return (isinstance(value, (int, float)) and not isinstance(value, (bool, np.generic))
            and type(value).__repr__ not in (int.__repr__, float.__repr__))


def _plain(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        n = int(value)
        if n.bit_length() > 3000:  # str() of a huge int is slow (and capped by Python): say its size
            return f"{'-' if n < 0 else ''}an integer of about {int(n.bit_length() * 0.30103) + 1} digits"
        return str(n)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        flat = value.ravel()
        if value.ndim == 0:
            return _plain(flat[0])
        items = [_plain(v) for v in flat[:3]] + (["…", _plain(flat[-1])] if flat.size > 4 else
                                                  [_plain(v) for v in flat[3:]])
        return "[" + ", ".join(items) + "]" + (f" (shape {value.shape})" if value.ndim > 1 or flat.size > 4 else "")
    if isinstance(value, (list, tuple)) and len(value) > 4:
        return "[" + ", ".join(show_value(v, 20) for v in value[:3]) + f", …] ({len(value)} values)"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show_value(v, 20) for v in value) + "]"
    return repr(value)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    digits = text.lstrip("-")
    if digits.isdigit():  # an integer: its head and its size
        return f"{text[:20]}… ({len(digits)} digits)"
    head = (limit - 1) * 2 // 3
    return f"{text[:head]}…{text[head - limit + 1:]} ({len(text)} characters)"


def shape_text(shape: Sequence[int]) -> str:
    """``(3, 4)`` for a message, clipped to one line (the count of characters cut said).

    >>> shape_text((3, 4)), shape_text((7,))
    ('(3, 4)', '(7,)')
    """
    parts = [_plain(int(n)) for n in shape]
    return _clip("(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")", SHOW_LIMIT)


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int``; reject bools, floats and anything else.

    An ``int`` that shows itself (its type has its own ``__repr__``) is
    returned as it is, so a later check that rejects it still shows it so.

    >>> check_int(np.int64(7), "n"), type(check_int(np.int64(7), "n")).__name__
    (7, 'int')
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise PosEncError(f"{name} must be an integer, got {show_value(value)}")
    result = int(value)
    if minimum is not None and result < minimum:
        raise PosEncError(f"{name} must be >= {minimum}, got {show_value(value)}")
    if maximum is not None and result > maximum:
        raise PosEncError(f"{name} must be <= {maximum}, got {show_value(value)}")
    return value if isinstance(value, int) and _shows_itself(value) else result  # kept: shown the caller's way


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a finite ``float``.

    >>> check_real(10**400, "x")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: x must be finite (float64: |x| < 1.8e308), got 10000000000000000000… (401 digits)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise PosEncError(f"{name} must be a real number, got {show_value(value)} ({type(value).__name__})")
    try:
        result = float(value)
    except (OverflowError, ValueError, TypeError):  # a huge int or Fraction, a broken Real
        result = math.inf
    if not math.isfinite(result):
        raise PosEncError(f"{name} must be finite (float64: |x| < 1.8e308), got {show_value(value)}")
    return result


def check_d_model(d_model: Any, name: str = "d_model") -> int:
    """A positive even integer: the formula fills channels in (sin, cos) pairs."""
    if isinstance(d_model, (bool, np.bool_)) or not isinstance(d_model, numbers.Integral):
        raise PosEncError(
            f"{name} must be a positive even integer, got {show_value(d_model)}"
        )
    d = int(d_model)
    if d <= 0 or d % 2:
        raise PosEncError(
            f"{name} must be a positive even integer (channels come in (sin, cos) "
            f"pairs, one pair per frequency), got {show_value(d_model)}"
        )
    return check_channels(d_model, name)


def check_channels(channels: Any, name: str = "d_model") -> int:
    """A channel count in 1 … :data:`MAX_D_MODEL` (odd allowed: some conventions take it)."""
    c = check_int(channels, name, minimum=1)
    if c > MAX_D_MODEL:
        raise PosEncError(
            f"{name} must be <= {MAX_D_MODEL} (the widest encoding posenc builds and guarantees), "
            f"got {show_value(channels)}"
        )
    return c


def check_base(base: Any, name: str = "base") -> float:
    """A finite real number in (1, 2**950], so that the frequencies decrease with i and stay exact."""
    b = check_real(base, name)
    if not 1.0 < b <= MAX_BASE:
        raise PosEncError(
            f"{name} must be a number > 1 and <= 2**950 (above it the slowest frequency, ~1/base, "
            f"leaves the exact range), got {show_value(base)}"
        )
    return b


def check_angle(max_position: float, max_frequency: float, what: str = "positions") -> None:
    """Refuse angles |p·ω| >= 2**53 (:data:`MAX_ANGLE`), where the quadrant would be lost.

    Args:
        max_position: the largest |p| asked for.
        max_frequency: the largest ω that meets it.
        what: how the caller names the positions.

    >>> check_angle(2**31 - 1, 1e7)
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: positions reach |p| = 2147483647 where the fastest frequency ω = 1e+07 gives ...
    """
    angle = abs(max_position) * max_frequency
    if not angle < MAX_ANGLE:
        p = int(max_position) if float(max_position).is_integer() else max_position
        raise PosEncError(
            f"{what} reach |p| = {abs(p)} where the fastest frequency ω = {max_frequency:.6g} gives an angle "
            f"|p·ω| = {angle:.6g}; exact sin/cos need |p·ω| < 2**53: keep |p| < {MAX_ANGLE / max_frequency:.6g} "
            "or use a scaling whose frequencies stay lower"
        )


def _given(positions: Any, bad: Any) -> Any:
    """The element of ``positions`` whose value is ``bad``, as the caller gave it when it shows itself."""
    items = positions if isinstance(positions, (list, tuple)) else [positions]
    if isinstance(positions, np.ndarray) and positions.dtype == object and positions.ndim == 1:
        items = list(positions)  # the objects themselves, as given
    for item in items:
        if _shows_itself(item):
            if _exact_int(item) and _exact_int(bad):  # ints compare exactly: 10**25 + 2 is not 10**25
                if int(item) == int(bad):
                    return item
                continue
            try:
                if float(item) == float(bad) or (math.isnan(float(bad)) and math.isnan(float(item))):
                    return item
            except (OverflowError, TypeError, ValueError):
                continue
    return bad


def _exact_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_positions(positions: Any, name: str = "positions") -> np.ndarray:
    """Return positions as a float64 array, every value exact.

    Accepts integers, floats and arrays of them. Rejects booleans, complex
    numbers, NaN and infinities, and any ``|p| >= 2**53``: above that a
    float64 no longer holds every integer, so the position itself would be
    rounded before any encoding is computed.
    """

    arr = read_array(positions, name, "real numbers")
    kind = arr.dtype.kind
    if kind == "O" and arr.size and all(_exact_int(v) for v in arr.flat):
        # Python ints (a start and a start + length - 1): judged exactly, the first one too large
        # shown as given, never rounded through float64 (10**25 - 1 is not 1e+25)
        for v in arr.flat:
            if abs(int(v)) >= 2**53:
                raise PosEncError(
                    f"{name} must satisfy |p| < 2**53 (float64 holds every integer "
                    f"only below it), got {show_value(_given(positions, v))}"
                )
        return arr.astype(np.float64)
    if kind == "O":
        if any(v is None for v in arr.flat):  # NumPy reads None as nan: say what was given
            raise PosEncError(f"{name} must be real numbers, got {show_value(positions)}")
        try:
            arr = np.asarray(positions, dtype=np.float64)
        except Exception as exc:  # a number type whose __float__ raises anything: the boundary names the value
            raise PosEncError(
                f"{name} must be real numbers with |p| < 2**53, got {show_value(positions)}"
            ) from exc
        kind = "f"
    if kind in "iu":
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            worst = hi if abs(hi) >= abs(lo) else lo
            if abs(worst) >= 2**53:
                raise PosEncError(
                    f"{name} must satisfy |p| < 2**53 (float64 holds every integer "
                    f"only below it), got {show_value(_given(positions, worst))}"
                )
        return arr.astype(np.float64)
    if kind != "f":
        raise PosEncError(
            f"{name} must be real numbers (int or float), got {show_value(positions)} "
            f"of dtype {arr.dtype}"
        )
    arr = arr.astype(np.float64, copy=False)
    if arr.size:
        finite = np.isfinite(arr)
        if not finite.all():
            bad = arr[~finite].flat[0]
            raise PosEncError(f"{name} must be finite, got {show_value(_given(positions, bad))}")
        big = np.abs(arr) >= MAX_POSITION
        if big.any():
            raise PosEncError(
                f"{name} must satisfy |p| < 2**53 (float64 holds every integer only "
                f"below it), got {show_value(_given(positions, arr[big].flat[0]))}"
            )
    return arr


def check_span(start: Any, length: Any, name: str = "positions start … start+length-1") -> tuple[int, int]:
    """``(start, length)`` checked as integers, every position ``start … start+length-1`` below 2**53.

    Judged exactly in Python ints, so the message shows the true last
    position, and ``start`` and ``length`` as given, never a float rounding.

    >>> check_span(-3, 4)
    (-3, 4)
    >>> try:
    ...     check_span(2**53 - 3, 5)
    ... except PosEncError as exc:
    ...     print(str(exc).split("got ")[1])
    start+length-1 = 9007199254740993 (start 9007199254740989, length 5)
    """
    first = check_int(start, "start")
    n = check_int(length, "length", minimum=0)
    last = first + max(n - 1, 0)
    why = f"{name} must satisfy |p| < 2**53 (float64 holds every integer only below it), got "
    if abs(first) >= 2**53:
        raise PosEncError(f"{why}start = {show_value(start)}")
    if abs(last) >= 2**53:
        raise PosEncError(f"{why}start+length-1 = {show_value(last)} (start {show_value(start)}, "
                          f"length {show_value(length)})")
    return first, n


def as_array(value: Any, name: str) -> np.ndarray:
    """``np.asarray(value)``, with a ragged list or an unconvertible object reported as a PosEncError."""

    return read_array(value, name, "an array (a nested list of equal lengths)")


def check_dtype(dtype: Any) -> np.dtype:
    """A NumPy floating dtype posenc can round into: float16, float32, float64."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as exc:  # ValueError: a tensor, whose dtype NumPy cannot read
        raise PosEncError(
            f"dtype must be one of float16, float32, float64, got {show_value(dtype)}"
        ) from exc
    if dt not in _DTYPES:
        raise PosEncError(f"dtype must be one of float16, float32, float64, got {dt}")
    return dt


def check_seq_len(value: Any, name: str = "seq_len") -> int:
    """A sequence length for the scalings that depend on it: an integer 1 <= n <= 2**53.

    Positions run 0 … n-1, and posenc takes no position past 2**53 (float64
    holds every integer only below it), so a longer "sequence" has no
    position in it: a dynamic scaling fed one would answer for nothing.

    >>> check_seq_len(4096)
    4096
    """
    return check_int(value, name, minimum=1, maximum=int(MAX_POSITION))


def check_length(length: Any, name: str = "length") -> int:
    """A non-negative integer count of positions."""
    return check_int(length, name, minimum=0)


def check_context(context: Any, name: str = "context") -> float:
    """A context length: a finite number of positions > 0."""
    c = check_real(context, name)
    if c <= 0:
        raise PosEncError(f"{name} must be > 0 positions, got {show_value(context)}")
    return c


def read_array(value: Any, name: str, expected: str) -> np.ndarray:
    """``np.asarray(value)``: the one place the NumPy API reads an array, whatever reading it raises.

    A ragged list, a tensor NumPy cannot read (bfloat16, on the meta device
    or an accelerator, requiring grad) and an object whose ``__array__``
    raises are each refused by name, with what was expected and, for a
    tensor, the conversion that makes it readable.

    >>> read_array([[1], [2, 3]], "x", "real numbers")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: x must be real numbers, got [[1], [2, 3]]
    """
    try:
        return np.asarray(value)
    except Exception as exc:  # the boundary: nothing NumPy raises while reading gets through unnamed
        raise PosEncError(f"{name} must be {expected}, got {_unreadable(value, name, exc)}") from exc


def _unreadable(value: Any, name: str, exc: Exception) -> str:
    """What ``value`` is and why NumPy could not read it, for :func:`read_array`'s message."""
    kind = type(value)
    if kind.__module__.split(".")[0] == "torch" and hasattr(value, "dtype") and hasattr(value, "device"):
        dtype, device = str(value.dtype).removeprefix("torch."), str(value.device)
        what = f"a torch.Tensor of dtype {dtype} on {device}"
        if device == "meta":
            return f"{what}, which holds no values"
        if getattr(value, "requires_grad", False):
            return f"{what} that requires grad: pass {name}.detach() (posenc.torch's modules are differentiable)"
        if not device.startswith("cpu"):
            return f"{what}: pass {name}.cpu() (posenc.torch computes on the device)"
        return f"{what}, which NumPy cannot read: pass {name}.float() or {name}.double()"
    if isinstance(exc, (ValueError, TypeError, OverflowError)) and kind in (list, tuple):
        return show_value(value)  # a ragged or mixed list: shown as given
    return f"{show_value(value)} ({kind.__name__}; reading it raised {type(exc).__name__}: {_clip(str(exc), 80)})"
