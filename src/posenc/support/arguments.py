"""Name arguments and the arguments a preset fixes, checked without asking an array for its truth.

``value in ("q", "k")`` or ``base != 10000.0`` on a NumPy array or a torch
tensor compares element by element: ``np.array(["q"])`` passes as ``"q"``
(and a table is silently built for another role), and ``np.array([1.0, 2.0])``
raises NumPy's "truth value is ambiguous" instead of a PosEncError naming it.
Every entry point checks such arguments here (issue 18).

The settings a spec or a preset holds (base, layout, T5's bucket
settings) are passed as keywords typed by one ``TypedDict`` per family
(``SinusoidSettings``, ``AxialSettings``, ``T5Settings``, RoPE's
``RopeSettings``), taken as ``**settings``: :func:`settings_of` refuses a
name the family does not have, and beside a spec or a preset every setting
present is refused, even at its default value (:func:`given`): the defaults
live in the spec's fields alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import PosEncError, show_value

__all__ = ["check_choice", "check_flag", "check_items", "given", "set_fields", "settings_of"]


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


def settings_of(settings: Mapping[str, Any], family: Any, where: str) -> dict[str, Any]:
    """The settings a caller passed as keywords, checked by name against ``family`` (a ``TypedDict``).

    An entry point taking ``**settings: Unpack[family]`` reads them here, so
    a name the family lacks (a typo, another family's setting) is refused
    with a PosEncError naming it and the names allowed, never ignored; the
    values are checked where the spec is built.

    >>> from typing import TypedDict
    >>> class Settings(TypedDict, total=False):
    ...     base: float
    ...     layout: str
    >>> settings_of({"base": 100.0}, Settings, "encode")
    {'base': 100.0}
    >>> settings_of({"bas": 100.0}, Settings, "encode")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: encode() got an unexpected keyword argument 'bas'; its settings are 'base', 'layout'
    """
    allowed = tuple(family.__annotations__)
    for name in settings:
        if name not in allowed:
            raise PosEncError(f"{where}() got an unexpected keyword argument {show_value(name)}; its settings are "
                              f"{', '.join(repr(a) for a in allowed)}")
    return dict(settings)


def given(settings: Mapping[str, Any], family: Any) -> str:
    """The settings present, as ``name=value, …`` in ``family``'s order (a ``TypedDict``), for a message.

    Beside a spec or a preset, every setting present was typed by the caller
    (the defaults live in the spec), so each one is named, even at its
    default value.

    >>> from typing import TypedDict
    >>> class Settings(TypedDict, total=False):
    ...     base: float
    ...     layout: str
    >>> given({"layout": "split", "base": 10000.0}, Settings)
    "base=10000.0, layout='split'"
    """
    return ", ".join(f"{k}={show_value(settings[k])}" for k in family.__annotations__ if k in settings)


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


def set_fields(obj: Any, **values: Any) -> None:
    """Store the checked, normalised values of a frozen dataclass's fields (from its ``__post_init__``).

    A frozen dataclass refuses ``self.x = ...``; its ``__post_init__`` is the
    one place a field is validated, and this is the one way it stores the result.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class P:
    ...     n: int
    ...     def __post_init__(self) -> None:
    ...         set_fields(self, n=int(self.n))
    >>> P(3.0).n
    3
    """
    for name, value in values.items():
        object.__setattr__(obj, name, value)
