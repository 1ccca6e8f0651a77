"""Keeping the NumPy core out of torch.compile's tracing: :func:`outside_compile`, applied to every public callable.

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
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar, overload

__all__ = ["REMEDY", "outside_compile", "prepare", "public_name", "reason"]

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


def prepare() -> None:
    """Make the ``torch.compiler.disable`` wrapper of every decorated callable (torch must be loaded)."""
    import torch

    for name, fn in list(_REGISTRY.items()):
        if name not in _DISABLED:
            _DISABLED[name] = torch.compiler.disable(fn, reason=reason(name))


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


#: Where users reach a module's callables, after ``posenc.``, where that is not the top level: the module ->
#: (the prefix of its functions, the prefix of its classes' methods and ``__post_init__`` guards). A module not
#: named here is reached at the top level (``posenc.encode``). tests/support/test_compile.py walks every name.
_PUBLIC: dict[str, tuple[str, str]] = {
    "posenc.sinusoidal.conventions": ("conventions.", "conventions."),
    "posenc.sinusoidal.conventions_nd": ("conventions_nd.", "conventions_nd."),
    "posenc.bias.alibi": ("", "bias.alibi."),
    "posenc.bias.alibi_variants": ("bias.", "bias.alibi."),
    "posenc.bias.t5": ("", "bias.t5."),
    "posenc.rope.registry": ("rope.", "rope."),
}


def public_name(fn: Callable[..., Any]) -> str:
    """How users reach ``fn``, after ``posenc.``: its ``__qualname__`` in the public namespace of its module.

    A class's ``__post_init__`` (the guard of its construction) is named for the class.

    >>> from posenc.sinusoidal import conventions
    >>> public_name(conventions.get.__wrapped__), public_name(conventions.Fairseq.__post_init__.__wrapped__)
    ('conventions.get', 'conventions.Fairseq')
    """
    qualname = fn.__qualname__.removesuffix(".__post_init__")
    functions, classes = _PUBLIC.get(fn.__module__, ("", ""))
    return (classes if "." in fn.__qualname__ else functions) + qualname


@overload
def outside_compile(target: F) -> F: ...
@overload
def outside_compile(target: str) -> Callable[[F], F]: ...


def outside_compile(target: str | F) -> F | Callable[[F], F]:
    """Decorate a public NumPy callable so torch.compile never traces it (see the module docstring).

    ``@outside_compile`` names it by :func:`public_name`, as its reason shows it (``posenc.conventions.get``);
    ``@outside_compile("name")``, the older form, names it by hand (being removed once every module uses the
    first).

    Args:
        target: the callable; or how users reach it, after ``posenc.`` (``"encode"``, ``"conventions.get"``).

    Raises:
        RuntimeError: where the name is another callable's already (each name's wrapper calls one callable).

    >>> @outside_compile
    ... def twice(x):
    ...     return 2 * x
    >>> twice(21), twice.__name__, reason(public_name(twice.__wrapped__))[:30]
    (42, 'twice', 'posenc.twice computes in NumPy')
    """
    if callable(target):
        return _decorate(public_name(target), target)
    name = target
    return lambda fn: _decorate(name, fn)


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
        if "torch._dynamo" not in sys.modules:  # no torch.compile in this process: nothing traces
            return fn(*args, **kwargs)
        # always through the wrapper once Dynamo is loaded: a frame it skipped (no tensor in it) runs
        # eagerly, but still under its frame hook, which would trace this call's NumPy frames
        return _outside(name)(*args, **kwargs)

    return call  # type: ignore[return-value]
