"""Optional compiled kernels: built once, on first use, or None without numba.

numba is the ``fast`` extra. Nothing imports it until a kernel is first
asked for, so ``import posenc`` stays NumPy-only and quick.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .concurrency import Memo

__all__ = ["compiled", "ready"]

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
