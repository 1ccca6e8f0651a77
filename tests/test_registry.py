"""The open preset registries (posenc.registry): names resolve while other threads register."""

from __future__ import annotations

import threading
from dataclasses import dataclass

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


def test_a_custom_scaling_and_a_custom_convention_through_the_public_api():
    """issue 19: a user's rope type and a user's sinusoid are read by name, each in one call."""
    import numpy as np

    import posenc

    @dataclass(frozen=True)
    class Stretch:
        """Every frequency divided by ``factor`` (position interpolation, written by a user)."""

        factor: float = 2.0

        def scale(self, dim, base, seq_len):
            return posenc.Linear(self.factor).scale(dim, base, seq_len)

        def cache_key(self, seq_len):
            return None

    posenc.register_scaling("test-stretch", lambda rope, cfg: Stretch(float(rope["factor"])), replace=True)
    cfg = posenc.from_hf_config({"head_dim": 8, "rope_theta": 100.0,
                                 "rope_parameters": {"rope_type": "test-stretch", "factor": 4.0}})
    assert cfg.scaling == Stretch(4.0)
    x = np.eye(8)[:3]
    assert np.array_equal(posenc.apply_rope(x, [0, 4, 8], spec=cfg), posenc.apply_rope(x, [0, 1, 2], base=100.0))

    posenc.register_convention("test-split-100", posenc.conventions.Vaswani(base=100.0, layout="split"))
    assert np.array_equal(posenc.encode([0, 5], 6, convention="test-split-100"),
                          posenc.encode([0, 5], 6, base=100.0, layout="split"))
    posenc.register_convention("test-mae-100", posenc.conventions_nd.MAE(base=100.0))  # an n-D preset
    assert np.array_equal(posenc.encode_nd([[1, 2]], 8, convention="test-mae-100"),
                          posenc.encode_nd([[1, 2]], 8, convention=posenc.conventions_nd.MAE(base=100.0)))
    with pytest.raises(PosEncError, match=r"unknown rope_type 'nope'.*'test-stretch'"):
        posenc.from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "nope"}})
