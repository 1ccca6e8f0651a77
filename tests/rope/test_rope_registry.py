"""The RoPE registries trust nothing they are given (issues 31, 36): scaling factories, scalings, preset builders.

Each case failed on main before: a factory of the wrong arity was registered and raised a raw TypeError at the first
config; a factory's own error escaped raw; a scale() returning junk raised AttributeError 'inv_freq';
rope_preset("flux", multi_axis=None) raised dataclasses' plain ValueError.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

import posenc
from posenc import PosEncError, from_hf_config, rope_frequencies, rope_preset
from posenc.rope import register_scaling
from posenc.rope.presets import ROPE_PRESETS
from posenc.rope.registry import SCALING_FACTORIES
from posenc.rope.scaling import Scaled


@pytest.fixture
def restored() -> Iterator[None]:
    """Leave both registries as they were (their dicts are replaced, never changed in place: a snapshot)."""
    saved = [(reg, reg._items, reg._keys) for reg in (SCALING_FACTORIES, ROPE_PRESETS)]
    yield
    for reg, items, keys in saved:
        with reg._lock:
            reg._items, reg._keys = items, keys


def _config(rope_type: str) -> dict[str, Any]:
    return {"head_dim": 8, "rope_parameters": {"rope_type": rope_type, "factor": 2.0}}


@pytest.mark.parametrize(("factory", "signature"), [
    (lambda: None, r"\(\)"),
    (lambda rope: None, r"\(rope\)"),
    (lambda rope, cfg, extra: None, r"\(rope, cfg, extra\)"),
    (lambda *, rope, cfg: None, r"\(\*, rope, cfg\)"),
], ids=["no argument", "one", "three", "keyword-only"])
def test_a_scaling_factory_of_the_wrong_arity_is_refused_when_registered(restored: None, factory: Any,
                                                                        signature: str) -> None:
    with pytest.raises(PosEncError, match=r"the scaling factory registered as 'test-arity' must be callable as "
                                          rf"f\(rope_dict, config_dict\), but its signature is {signature}"):
        register_scaling("test-arity", factory)
    assert "test-arity" not in posenc.rope.registry.registered_rope_types()


@pytest.mark.parametrize("factory", [lambda rope, cfg, extra=1: posenc.Linear(2.0),
                                     lambda *args: posenc.Linear(2.0), lambda rope, cfg=None, **kw: posenc.Linear(2.0)],
                         ids=["a default", "*args", "**kwargs"])
def test_a_factory_that_takes_the_two_arguments_is_registered(restored: None, factory: Any) -> None:
    register_scaling("test-fits", factory)
    assert from_hf_config(_config("test-fits")).scaling == posenc.Linear(2.0)


def test_a_factory_that_raises_is_a_posenc_error_naming_the_rope_type(restored: None) -> None:
    def broken(rope: Any, cfg: Any) -> Any:
        return rope["no such key"]

    register_scaling("test-raising", broken)
    with pytest.raises(PosEncError, match=r"the scaling factory registered as 'test-raising' raised KeyError: "
                                          r"'no such key'") as info:
        from_hf_config(_config("test-raising"))
    assert isinstance(info.value.__cause__, KeyError)  # the original is chained
    # a built-in factory's own refusal passes as it was
    with pytest.raises(PosEncError, match="factor"):
        from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "linear", "factor": -1.0}})


@dataclass(frozen=True, eq=False)  # hashable by identity, whatever it holds
class Junk:
    """A scaling (scale and cache_key, hashable) whose scale() returns what it is given."""

    result: Any

    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Any:
        return self.result

    def cache_key(self, seq_len: int | None) -> None:
        return None


_W = [Decimal(1), Decimal("0.01")]  # the right count for rotary_dim 4


@pytest.mark.parametrize(("result", "why"), [
    (3, r"returned 3, not a Scaled"),
    ((_W, Decimal(100), 1.0), r"returned \[.*\], not a Scaled"),  # a plain tuple, though Scaled is one
    (Scaled(_W[:1], Decimal(100), 1.0), r"returned inv_freq \[.*\]: expected 2 finite Decimals"),
    (Scaled([1.0, 0.01], Decimal(100), 1.0), r"returned inv_freq \[1\.0, 0\.01\]: expected 2 finite Decimals"),
    (Scaled([Decimal("NaN"), Decimal(1)], Decimal(100), 1.0), r"returned inv_freq .*: expected 2 finite Decimals"),
    (Scaled(_W, Decimal(100), float("nan")), r"returned base .* and attention factor nan: expected"),
    (Scaled(_W, "100", 1.0), r"returned base '100' and attention factor 1\.0: expected a finite Decimal"),
    (Scaled(_W, Decimal(100), -1.0), r"gives attention factor -1; it must be in \(0, 2\*\*15\]"),
    (Scaled([Decimal(10) ** 20, Decimal(1)], Decimal(100), 1.0), r"gives ω_0 = 1e\+20, outside"),
], ids=["int", "tuple", "short", "floats", "nan frequency", "nan attention", "str base", "negative attention",
        "frequency too high"])
def test_a_scale_that_returns_junk_is_a_posenc_error_naming_the_scaling(result: Any, why: str) -> None:
    scaling = Junk(result)
    with pytest.raises(PosEncError, match=why) as info:
        rope_frequencies(4, base=100.0, scaling=scaling)
    assert "Junk(" in str(info.value)


@dataclass(frozen=True, eq=False)
class Raising(Junk):
    def scale(self, dim: int, base: Decimal, seq_len: int | None) -> Any:
        raise ZeroDivisionError("no frequencies")


def test_a_scale_that_raises_is_a_posenc_error_naming_the_scaling() -> None:
    with pytest.raises(PosEncError, match=r"Raising\(result=None\)\.scale\(4, 100\.0, None\) raised "
                                          r"ZeroDivisionError: no frequencies"):
        rope_frequencies(4, base=100.0, scaling=Raising(None))


def test_a_good_user_scaling_keeps_its_bits() -> None:
    linear = posenc.Linear(4.0)
    user = Junk(linear.scale(8, Decimal(100), None))
    assert np.array_equal(rope_frequencies(8, base=100.0, scaling=user).inv_freq,
                          rope_frequencies(8, base=100.0, scaling=linear).inv_freq)


# ---------------------------------------------------------------- rope_preset's overrides


def test_multi_axis_is_refused_naming_the_field_and_what_sets_it() -> None:
    # before: ValueError "field multi_axis is declared with init=False, it cannot be specified with replace()",
    # while the unknown-field message listed multi_axis as a field
    with pytest.raises(PosEncError, match=r"rope_preset\('flux', multi_axis=\.\.\.\): multi_axis is derived from "
                                          r"sections, section_layout and ladder") as info:
        rope_preset("flux", multi_axis=None)
    assert "fields: base, head_dim, ladder, layout, max_position, rotary_dim, scaling, section_layout, sections" in (
        str(info.value))
    with pytest.raises(PosEncError, match=r"rope_preset\('flux'\) has no field 'nope'; fields: base, head_dim, "
                                          r"ladder, layout, max_position, rotary_dim, scaling, section_layout, "
                                          r"sections$"):
        rope_preset("flux", nope=1)


class _Hostile:
    def __iter__(self) -> Any:
        raise RuntimeError("no iteration")

    def __len__(self) -> int:
        raise RuntimeError("no length")


@pytest.mark.parametrize(("override", "why"), [
    ({"rotary_dim": 64}, r"sections \(8, 28, 28\) hold 64 pairs; the rotary dimension 64 has 32"),
    ({"sections": (1, 2)}, r"sections \(1, 2\) hold 3 pairs"),
    ({"sections": None}, r"ladder='per_axis': only multi-axis RoPE has a section layout and a ladder"),
    ({"sections": _Hostile()}, r"RuntimeError: no iteration"),
    ({"layout": "sideways"}, r"layout must be one of"),
    ({"section_layout": "diagonal"}, r"section_layout must be one of"),
    ({"ladder": "none"}, r"ladder must be one of"),
    ({"scaling": posenc.Linear(2.0)}, r"per_axis"),
    ({"scaling": "yarn"}, r"scaling must be None"),
    ({"max_position": 0}, r"max_position must be"),
], ids=["rotary_dim", "sections", "sections None", "sections hostile", "layout", "section_layout", "ladder",
        "scaling with per-axis ladders", "scaling str", "max_position"])
def test_every_override_the_spec_refuses_is_a_posenc_error_naming_the_override(override: dict[str, Any],
                                                                                why: str) -> None:
    (key,) = override
    with pytest.raises(PosEncError, match=rf"^rope_preset\('flux', {key}=.*\): .*{why}"):
        rope_preset("flux", **override)


def test_a_registered_preset_builder_is_checked(restored: None) -> None:
    with pytest.raises(PosEncError, match=r"must be callable as f\(head_dim=\.\.\., base=\.\.\.\), but its "
                                          r"signature is \(\)"):
        ROPE_PRESETS.register("test-narrow", lambda: None)
    with pytest.raises(PosEncError, match=r"must be callable as f\(\), but its signature is \(width\)"):
        ROPE_PRESETS.register("test-narrow", lambda width: None)

    def raising(head_dim: int = 64, base: float = 10000.0) -> Any:
        raise IndexError("no axes")

    ROPE_PRESETS.register("test-raising-builder", raising)
    with pytest.raises(PosEncError, match=r"the RoPE preset builder registered as 'test-raising-builder' raised "
                                          r"IndexError: no axes"):
        rope_preset("test-raising-builder")
    ROPE_PRESETS.register("test-junk-builder", lambda head_dim=64, base=10000.0: (head_dim, base))
    with pytest.raises(PosEncError, match=r"the RoPE preset builder 'test-junk-builder' returned \[64, 10000\.0\], "
                                          r"not a RopeConfig"):
        rope_preset("test-junk-builder")
