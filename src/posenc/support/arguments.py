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
live in the spec's fields alone. :func:`default`, :func:`left_out` and
:func:`passed`, the *marked* defaults that told a setting left out from one
typed at the default, are being removed (RoPE's files still use them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from ..errors import PosEncError, show_value

__all__ = ["check_choice", "check_flag", "check_items", "default", "given", "left_out", "passed", "set_fields",
           "settings_of"]


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


class _LeftOut:
    """What marks a signature's default: a value of this kind was not passed (see :func:`default`)."""

    __slots__ = ()


class _DefaultFloat(float, _LeftOut):
    __slots__ = ()
    __repr__ = float.__repr__


class _DefaultInt(int, _LeftOut):
    __slots__ = ()
    __repr__ = int.__repr__


class _DefaultFlag(int, _LeftOut):
    # bool cannot be subclassed: a flag's default is an int of its truth, shown as True or False
    __slots__ = ()

    def __repr__(self) -> str:
        return repr(bool(self))


class _DefaultStr(str, _LeftOut):
    __slots__ = ()
    __repr__ = str.__repr__


T = TypeVar("T")


def default(value: T) -> T:
    """``value`` as a signature's default: equal to it and shown as it, but told apart from a value passed.

    Being removed: RoPE's signatures still use it; every other family takes
    ``**settings`` typed by a ``TypedDict`` (:func:`settings_of`).

    A preset or a spec holds some settings (a convention its base and
    layout, a :class:`~posenc.RopeConfig` its layout); beside it an entry
    point refuses every one of them the caller passes, and needs to know
    which were passed: ``base=10000.0`` typed beside a spec of base 500000
    is a conflict, not the default. A value the caller passes is never one
    of these, so :func:`left_out` can tell.

    >>> d = default(10000.0)
    >>> d == 10000.0, repr(d), left_out(d), left_out(10000.0)
    (True, '10000.0', True, False)
    >>> repr(default(True)), bool(default(False)), default("half") == "half"
    ('True', False, True)
    """
    out: Any
    if isinstance(value, bool):
        out = _DefaultFlag(value)
    elif isinstance(value, int):
        out = _DefaultInt(value)
    elif isinstance(value, float):
        out = _DefaultFloat(value)
    elif isinstance(value, str):
        out = _DefaultStr(value)
    else:
        raise TypeError(f"default() marks a bool, int, float or str, got {type(value).__name__}")
    return cast(T, out)


def left_out(value: Any) -> bool:
    """Whether an argument was left at its signature's marked default (:func:`default`; being removed).

    Anything the caller passed counts as given, even when equal to the
    default (and None, where the default is not None): an entry point then
    refuses it beside a preset or a spec with a PosEncError naming it,
    rather than guess which of the two was meant. A parameter whose default
    is None reads None as left out itself.
    """
    return isinstance(value, _LeftOut)


def passed(**settings: Any) -> str:
    """The settings the caller passed (not left at a marked default), as ``name=value, …`` (being removed).

    A message about a clash names what the user typed, never a setting left
    at its default: ``encode(3, 8, convention="keras", base=10000.0)`` passed
    ``base`` alone.

    >>> passed(base=10000.0, layout=default("interleaved"))
    'base=10000.0'
    """
    return ", ".join(f"{k}={show_value(v)}" for k, v in settings.items() if not left_out(v))


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
    if not isinstance(value, (bool, np.bool_, _DefaultFlag)):
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
