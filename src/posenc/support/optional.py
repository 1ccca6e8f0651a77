"""Optional compiled kernels: built once, on first use, or None without numba.

numba is the ``fast`` extra. Nothing imports it until a kernel is first
asked for, so ``import posenc`` stays NumPy-only and quick.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .concurrency import Memo

__all__ = ["cacheable", "compiled", "ready", "serialise_saves"]

_built: Memo[Any] = Memo()


def compiled(key: str, build: Callable[[], Any]) -> Any:
    """``build()`` the first time ``key`` is asked for (once, even when threads race); None without numba."""

    def attempt() -> Any:
        try:
            return serialise_saves(build())
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


def serialise_saves(kernels: Any) -> Any:
    """``kernels`` (a compiled kernel, or a tuple of them), each saving to numba's disk cache under a file lock.

    numba saves a new entry in two steps: it reads the cache's index, picks
    the first free data file name, writes the index naming it, then writes
    the data. Two processes compiling one kernel for two signatures at once
    (pytest-xdist's workers, a user's pool) can both pick ``….1.nbc``; when
    the first writer's data lands last, the index names the second one's
    signature beside the first one's code, and every later process loads a
    kernel compiled for other types ("can't unbox array", seen in this
    suite). Each save here holds an exclusive lock on a file beside the
    index, so the read, the pick and both writes are one step; a load needs
    no lock (each file is written aside and renamed by numba). Where no lock
    can be had (no ``fcntl``, or a numba whose cache is laid out otherwise),
    the kernel keeps no disk cache: compiled in each process, never loaded
    wrong. tests/support/test_numba_cache.py races two processes.
    """
    for kernel in kernels if isinstance(kernels, (tuple, list)) else (kernels,):
        _serialise(kernel)
    return kernels


def _serialise(kernel: Any) -> None:
    cache = getattr(kernel, "_cache", None)
    if cache is None or type(cache).__name__ == "NullCache":  # compiled without cache=True
        return
    cache_file: Any = getattr(cache, "_cache_file", None)
    save = getattr(cache_file, "save", None)
    index = getattr(cache_file, "_index_path", None)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None  # type: ignore[assignment]
    if save is None or not isinstance(index, str) or fcntl is None:
        from numba.core.caching import NullCache

        kernel._cache = NullCache()
        return

    def save_locked(key: Any, data: Any) -> None:
        try:
            handle = open(index + ".lock", "ab")
        except OSError:  # no lock to be had here: the entry goes unsaved (compiled again next time)
            return
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
            save(key, data)

    cache_file.save = save_locked  # this cache file's own saves, not every numba user's
    kernel.compile = _compiled_once(kernel.compile, index + ".compile.lock", fcntl)


#: how long a process waits for another one compiling the same kernel before it compiles its own (seconds)
COMPILE_WAIT = 600.0


def _compiled_once(compile_sig: Callable[[Any], Any], lock_path: str, fcntl: Any) -> Callable[[Any], Any]:
    """``compile_sig`` run under an exclusive lock per kernel, across processes: a type signature compiled once.

    Two processes wanting one kernel for one new signature at once (pytest-xdist's workers, a data loader's
    workers) each compiled it, seconds of work twice. Now the second waits for the first, and numba's own
    ``compile`` then finds the entry the first saved and loads it. The lock is taken before numba's compiler
    lock and never while this thread holds it (a kernel compiled from inside another compile goes unlocked),
    so a thread waiting here holds nothing another thread waits for; past :data:`COMPILE_WAIT` (a holder
    stuck), the process compiles its own. A dead holder's lock is released by the system.
    """
    import time

    from numba.core.compiler_lock import global_compiler_lock

    def compile_locked(sig: Any) -> Any:
        if global_compiler_lock.is_locked():  # inside a compile already: the lock order forbids waiting
            return compile_sig(sig)
        try:
            handle = open(lock_path, "ab")
        except OSError:  # a cache folder not writable: nothing to share
            return compile_sig(sig)
        with handle:  # closing the handle releases the lock
            deadline = time.monotonic() + COMPILE_WAIT
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
            return compile_sig(sig)

    return compile_locked
