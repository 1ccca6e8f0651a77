"""The open preset registries (posenc.registry): names resolve while other threads register."""

from __future__ import annotations

import threading

import pytest

from posenc import PosEncError
from posenc.fields import CONVENTIONS as FIELDS
from posenc.fields import NeRF
from posenc.timesteps import CONVENTIONS as TIMESTEPS
from posenc.timesteps import Diffusers, GuidedDiffusion


def test_builtins_are_listed_and_resolve():
    assert {"diffusers", "ddpm", "guided-diffusion", "flux"} <= set(TIMESTEPS)
    assert {"nerf", "nerfstudio", "tcnn"} <= set(FIELDS)
    assert TIMESTEPS.get("guided-diffusion") == GuidedDiffusion()
    assert FIELDS.get(NeRF(log_sampling=False)) == NeRF(log_sampling=False)


def test_registering_under_threads_loses_nothing():
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(50):
                TIMESTEPS.register(f"stress-{i}-{j}", Diffusers(scale=1.0 + j))
                assert TIMESTEPS.get("diffusers") == Diffusers()
                assert TIMESTEPS.get(f"stress-{i}-{j}").scale == 1.0 + j
                list(TIMESTEPS)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert {f"stress-{i}-{j}" for i in range(8) for j in range(50)} <= set(TIMESTEPS)


def test_a_factory_that_returns_no_preset_is_refused_when_used():
    TIMESTEPS.register("test-broken", lambda: 3)
    with pytest.raises(PosEncError, match=r"returned 3, not a posenc\.timesteps preset"):
        TIMESTEPS.get("test-broken")
    with pytest.raises(PosEncError, match=r"a posenc\.fields preset"):
        FIELDS.register("x", Diffusers())
