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

What a registry holds is checked where it enters and where it is used, so a
user's entry fails as one PosEncError naming it, never as a raw error deep in
the numerics or a silently wrong value:

- a name (:func:`check_name`) is 1 to 64 ASCII letters, digits, ``_ . + -``,
  starting with a letter or digit: every built-in name is such a word (and
  transformers' ``rope_type`` values are too); a newline, a NUL or a
  10,000-character name is refused;
- a factory's signature (:class:`Call`) is read with :func:`inspect.signature`
  when it is registered: a zero-argument factory must be callable with no
  argument, a scaling factory as ``factory(rope_dict, config_dict)``;
- a preset registered as an instance must be a frozen dataclass, since one
  instance serves every caller;
- a factory (or a registered callable, :meth:`Registry.call`) that raises
  anything but PosEncError at use is reported as a PosEncError naming the
  registered name, the original chained (``raise … from``);
- a method a preset's base class declares with :func:`checked_results`
  (a timestep preset's ``plan``) has its result's type checked at every call.

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

import dataclasses
import functools
import inspect
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import PosEncError, show_value

__all__ = ["Call", "Registry", "check_name", "checked_results", "guarded", "returned"]

#: A registered name: 1-64 ASCII characters, a letter or digit first, then letters, digits, ``_ . + -``.
NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]{0,63}", re.ASCII)


def check_name(name: Any, what: str) -> str:
    """``name`` if it is a registrable name (:data:`NAME_RULE`), else a PosEncError naming its repr.

    >>> check_name("guided-diffusion", "a preset")
    'guided-diffusion'
    >>> check_name("a\\nb", "a preset")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: a preset name must be a non-empty string of at most 64 ASCII letters, ... got 'a\\nb'
    """
    if not isinstance(name, str) or NAME_RULE.fullmatch(name) is None:
        raise PosEncError(f"{_article(what)} name must be a non-empty string of at most 64 ASCII letters, digits, "
                          f"'_', '.', '+' or '-', starting with a letter or digit, got {show_value(name)}")
    return name


@dataclasses.dataclass(frozen=True)
class Call:
    """One way a registry calls what it holds: these positional arguments, then these keywords.

    :meth:`check` reads a callable's signature (:func:`inspect.signature`) and
    refuses one that cannot be called so, when it is registered rather than at
    its first use. A callable whose signature Python cannot read (some
    builtins) passes: only its use can tell.

    >>> Call(("rope_dict", "config_dict")).check(lambda: None, "the factory 'x'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: the factory 'x' must be callable as f(rope_dict, config_dict), but its signature is ()...
    """

    positional: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()

    def text(self) -> str:
        """The call as written: ``f(rope_dict, config_dict)``, ``f(head_dim=..., base=...)``."""
        return "f(" + ", ".join([*self.positional, *(f"{k}=..." for k in self.keywords)]) + ")"

    def check(self, func: Any, who: str) -> None:
        """Refuse ``func`` (described as ``who``) if its signature cannot take this call."""
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):  # no signature to read (a builtin): its use will tell
            return
        try:
            sig.bind(*self.positional, **{k: None for k in self.keywords})
        except TypeError as exc:
            raise PosEncError(f"{who} must be callable as {self.text()}, but its signature is {sig} ({exc})") from None


def guarded(who: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``; an exception other than PosEncError becomes one naming ``who``, chained.

    A PosEncError is the callee's own refusal (a built-in factory's "unknown
    key"), already one line naming the value: it passes unchanged.

    >>> guarded("the factory registered as 'x'", lambda: 1 / 0)
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: the factory registered as 'x' raised ZeroDivisionError: division by zero
    """
    try:
        return func(*args, **kwargs)
    except PosEncError:
        raise
    except Exception as exc:
        raise PosEncError(f"{who} raised {type(exc).__name__}: {_one_line(exc)}") from exc


def returned(value: Any, kind: type | tuple[type, ...], who: str) -> Any:
    """``value`` if it is a ``kind``, else a PosEncError saying ``who`` (a call, as written) returned it."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise PosEncError(f"{who} returned {show_value(value)}, not a {names}")
    return value


def checked_results(**methods: type | tuple[type, ...]) -> Callable[[type], type]:
    """A base class decorator: every subclass's own ``method`` has its result checked to be of its type.

    The base declares its protocol once (``@checked_results(plan=TimestepPlan)``);
    a user's subclass whose ``plan`` returns junk then fails at the call with
    a PosEncError naming the preset and what it returned, wherever the plan is
    consumed (the NumPy, torch and JAX forms, the command, the plots).
    """
    def decorate(base: type) -> type:
        owner: Any = base  # the hook is assigned after the class is made: typed loosely, as setattr would be

        def hook(cls: Any, **kwargs: Any) -> None:
            super(owner, cls).__init_subclass__(**kwargs)
            for name, kind in methods.items():
                own = cls.__dict__.get(name)
                if callable(own) and not getattr(own, "_posenc_checked", False):
                    setattr(cls, name, _checking(own, name, kind))

        if "__init_subclass__" in base.__dict__:  # a posenc programming error, at import: never a user's input
            raise TypeError(f"checked_results: {base.__name__} defines __init_subclass__ already")
        owner.__init_subclass__ = classmethod(hook)
        return base

    return decorate


def _checking(method: Callable[..., Any], name: str, kind: type | tuple[type, ...]) -> Callable[..., Any]:
    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        if not isinstance(out, kind):
            shown = ", ".join([*(show_value(a) for a in args), *(f"{k}={show_value(v)}" for k, v in kwargs.items())])
            returned(out, kind, f"{show_value(self)}.{name}({shown})")
        return out

    checked._posenc_checked = True  # type: ignore[attr-defined]
    return checked


T = TypeVar("T")


class Registry(Mapping[str, Callable[[], T]], Generic[T]):
    """Names to factories of ``what``, written only under a lock (so threads may register while others read).

    Args:
        what: the thing named, for messages (``"a posenc.fields preset"``).
        kind: the class (or classes) of the things, or a predicate: what
            :meth:`get` passes through and checks a factory's result against;
            None accepts anything.
        builtins: name -> factory, registered at once.
        calls: when the things named are themselves callables (scaling
            factories, preset builders): each way they are called, checked
            against a thing's signature when it is registered and when a
            factory makes it.
    """

    def __init__(self, what: str, kind: Any = None, builtins: Mapping[str, Callable[[], T]] | None = None,
                 *, calls: tuple[Call, ...] = ()) -> None:
        self.what = what
        self._kind = kind
        self._calls = calls
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
        name = check_name(name, self.what)
        if not callable(factory):
            raise PosEncError(f"{_the(self.what)} registered as {name!r} must be callable, got {show_value(factory)}")
        Call().check(factory, f"the factory of {self.what} registered as {name!r}")
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

        A factory's result is checked when the name is used (:meth:`get`); a
        preset given as an instance must be a frozen dataclass (one instance
        serves every caller, so none may change it), a callable thing (a
        registry with ``calls``) must take those calls.
        """
        if self.is_kind(preset) and not (self._kind is None and callable(preset)):
            who = f"{_the(self.what)} registered as {check_name(name, self.what)!r}"
            if self._calls:
                for call in self._calls:
                    call.check(preset, who)
            elif self._kind is not None and not _frozen(preset):
                raise PosEncError(f"{who} must be a frozen dataclass instance (one instance serves every caller), "
                                  f"got {show_value(preset)}")
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
        made = guarded(f"the factory registered as {value!r}", factory)
        if not self.is_kind(made):
            raise PosEncError(f"the factory registered as {value!r} returned {show_value(made)}, not {self.what}")
        for call in self._calls:
            call.check(made, f"what the factory registered as {value!r} returned")
        return made

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The callable registered as ``name`` applied to the arguments, its raw errors as PosEncError naming it."""
        func: Callable[..., Any] = self.get(name)  # type: ignore[assignment]  # a registry of callables (calls=)
        return guarded(f"{_the(self.what)} registered as {name!r}", func, *args, **kwargs)

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
        if name not in self._registry:
            raise KeyError(name)
        return self._registry.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)

    def __repr__(self) -> str:
        return repr(dict(self))


def _article(what: str) -> str:
    return what if what.split(" ", 1)[0] in ("a", "an") else f"a {what}"


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, at most about ``limit`` characters (the command prints one line)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _frozen(obj: object) -> bool:
    """A frozen dataclass instance (not the class)."""
    params = getattr(type(obj), "__dataclass_params__", None)
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type) and bool(getattr(params, "frozen", False))


def _the(what: str) -> str:
    """``what`` with "the" for its article: "a posenc.fields preset" -> "the posenc.fields preset"."""
    head, _, rest = what.partition(" ")
    return f"the {rest}" if head in ("a", "an") and rest else f"the {what}"


def _same(a: object, b: object) -> bool:
    """a is b, or equal as plain Python objects say (an array's elementwise == is no answer: not the same)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # an ambiguous truth value, a hostile __eq__
        return False
