"""The timestep rows of ``posenc bench``: :class:`posenc.torch.Timesteps` beside diffusers' ``Timesteps``.

Both embed a batch of timesteps ``[N] -> [N, C]`` in float32 (fractional, or
whole steps as int64), timed side by side with the floor (writing an ``[N, C]``
float32 output). Errors are measured against :func:`posenc.timestep_embedding`
in float64, the formula to under a float64 ulp; diffusers' own float32 error
shows beside posenc's. The row ``posenc Timesteps / diffusers`` divides
posenc's median by diffusers' from the same run (its floor is diffusers'
time): the drop-in's cost, read off one line.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .measure import time_side_by_side, ulp_gap
from .report import Row

__all__ = ["producers"]


def _timesteps(n: int, channels: int, scale: float, steps: bool = False) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        from ..timesteps import Diffusers, timestep_embedding
        from ..torch.timesteps import Timesteps

        gen = torch.Generator().manual_seed(0)
        if steps:  # whole steps 0 … 999, as a scheduler hands them
            t = torch.randint(0, 1000, (n,), generator=gen)
        else:
            t = torch.rand(n, generator=gen) * (1.0 if scale != 1 else 1000.0)
        ours = Timesteps(channels, True, 0, scale)
        fns: dict[str, Callable[[], object]] = {"floor: empty+fill": lambda: torch.empty(n, channels).fill_(0.5),
                                                "posenc Timesteps": lambda: ours(t)}
        try:
            from diffusers.models.embeddings import Timesteps as DiffusersTimesteps

            theirs = DiffusersTimesteps(channels, True, 0, scale)  # type: ignore[arg-type]
            fns["diffusers Timesteps"] = lambda: theirs(t)
        except ImportError:  # diffusers is a test dependency, not posenc's
            pass
        with torch.no_grad():
            ms = time_side_by_side(fns, repeats)
        exact = timestep_embedding(t.double().numpy(), channels, convention=Diffusers(True, 0, scale),
                                   dtype=np.float64)
        op = (f"timesteps [{n}]->[{n},{channels}] f32" + (" int t" if steps else "")
              + (f" scale={scale:g}" if scale != 1 else ""))
        floor = ms["floor: empty+fill"]
        rows = [Row(op, "floor: empty+fill", floor, 1.0, floor_ms=floor)]
        for name, fn in fns.items():
            if name.startswith("floor"):
                continue
            got = np.asarray(fn().numpy(), dtype=np.float32)  # type: ignore[attr-defined]
            rows.append(Row(op, name, ms[name], ms[name] / floor, max_ulp=ulp_gap(got, exact),
                            max_abs=float(np.max(np.abs(got - exact))), floor_ms=floor))
        if "diffusers Timesteps" in ms:
            ours_ms, theirs_ms = ms["posenc Timesteps"], ms["diffusers Timesteps"]
            rows.append(Row(op, "posenc Timesteps / diffusers", ours_ms, ours_ms / theirs_ms, floor_ms=theirs_ms))
        return rows

    return produce


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``)."""
    if quick:
        return [_timesteps(64, 320, 1.0)]
    return [_timesteps(64, 320, 1.0), _timesteps(64, 320, 1.0, steps=True), _timesteps(4096, 256, 1.0),
            _timesteps(4096, 256, 1.0, steps=True), _timesteps(4096, 256, 1000.0)]
