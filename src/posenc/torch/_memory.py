"""Torch outputs sized against their device before any work: the one rule of :mod:`posenc.support.memory`, on tensors.

``AlibiBias(8)(10**6, 10**6)`` once reached torch's allocator (an 8 TB
request), and ``T5RelativeBias(4)(30000, 30000)`` worked 17 s before it
failed: its working tensors (the offsets, their clamp, the buckets) are
three times its output. Each module now declares its output and its working
tensors and is refused at once, in a :class:`~posenc.errors.PosEncError`
naming both and the device's memory. A meta tensor holds no memory: nothing
is refused there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..support.memory import check_size, limit

__all__ = ["check_device_size", "device_memory"]

_NUMPY = {torch.float16: np.float16, torch.bfloat16: np.float16, torch.float32: np.float32,
          torch.float64: np.float64, torch.int64: np.int64, torch.int32: np.int32}


def device_memory(device: torch.device) -> int | None:
    """The memory a tensor on ``device`` draws from: this machine's, a GPU's own, none for meta."""
    if device.type == "meta":
        return None
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return limit()


def check_device_size(shape: Sequence[int], dtype: torch.dtype, what: str, device: torch.device, work: int) -> None:
    """:func:`posenc.support.memory.check_size` for a torch output on ``device``, ``work`` bytes of working tensors."""
    have = device_memory(device)
    if have is not None:
        check_size(shape, _NUMPY[dtype], what, work=work, have=have)
