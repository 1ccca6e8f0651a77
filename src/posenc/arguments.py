"""Name arguments and the arguments a preset fixes, checked without asking an array for its truth.

``value in ("q", "k")`` or ``base != 10000.0`` on a NumPy array or a torch
tensor compares element by element: ``np.array(["q"])`` passes as ``"q"``
(and a table is silently built for another role), and ``np.array([1.0, 2.0])``
raises NumPy's "truth value is ambiguous" instead of a PosEncError naming it.
Every entry point checks such arguments here (issue 18).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import PosEncError, show_value

__all__ = ["check_choice", "check_flag", "check_items", "is_default"]


def check_choice(value: Any, name: str, allowed: Sequence[str]) -> str:
    """One of the names ``allowed``, as a plain ``str``: only a ``str`` is looked up.

    >>> check_choice("q", "role", ("q", "k"))
    'q'
    >>> check_choice(np.array(["q"]), "role", ("q", "k"))
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: role must be one of 'q', 'k', got array(['q'], dtype='<U1')
    """
    if not isinstance(value, str) or value not in allowed:
        raise PosEncError(f"{name} must be one of {', '.join(repr(x) for x in allowed)}, got {show_value(value)}")
    return str(value)


def is_default(value: Any, default: Any) -> bool:
    """Whether an argument was left at its default (``10000.0``, ``"interleaved"``, None).

    A preset fixes some arguments (a convention its base and layout); an
    entry point refuses them beside it unless they are the default. Only a
    plain scalar of the default's kind equal to it counts: an array, a
    tensor or another type is "given", so the caller gets a PosEncError
    naming it.

    >>> is_default(10000, 10000.0), is_default(np.array([1e4, 2e4]), 10000.0), is_default("split", "interleaved")
    (True, False, False)
    """
    if default is None or isinstance(default, str):
        return value is None if default is None else (isinstance(value, str) and value == default)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError, OverflowError, ArithmeticError):  # a broken Real
        return False


def check_items(value: Any, name: str, what: str) -> tuple[Any, ...]:
    """The items of a sequence argument (sizes, coordinates), as a tuple.

    Refuses text and what cannot be iterated, a 0-d array or tensor too
    (it has ``__iter__``, which raises TypeError).

    >>> check_items(np.array(3), "sizes", "the size along each axis")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: sizes must be the size along each axis, got 3
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") or getattr(value, "ndim", 1) == 0:
        raise PosEncError(f"{name} must be {what}, got {show_value(value)}")
    return tuple(value)


def check_flag(value: Any, name: str) -> bool:
    """True or False (NumPy's too): not a one-element array, a tensor or a string, whose truth is no answer.

    >>> check_flag(np.bool_(True), "per_channel")
    True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise PosEncError(f"{name} must be True or False, got {show_value(value)}")
    return bool(value)
