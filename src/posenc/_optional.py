"""Optional compiled kernels: built once, on first use, or None without numba.

numba is the ``fast`` extra. Nothing imports it until a kernel is first
asked for, so ``import posenc`` stays NumPy-only and quick.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["compiled", "ready"]

_built: dict[str, Any] = {}


def compiled(key: str, build: Callable[[], Any]) -> Any:
    """``build()`` the first time ``key`` is asked for; None if numba is not installed."""
    if key not in _built:
        try:
            _built[key] = build()
        except ImportError:
            _built[key] = None
    return _built[key]


def ready(key: str) -> bool:
    """True once ``key`` has been built (numba already paid for in this process)."""
    return _built.get(key) is not None
