"""Optional compiled kernels: built once, on first use, or None without numba.

numba is the ``fast`` extra. Nothing imports it until a kernel is first
asked for, so ``import posenc`` stays NumPy-only and quick.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .concurrency import Memo

__all__ = ["cacheable", "compiled", "ready"]

_built: Memo[Any] = Memo()


def compiled(key: str, build: Callable[[], Any]) -> Any:
    """``build()`` the first time ``key`` is asked for (once, even when threads race); None without numba."""

    def attempt() -> Any:
        try:
            return build()
        except ImportError:
            return None

    return _built.get(key, attempt)


def ready(key: str) -> bool:
    """True once ``key`` has been built (numba already paid for in this process)."""
    return _built.peek(key) is not None


def cacheable(template: Callable[..., Any], callees: dict[str, Any], name: str) -> Any:
    """``template`` with ``callees`` (compiled functions) as its globals, named ``name``: a kernel numba can cache.

    numba keys a kernel in its on-disk cache (``cache=True``) by the bytecode
    and the pickled contents of the closure. A kernel that calls another
    compiled function through a closure never meets its cache again: a
    dispatcher pickles with an id drawn afresh in every process, so every
    process compiled the kernel anew (seconds each) and added one more entry
    to the cache file. Here the callees are globals of a clone of
    ``template`` (no part of the key), and the clone's qualified name is
    ``name``, from which numba names the cache file: variants compiled from
    one template (other callees) never share an entry. The cache is stamped
    with the template's source file; its callees must live there too, so an
    edit to any of them invalidates it (tests/support/test_numba_cache.py).

    Write the template at module level, calling each callee by a global name
    that ``callees`` binds.
    """
    clone = types.FunctionType(template.__code__, {**template.__globals__, **callees}, name, template.__defaults__)
    clone.__qualname__ = name
    clone.__module__ = template.__module__
    return clone
