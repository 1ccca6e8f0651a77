"""Open registries of presets: a name to a preset, added to by users, read by the entry points (issue 19's seam).

One :class:`Registry` per family (:data:`posenc.timesteps.CONVENTIONS`,
:data:`posenc.fields.CONVENTIONS`): a read-only mapping of names to
zero-argument factories, with :meth:`Registry.register` to add one (under a
lock: registering while other threads resolve names is safe) and
:meth:`Registry.get` to resolve a name or pass a preset through.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import PosEncError, show_value

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Mapping[str, Callable[[], T]], Generic[T]):
    """Names -> factories of presets of one ``kind``.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class P:
    ...     a: int = 1
    >>> reg = Registry(P, "a test preset", {"p": P})
    >>> reg.register("two", P(2))
    >>> reg.get("two"), reg.get(P(3)), sorted(reg)
    (P(a=2), P(a=3), ['p', 'two'])
    """

    def __init__(self, kind: type[T], what: str, builtins: Mapping[str, Callable[[], T]]) -> None:
        self._kind = kind
        self._what = what
        self._items: dict[str, Callable[[], T]] = dict(builtins)
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Callable[[], T]:
        with self._lock:
            return self._items[name]

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def register(self, name: Any, preset: Any) -> None:
        """Make ``name`` mean ``preset``: a preset (frozen, so shared) or a zero-argument factory of one.

        An existing name is replaced.
        """
        if not isinstance(name, str) or not name:
            raise PosEncError(f"a convention's name must be a non-empty string, got {show_value(name)}")
        if isinstance(preset, self._kind):
            factory: Callable[[], T] = lambda: preset  # noqa: E731 - a frozen preset, shared
        elif callable(preset) and (not isinstance(preset, type) or issubclass(preset, self._kind)):
            factory = preset
        else:
            raise PosEncError(f"preset must be {self._what} or a factory of one, got {show_value(preset)}")
        with self._lock:
            self._items[name] = factory

    def get(self, convention: Any) -> T:  # type: ignore[override]
        """The preset named ``convention`` (built by its factory), or ``convention`` itself when it is one."""
        if isinstance(convention, self._kind):
            return convention
        with self._lock:
            factory = self._items.get(convention) if isinstance(convention, str) else None
            names = ", ".join(repr(n) for n in self._items)
        if factory is None:
            raise PosEncError(f"convention must be {self._what} or one of {names}, got {show_value(convention)}")
        preset = factory()
        if not isinstance(preset, self._kind):
            raise PosEncError(f"the factory registered as {convention!r} returned {show_value(preset)}, not a preset")
        return preset
