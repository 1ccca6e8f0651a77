"""Reading a user's array: the one place the NumPy API calls ``np.asarray``, every failure named.

Split from :mod:`posenc.errors` (whose checks call it): a tensor NumPy cannot
read, a ragged list, an object whose ``__array__`` raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import PosEncError, _clip, show_value

__all__ = ["read_array"]


def read_array(value: Any, name: str, expected: str) -> np.ndarray:
    """``np.asarray(value)``: the one place the NumPy API reads an array, whatever reading it raises.

    A ragged list, a tensor NumPy cannot read (bfloat16, on the meta device
    or an accelerator, requiring grad) and an object whose ``__array__``
    raises are each refused by name, with what was expected and, for a
    tensor, the conversion that makes it readable.

    >>> read_array([[1], [2, 3]], "x", "real numbers")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: x must be real numbers, got [[1], [2, 3]]
    """
    try:
        return np.asarray(value)
    except Exception as exc:  # the boundary: nothing NumPy raises while reading gets through unnamed
        raise PosEncError(f"{name} must be {expected}, got {_unreadable(value, name, exc)}") from exc


def _unreadable(value: Any, name: str, exc: Exception) -> str:
    """What ``value`` is and why NumPy could not read it, for :func:`read_array`'s message."""
    kind = type(value)
    if kind.__module__.split(".")[0] == "torch" and hasattr(value, "dtype") and hasattr(value, "device"):
        dtype, device = str(value.dtype).removeprefix("torch."), str(value.device)
        what = f"a torch.Tensor of dtype {dtype} on {device}"
        if device == "meta":
            return f"{what}, which holds no values"
        if getattr(value, "requires_grad", False):
            return f"{what} that requires grad: pass {name}.detach() (posenc.torch's modules are differentiable)"
        if not device.startswith("cpu"):
            return f"{what}: pass {name}.cpu() (posenc.torch computes on the device)"
        return f"{what}, which NumPy cannot read: pass {name}.float() or {name}.double()"
    if isinstance(exc, (ValueError, TypeError, OverflowError)) and kind in (list, tuple):
        return show_value(value)  # a ragged or mixed list: shown as given
    return f"{show_value(value)} ({kind.__name__}; reading it raised {type(exc).__name__}: {_clip(str(exc), 80)})"
