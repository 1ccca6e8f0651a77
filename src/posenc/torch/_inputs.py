"""What posenc.torch's functions take: tensors on any device, or array-likes read as NumPy reads them.

The input rules of the torch primitives (:mod:`posenc.torch.timesteps`,
:mod:`posenc.torch.fields`, :mod:`posenc.torch.bias`): a value is read into a
tensor without losing a bit (:func:`as_tensor`), integer offsets are checked
as the NumPy functions check them (:func:`offsets`), a dtype is one of
torch's floats (:func:`check_float`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..errors import PosEncError, read_array, show_value
from ..triton.positions import check_values

__all__ = ["FLOAT_DTYPES", "as_tensor", "check_float", "host_input", "offsets"]

#: the output dtypes of the torch functions
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_float(dtype: Any) -> torch.dtype:
    """``dtype`` checked: torch.float16, bfloat16, float32 or float64."""
    if not isinstance(dtype, torch.dtype) or dtype not in FLOAT_DTYPES:  # a tensor would compare element by element
        raise PosEncError(f"dtype must be a torch float16/bfloat16/float32/float64, got {dtype!r}")
    return dtype


def as_tensor(value: Any, name: str) -> torch.Tensor:
    """``value`` as a tensor: a tensor itself; an array-like read as NumPy reads it (floats stay float64).

    >>> as_tensor([1, 2], "t").dtype, as_tensor([0.5], "t").dtype
    (torch.int64, torch.float64)
    """
    if isinstance(value, torch.Tensor):
        return value
    arr = read_array(value, name, "real numbers")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
        raise PosEncError(f"{name} must satisfy |p| < 2**53, got {int(arr.max())}")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.uint8 if arr.dtype == np.uint8 else np.int64)
    elif arr.dtype.kind != "f" or arr.dtype.itemsize > 8:
        raise PosEncError(f"{name} must be real numbers (integers or float16/32/64), got {show_value(value)}")
    return torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="), copy=True))  # writable, native order


def host_input(value: Any, name: str) -> tuple[Any, torch.device | None]:
    """(what the NumPy function reads, the device the result goes to): a tensor's values on the host, exactly."""
    if not isinstance(value, torch.Tensor):
        return value, None
    if value.is_meta:
        raise PosEncError(f"{name} is a tensor on the meta device, which holds no values")
    v = value.detach().cpu()
    if v.dtype in (torch.float16, torch.bfloat16):
        v = v.to(torch.float32)  # exact
    return v.numpy(), value.device


def offsets(value: Any, name: str, what: str) -> torch.Tensor:
    """Integer offsets or positions, checked as the NumPy functions check them (|r| < 2**53), on their device."""
    rel = as_tensor(value, name)
    if rel.dtype.is_floating_point or rel.is_complex() or rel.dtype == torch.bool:
        raise PosEncError(f"{name} must be integers ({what}), got dtype {str(rel.dtype).removeprefix('torch.')}")
    if not rel.is_meta:
        check_values(rel, name)
    return rel.to(torch.long)
