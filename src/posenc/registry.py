"""Open registries: names a user can add to, read under a lock (issue 19's seam).

One :class:`Registry` per family of presets: the sinusoid conventions
(:func:`posenc.register_convention`), the n-D presets, the RoPE scalings by
rope type (:func:`posenc.register_scaling`), the ALiBi variants
(:func:`posenc.register_alibi`), the RoPE presets, the timestep and field
conventions. It maps a name to a zero-argument factory of the thing it names,
so a built-in and one a user registers are found the same way. It is a
read-only :class:`~collections.abc.Mapping` to its readers; only
:meth:`Registry.add` (and :meth:`Registry.register`, which takes a preset or a
factory of one) writes. A name is registered once: registering it again for
the same thing (a module imported twice) is a no-op, for another thing an
error unless ``replace=True``, never a silent replacement of what other code
relies on. :meth:`Registry.get` resolves a name, passes a preset of the
registry's kind through, and refuses anything else naming what is registered.

>>> r = Registry[int]("a number")
>>> r.add("one", lambda: 1)
>>> r["one"](), list(r)
(1, ['one'])
>>> r.get("two")
Traceback (most recent call last):
...
posenc.errors.PosEncError: name must be a number or one of 'one', got 'two'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import PosEncError, show_value

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Mapping[str, Callable[[], T]], Generic[T]):
    """Names to factories of ``what``, written only under a lock (so threads may register while others read).

    Args:
        what: the thing named, for messages (``"a posenc.fields preset"``).
        kind: the class (or classes) of the things, or a predicate: what
            :meth:`get` passes through and checks a factory's result against;
            None accepts anything.
        builtins: name -> factory, registered at once.
    """

    def __init__(self, what: str, kind: Any = None, builtins: Mapping[str, Callable[[], T]] | None = None) -> None:
        self.what = what
        self._kind = kind
        self._lock = threading.Lock()
        self._items: dict[str, Callable[[], T]] = {}
        self._keys: dict[str, object] = {}
        for name, factory in (builtins or {}).items():
            self.add(name, factory)

    def is_kind(self, value: Any) -> bool:
        """Whether ``value`` is one of the things this registry names."""
        kind = self._kind
        if kind is None:
            return True
        if isinstance(kind, (type, tuple)):
            return isinstance(value, kind)
        return bool(kind(value))

    def add(self, name: object, factory: Callable[[], T], key: object = None, *, replace: bool = False) -> None:
        """Register ``factory`` (called with no argument each time ``name`` is looked up) as ``name``.

        ``key`` is what was registered (the factory itself by default): the same
        name with an equal key again is a no-op, with another an error unless
        ``replace``.
        """
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise PosEncError(f"{_article(self.what)} name must be a non-empty string without surrounding spaces, "
                              f"got {show_value(name)}")
        if not callable(factory):
            raise PosEncError(f"the {self.what} registered as {name!r} must be callable, got {show_value(factory)}")
        if not isinstance(replace, bool):
            raise PosEncError(f"replace must be True or False, got {show_value(replace)}")
        key = factory if key is None else key
        with self._lock:
            if name in self._items and not replace:
                if _same(self._keys[name], key):
                    return
                raise PosEncError(f"{self.what} {name!r} is already registered (as {show_value(self._keys[name])})")
            self._keys = {**self._keys, name: key}
            self._items = {**self._items, name: factory}  # readers see the old or the new dict, never half of one

    def register(self, name: object, preset: Any, *, replace: bool = False) -> None:
        """Make ``name`` mean ``preset``: one of this registry's things (frozen, so shared) or a factory of one.

        A factory's result is checked when the name is used (:meth:`get`).
        """
        if self.is_kind(preset) and not (self._kind is None and callable(preset)):
            self.add(name, lambda: preset, key=preset, replace=replace)
            return
        if not callable(preset) or (isinstance(preset, type) and isinstance(self._kind, (type, tuple))
                                    and not issubclass(preset, self._kind)):
            raise PosEncError(f"preset must be {self.what} or a factory of one, got {show_value(preset)}")
        self.add(name, preset, replace=replace)

    def get(self, value: Any, arg: str = "name") -> T:  # type: ignore[override]
        """The thing named ``value`` (built by its factory), or ``value`` itself when it is one.

        Raises:
            PosEncError: ``arg`` is neither, naming every registered name.
        """
        if not isinstance(value, str) and self._kind is not None and self.is_kind(value):
            return value
        factory = self._items.get(value) if isinstance(value, str) else None
        if factory is None:
            items = list(self._items)
            more = f" (and {len(items) - 24} more)" if len(items) > 24 else ""
            names = ", ".join(repr(n) for n in items[:24]) + more
            raise PosEncError(f"{arg} must be {self.what} or one of {names}, got {show_value(value)}")
        made = factory()
        if not self.is_kind(made):
            raise PosEncError(f"the factory registered as {value!r} returned {show_value(made)}, not {self.what}")
        return made

    def built(self) -> Mapping[str, T]:
        """A live read-only view: name -> the thing its factory makes (as ``ALIBI_CONVENTIONS``)."""
        return _Built(self)

    def __getitem__(self, name: str) -> Callable[[], T]:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class _Built(Mapping[str, T]):
    """Name -> the registered thing itself, read through to the registry (names added later appear)."""

    def __init__(self, registry: Registry[T]) -> None:
        self._registry = registry

    def __getitem__(self, name: str) -> T:
        return self._registry[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)

    def __repr__(self) -> str:
        return repr(dict(self))


def _article(what: str) -> str:
    return what if what.split(" ", 1)[0] in ("a", "an") else f"a {what}"


def _same(a: object, b: object) -> bool:
    """a is b, or equal as plain Python objects say (an array's elementwise == is no answer: not the same)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # an ambiguous truth value, a hostile __eq__
        return False
