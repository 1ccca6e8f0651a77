"""The open preset registries (posenc.registry): names resolve while other threads register."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pytest

from posenc import PosEncError
from posenc import timestep_embedding as posenc_timestep
from posenc.errors import show_value
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

    posenc.register("scaling", "test-stretch", lambda rope, cfg: Stretch(float(rope["factor"])), replace=True)
    cfg = posenc.from_hf_config({"head_dim": 8, "rope_theta": 100.0,
                                 "rope_parameters": {"rope_type": "test-stretch", "factor": 4.0}})
    assert cfg.scaling == Stretch(4.0)
    x = np.eye(8)[:3]
    assert np.array_equal(posenc.apply_rope(x, [0, 4, 8], spec=cfg), posenc.apply_rope(x, [0, 1, 2], base=100.0))

    posenc.register("sinusoid", "test-split-100", posenc.conventions.Vaswani(base=100.0, layout="split"))
    assert np.array_equal(posenc.encode([0, 5], 6, convention="test-split-100"),
                          posenc.encode([0, 5], 6, base=100.0, layout="split"))
    posenc.register("sinusoid", "test-mae-100", posenc.conventions_nd.MAE(base=100.0))  # an n-D preset
    assert np.array_equal(posenc.encode_nd([[1, 2]], 8, convention="test-mae-100"),
                          posenc.encode_nd([[1, 2]], 8, convention=posenc.conventions_nd.MAE(base=100.0)))
    with pytest.raises(PosEncError, match=r"unknown rope_type 'nope'.*'test-stretch'"):
        posenc.from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "nope"}})


# ---------------------------------------------------------------- issue 31: names, factories and results are checked
BAD_NAMES = {"newline": "a\nb", "NUL": "a\0b", "10000 characters": "x" * 10_000, "65 characters": "x" * 65,
             "empty": "", "leading space": " x", "trailing space": "x ", "inner space": "a b", "leading dash": "-x",
             "non-ASCII": "é", "slash": "a/b", "int": 3, "None": None}


def _registrars() -> dict[str, Any]:
    import posenc
    from posenc import conventions
    from posenc.fields import register as register_field
    from posenc.timesteps import register as register_timestep

    return {
        "timesteps": lambda name: register_timestep(name, Diffusers()),
        "fields": lambda name: register_field(name, NeRF()),
        "conventions": lambda name: posenc.register("sinusoid", name, conventions.Keras()),
        "conventions_nd": lambda name: posenc.register("sinusoid", name, posenc.conventions_nd.MAE()),
        "alibi": lambda name: posenc.register("alibi", name, posenc.bias.Mpt(alibi_bias_max=4.0)),
        "scaling": lambda name: posenc.register("scaling", name, lambda rope, cfg: None, replace=True),
    }


@pytest.mark.parametrize("registry", sorted(_registrars()))
@pytest.mark.parametrize("name", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_a_name_that_is_no_short_printable_word_is_refused_naming_its_repr(registry: str, name: Any) -> None:
    # before: "a\nb", "a\0b" and a 10,000-character name were registered (and printed in every message listing names)
    with pytest.raises(PosEncError, match="name must be a non-empty string of at most 64 ASCII letters") as info:
        _registrars()[registry](name)
    shown = show_value(name)
    assert shown in str(info.value) and len(str(info.value)) < 300 and "\n" not in str(info.value)


def test_every_built_in_name_and_a_64_character_one_pass_the_rule() -> None:
    import posenc
    from posenc.registry import check_name
    from posenc.rope.presets import ROPE_PRESETS
    from posenc.rope.registry import SCALING_FACTORIES
    from posenc.sinusoidal import conventions, conventions_nd

    builtin = [*TIMESTEPS, *FIELDS, *conventions.NAMES, *conventions_nd.NAMES, *posenc.ALIBI_CONVENTIONS,
               *SCALING_FACTORIES, *ROPE_PRESETS]
    assert {"guided-diffusion", "qwen2-vl-vision", "big_vision", "hf-marian", "llama3"} <= set(builtin)
    for name in builtin:
        assert check_name(name, "a preset") == name
    TIMESTEPS.register("t" * 64, Diffusers(scale=64.0))
    assert TIMESTEPS.get("t" * 64).scale == 64.0


def test_a_factory_that_takes_arguments_is_refused_when_registered() -> None:
    # before: accepted, then a raw TypeError at the first use
    with pytest.raises(PosEncError, match=r"registered as 'test-arity' must be callable as f\(\), but its signature "
                                          r"is \(dim\)"):
        TIMESTEPS.register("test-arity", lambda dim: Diffusers())
    assert "test-arity" not in TIMESTEPS
    TIMESTEPS.register("test-optional-arg", lambda dim=8: Diffusers(scale=2.0))  # callable with none: fine
    assert TIMESTEPS.get("test-optional-arg").scale == 2.0


def test_a_factory_that_raises_is_a_posenc_error_naming_the_registered_name() -> None:
    def broken() -> Any:
        raise KeyError("no such checkpoint")

    TIMESTEPS.register("test-raising", broken)
    with pytest.raises(PosEncError, match=r"the factory registered as 'test-raising' raised KeyError: "
                                          r"'no such checkpoint'") as info:
        posenc_timestep(1.0, 8, convention="test-raising")
    assert isinstance(info.value.__cause__, KeyError)
    FIELDS.register("test-refusing", lambda: NeRF(log_sampling=3))  # the preset's own PosEncError passes as it is
    with pytest.raises(PosEncError, match="log_sampling must be True or False"):
        FIELDS.get("test-refusing")


def test_a_preset_instance_must_be_a_frozen_dataclass() -> None:
    from posenc.timesteps import TimestepConvention

    @dataclass
    class Mutable(TimestepConvention):
        scale: float = 1.0

        def plan(self, dim: Any) -> Any:
            return Diffusers(scale=self.scale).plan(dim)

    class Plain(TimestepConvention):  # not a dataclass
        def plan(self, dim: Any) -> Any:
            return Diffusers().plan(dim)

    for preset in (Mutable(), Plain()):
        with pytest.raises(PosEncError, match="must be a frozen dataclass instance"):
            TIMESTEPS.register(f"test-mutable-{type(preset).__name__}", preset)


def _junk_plans() -> list[tuple[Any, Any, str]]:
    import posenc
    from posenc import conventions, conventions_nd
    from posenc.fields import FieldConvention
    from posenc.timesteps import TimestepConvention

    @dataclass(frozen=True)
    class JunkTimestep(TimestepConvention):
        def plan(self, dim: Any) -> Any:
            return 5

    @dataclass(frozen=True)
    class JunkSinusoid(conventions.Convention):
        def plan(self, d_model: Any) -> Any:
            return None

    @dataclass(frozen=True)
    class JunkNd(conventions_nd.NdConvention):
        def plan(self, d_model: Any, n_axes: Any) -> Any:
            return "plan"

    @dataclass(frozen=True)
    class JunkField(FieldConvention):
        def plan(self, n_freqs: Any) -> Any:
            return [1, 2]

    return [
        (JunkTimestep(), lambda c: posenc.timestep_embedding(1.0, 8, convention=c),
         r"JunkTimestep\(\)\.plan\(8\) returned 5, not a TimestepPlan"),
        (JunkSinusoid(), lambda c: posenc.encode([1], 4, convention=c),
         r"JunkSinusoid\(\)\.plan\(4\) returned None, not a Plan"),
        (JunkNd(), lambda c: posenc.encode_nd([[1, 2]], 8, convention=c),
         r"JunkNd\(\)\.plan\(8, 2\) returned 'plan', not a NdPlan"),
        (JunkField(), lambda c: posenc.nerf_encoding([0.5], 2, convention=c),
         r"JunkField\(\)\.plan\(2\) returned \[1, 2\], not a FieldPlan"),
    ]


@pytest.mark.parametrize("case", range(4), ids=["timesteps", "sinusoid", "n-D", "fields"])
def test_a_plan_that_returns_junk_is_a_posenc_error_naming_the_preset(case: int) -> None:
    # before: AttributeError 'int' object has no attribute 'ladder' (and 'n_axes', 'include_input') deep inside
    preset, call, why = _junk_plans()[case]
    with pytest.raises(PosEncError, match=why):
        call(preset)
