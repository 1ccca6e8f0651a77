"""Keeping the NumPy core out of torch.compile's tracing: :func:`guard_public`, once, at the package's boundary.

Dynamo traces NumPy code through its own emulation (``torch._numpy``), which
does not keep the float64 NumPy semantics posenc's exactness rests on: it
ignores the ``where=`` of ``np.negative(s, out=s, where=…)`` (wrong signs,
silently), and fails inside itself on ``np.nditer``, ``decimal`` contexts and
``lru_cache`` (issue 18). So no NumPy-core function is ever traced: called
while torch.compile traces, each runs as itself, outside the graph, through a
``torch.compiler.disable`` wrapper whose reason names the function and the
remedy. With ``fullgraph=False`` that is a graph break and eager's bits; with
``fullgraph=True`` it is Dynamo's ``Unsupported`` error carrying that reason,
never a number computed by the emulation.

This module never imports torch. Until ``torch._dynamo`` is loaded (what
``torch.compile`` imports) no frame can be traced, and a call costs one
``sys.modules`` look-up. Once it is loaded, every call goes through the
disabled wrapper (~0.5 µs), traced or not: Dynamo runs a frame it skips (one
holding no tensor) eagerly but still under its frame hook, so a plain
``is_compiling()`` test would be False there while the NumPy frames below it
were traced all the same. The wrappers are made once, by ``posenc.torch`` at
import (``torch._dynamo`` is loaded there anyway) or at the first call that
needs them; a first call met inside a trace first hits
``torch._dynamo.graph_break`` with the same reason, so ``fullgraph=True``
fails with the posenc message then too. Making them is idempotent, so
threads that race only make the same wrapper twice (no lock: a lock inside
a traced frame would break the graph by itself).

The guard is applied in one place: the last lines of ``posenc/__init__.py``
call :func:`guard_public` on the public namespaces, which wraps each public
function and each class's field check under the path users call it by (no
module decorates its own callables, so a new public function is guarded by
being exported).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import inspect
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["REMEDY", "guard_public", "host_only", "outside_compile", "prepare", "prepare_when_compiling", "reason"]

F = TypeVar("F", bound=Callable[..., Any])

#: What a user can do, in every reason.
REMEDY = (
    "call it before the compiled region and pass its result in (as a tensor), "
    "or compile with fullgraph=False (the graph breaks there and the result is eager's, bit for bit)"
)

_REGISTRY: dict[str, Callable[..., Any]] = {}  # name -> the undecorated callable
_DISABLED: dict[str, Callable[..., Any]] = {}  # name -> its torch.compiler.disable wrapper


def reason(name: str) -> str:
    """The one line a ``fullgraph=True`` compile fails with when it meets ``name``."""
    return (f"posenc.{name} computes in NumPy, exactly, and torch.compile cannot trace that "
            f"(its NumPy emulation changes the bits): {REMEDY}")


#: (fn, why, [its disabled wrapper, once made], the lazy wrapper host_only returned)
_HOST_ONLY: list[tuple[Callable[..., Any], str, list[Callable[..., Any]], Callable[..., Any]]] = []


def prepare() -> None:
    """Make the ``torch.compiler.disable`` wrapper of every decorated callable (torch must be loaded)."""
    import torch

    for name, fn in list(_REGISTRY.items()):
        if name not in _DISABLED:
            _DISABLED[name] = torch.compiler.disable(_entered(fn), reason=reason(name))
    for fn, why, made, lazy in list(_HOST_ONLY):
        if not made:
            made.append(torch.compiler.disable(fn, reason=why))
            # Dynamo then meets the disabled function itself, as a decorator at its definition would have left
            # it, not the lazy wrapper (which it would trace into, break the graph inside, and trace again as a
            # frame of its own: ~0.5 s more compile per call site)
            _repoint("posenc", functools.partial(_swap, lazy, made[0]))


def _swap(old: Any, new: Any, value: Any) -> Any:
    return new if value is old else None


def _repoint(package: str, new: Callable[[Any], Any]) -> None:
    """Point every global of every loaded module of ``package`` at ``new(value)`` where that is not None."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == package or name.startswith(package + ".")):
            continue
        for attr, value in list(vars(module).items()):
            replacement = new(value)
            if replacement is not None:
                setattr(module, attr, replacement)


def host_only(why: str) -> Callable[[F], F]:
    """``torch.compiler.disable(fn, reason=why)``, made once torch.compile is in use rather than at import.

    posenc.torch keeps some calls out of every graph on purpose (rows grown on
    the host, a ``reserve()`` the user must call first), each with the remedy
    in ``why``. ``torch.compiler.disable`` imports ``torch._dynamo``: ~1.5 s of
    ``import posenc.torch`` and ~1 s more at the interpreter's exit, for a
    process that never compiles. Until it is loaded nothing can be traced, so
    the call goes straight through. The wrappers are made the moment it has
    loaded (:func:`prepare_when_compiling`), before anything is traced, and
    every posenc global naming this function is pointed at its wrapper
    (:func:`_repoint`), so Dynamo meets the disabled function itself and
    ``fullgraph=True`` fails with ``why``.

    >>> twice = host_only("why not")(lambda x: 2 * x)
    >>> twice(21)
    42
    """
    def wrap(fn: F) -> F:
        made: list[Callable[..., Any]] = []

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if "torch._dynamo" not in sys.modules:  # no torch.compile in this process: nothing traces
                return fn(*args, **kwargs)
            if not made:  # torch._dynamo loaded without the hook having run (found by another finder)
                torch = sys.modules["torch"]
                if torch.compiler.is_compiling():
                    torch._dynamo.graph_break(msg=why)  # fullgraph=True stops here, with the reason
                prepare()  # eagerly: between two graphs, or before any
            return made[0](*args, **kwargs)

        _HOST_ONLY.append((fn, why, made, call))
        if "torch._dynamo" in sys.modules:  # torch.compile is in use: the wrapper itself, now
            made.append(sys.modules["torch"].compiler.disable(fn, reason=why))
            return made[0]  # type: ignore[return-value]
        return call  # type: ignore[return-value]

    return wrap


class _AfterDynamo(importlib.abc.MetaPathFinder):
    """A one-shot import hook: once ``torch._dynamo`` has loaded, :func:`prepare` makes every wrapper."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "torch._dynamo":
            return None
        _unhook()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # not a plain package on disk: the first-call path of host_only() serves instead
        real = spec.loader

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return real.create_module(spec)

            def exec_module(self, module: Any) -> None:
                real.exec_module(module)
                prepare()

            def __getattr__(self, name: str) -> Any:  # get_resource_reader, get_filename …: the real loader's
                return getattr(real, name)

        spec.loader = Loader()
        return spec


_HOOK = _AfterDynamo()


def _unhook() -> None:
    try:
        sys.meta_path.remove(_HOOK)
    except ValueError:  # another thread's import took it out first
        pass


def prepare_when_compiling() -> None:
    """Make the wrappers now if ``torch._dynamo`` is loaded, else the moment it loads (:class:`_AfterDynamo`)."""
    if "torch._dynamo" in sys.modules:
        prepare()
    elif _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


class _Depth(threading.local):
    """How many guards this thread is inside: below the first, nothing can be traced (the region is disabled)."""

    depth = 0


_STATE = _Depth()


def _entered(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, counting this thread inside a guard while it runs (what the disabled wrapper calls)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        _STATE.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _STATE.depth -= 1

    return run


def _outside(name: str) -> Callable[..., Any]:
    """The disabled wrapper of ``name``: a graph break inside a trace, or fullgraph's error naming posenc."""
    disabled = _DISABLED.get(name)
    if disabled is None:
        torch = sys.modules["torch"]
        if torch.compiler.is_compiling():
            torch._dynamo.graph_break(msg=reason(name))  # fullgraph=True stops here, with the reason
        prepare()  # eagerly: between two graphs, or before any
        disabled = _DISABLED[name]
    return disabled


def outside_compile(name: str) -> Callable[[F], F]:
    """A decorator keeping ``fn`` out of torch.compile's tracing under the public ``name`` (see the module docstring).

    :func:`guard_public` applies it to every public callable, once, at the boundary; a module never does.

    Args:
        name: how users reach the callable, after ``posenc.`` (``"encode"``, ``"conventions.get"``).

    Raises:
        RuntimeError: where the name is another callable's already (each name's wrapper calls one callable).

    >>> twice = outside_compile("twice")(lambda x: 2 * x)
    >>> twice(21), reason("twice")[:30]
    (42, 'posenc.twice computes in NumPy')
    """
    return lambda fn: _decorate(name, fn)


def _ours(obj: Any, root: str) -> bool:
    return getattr(obj, "__module__", "").split(".")[0] == root


def guard_public(root: ModuleType, namespaces: Sequence[str], methods: Sequence[str]) -> dict[str, Callable[..., Any]]:
    """Keep every public callable of ``root`` out of torch.compile's tracing: the guard, applied once, here.

    Guarded, each under the path users call it by (the reason a ``fullgraph=True`` compile fails with names it):

    - every function of ``root.__all__`` and of each namespace's ``__all__`` (``"conventions.get"``);
    - every class there that checks its fields (its own ``__post_init__``: ``"conventions.Fairseq"``);
    - the ``methods`` named (``"conventions.Convention.encode"``; classmethods too).

    A callable reached by two paths is guarded once, under the first (``root``'s names come first). Then every
    global of every loaded module of the package that names a guarded function is pointed at its guard, as a
    decorator at its definition would have done: a call from inside the package meets the same guard, and a
    module imported later (``posenc.torch``) imports the guard.

    Args:
        root: the package (``posenc``), fully imported.
        namespaces: its public sub-namespaces, by attribute name (``"conventions"``, ``"bias"``).
        methods: dotted paths from ``root`` to the methods users call on an object (the rest of a class is data).

    Returns:
        ``{name: the callable it guards}``, as :data:`_REGISTRY` holds it.
    """
    package = root.__name__
    guards: dict[int, tuple[Any, Callable[..., Any]]] = {}  # id(raw function) -> (it, its guard)

    def guard(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if id(fn) not in guards:
            guards[id(fn)] = (fn, outside_compile(name)(fn))
        return guards[id(fn)][1]

    checked: set[int] = set()
    post_init = "__post_init__"  # set on the class by name: mypy knows no such attribute of a type
    for prefix, module in [("", root), *((f"{ns}.", getattr(root, ns)) for ns in namespaces)]:
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj) and _ours(obj, package):
                setattr(module, attr, guard(prefix + attr, obj))
            elif inspect.isclass(obj) and _ours(obj, package) and post_init in vars(obj) \
                    and id(obj) not in checked:
                checked.add(id(obj))
                setattr(obj, post_init, guard(prefix + attr, vars(obj)[post_init]))
    for path in methods:
        owner: Any = root
        *parts, method = path.split(".")
        for part in parts:
            owner = getattr(owner, part)
        raw = vars(owner)[method]
        if isinstance(raw, classmethod):
            setattr(owner, method, classmethod(guard(path, raw.__func__)))
        else:
            setattr(owner, method, guard(path, raw))
    def guarded(value: Any) -> Any:
        known = guards.get(id(value))
        return known[1] if known is not None and known[0] is value else None

    _repoint(package, guarded)
    return dict(_REGISTRY)


def _decorate(name: str, fn: F) -> F:
    known = _REGISTRY.get(name)
    if known is not None and (known.__module__, known.__qualname__) != (fn.__module__, fn.__qualname__):
        # a module reloaded re-registers its own callables; two callables under one name would call one another
        raise RuntimeError(f"outside_compile: {name!r} names {known.__module__}.{known.__qualname__} already")
    _REGISTRY[name] = fn
    _DISABLED.pop(name, None)  # a reloaded module's callable gets its own wrapper
    if "torch._dynamo" in sys.modules:  # torch.compile is in use: no first-call dance
        prepare()

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is None or "torch._dynamo" not in sys.modules:  # no torch.compile in this process: nothing traces
            return fn(*args, **kwargs)
        # A call inside another guard (posenc calling itself) runs where nothing can be traced: straight through,
        # without the disabled wrapper's cost (~5 µs a call). is_compiling() first: while Dynamo traces, it is
        # True and the thread-local is never read (Dynamo would trace that read); eagerly it is False.
        if not torch.compiler.is_compiling() and _STATE.depth:
            return fn(*args, **kwargs)
        # else through the wrapper: a frame Dynamo skipped (no tensor in it) runs eagerly, but still under its
        # frame hook, which would trace this call's NumPy frames
        return _outside(name)(*args, **kwargs)

    return call  # type: ignore[return-value]
