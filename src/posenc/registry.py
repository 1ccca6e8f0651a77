"""Open registries: names a user can add to, read under a lock (conventions, n-D presets).

A :class:`Registry` maps a name to a factory of the thing it names, so a
built-in preset and one a user registers are found the same way
(:func:`posenc.register_convention`). It is a read-only
:class:`~collections.abc.Mapping` to its readers; only :meth:`Registry.add`
writes, and a name is registered once: registering it again for the same
thing (a module imported twice) is a no-op, for another thing an error, never
a silent replacement of what other code relies on.

>>> r = Registry[int]("a number")
>>> r.add("one", lambda: 1)
>>> r["one"](), list(r)
(1, ['one'])
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from .errors import PosEncError, show_value

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Mapping[str, Callable[[], T]], Generic[T]):
    """Names to factories of ``what``, written only by :meth:`add` (under a lock, so threads may register)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._lock = threading.Lock()
        self._items: dict[str, Callable[[], T]] = {}
        self._keys: dict[str, object] = {}

    def add(self, name: object, factory: Callable[[], T], key: object = None) -> None:
        """Register ``factory`` (called with no argument each time ``name`` is looked up) as ``name``.

        ``key`` is what was registered (the factory itself by default): the same
        name with an equal key again is a no-op, with another an error.
        """
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise PosEncError(f"a {self.what} name must be a non-empty string without surrounding spaces, "
                              f"got {show_value(name)}")
        if not callable(factory):
            raise PosEncError(f"the {self.what} registered as {name!r} must be callable, got {show_value(factory)}")
        key = factory if key is None else key
        with self._lock:
            if name in self._items:
                if _same(self._keys[name], key):
                    return
                raise PosEncError(f"{self.what} {name!r} is already registered (as {show_value(self._keys[name])})")
            self._keys[name] = key
            self._items = {**self._items, name: factory}  # readers see the old or the new dict, never half of one

    def __getitem__(self, name: str) -> Callable[[], T]:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def _same(a: object, b: object) -> bool:
    """a is b, or equal as plain Python objects say (an array's elementwise == is no answer: not the same)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # an ambiguous truth value, a hostile __eq__
        return False
