"""The RoPE settings, declared once (posenc.rope.spec.RopeSettings): typed, shared, and never ignored.

Before, the keyword block ``base=default(10000.0), …, ladder=default("shared")``
was copied into every RoPE signature, the defaults marked so that a spec could
tell "passed" from "left out". Now one TypedDict is every signature's
``**settings``; the defaults live only in :class:`posenc.RopeConfig`'s fields,
a key passed is a key given, and an unknown one is refused by name.
"""

from __future__ import annotations

import importlib.util
import inspect
import typing
from typing import Any

import numpy as np
import pytest

import posenc
from posenc import PosEncError, RopeConfig
from posenc.rope.spec import FREQUENCY_SETTINGS, ROPE_SETTINGS, RopeFrequencySettings, RopeSettings
from posenc.support.vocabulary import LadderSharing, RopeLayout, SectionLayout


def test_the_settings_carry_the_literal_types() -> None:
    hints = typing.get_type_hints(RopeSettings)
    assert (hints["layout"], hints["section_layout"], hints["ladder"]) == (RopeLayout, SectionLayout, LadderSharing)
    assert typing.get_args(hints["layout"]) == ("half", "interleaved", "head_half")
    assert set(typing.get_type_hints(RopeFrequencySettings)) == FREQUENCY_SETTINGS == ROPE_SETTINGS - {"layout"}
    # the defaults are RopeConfig's fields, nowhere else
    fields = {f.name: f.default for f in RopeConfig.__dataclass_fields__.values()}
    assert {k: fields[k] for k in ("base", "layout", "section_layout", "ladder")} == {
        "base": 10000.0, "layout": "half", "section_layout": "contiguous", "ladder": "shared"}


def _public() -> dict[str, Any]:
    found = {"posenc.apply_rope": posenc.apply_rope, "posenc.rope_cos_sin": posenc.rope_cos_sin,
             "posenc.rope_frequencies": posenc.rope_frequencies}
    if importlib.util.find_spec("torch") is not None:
        import posenc.torch as pt
        found.update({"posenc.torch.apply_rope": pt.apply_rope,
                      "posenc.torch.RotaryEmbedding": pt.RotaryEmbedding.__init__})
    if importlib.util.find_spec("jax") is not None:
        import posenc.jax as pj
        found.update({"posenc.jax.apply_rope": pj.apply_rope, "posenc.jax.rope_cos_sin": pj.rope_cos_sin,
                      "posenc.jax.rope_frequencies": pj.rope_frequencies})
    if importlib.util.find_spec("flax") is not None:
        import posenc.jax as pj
        found["posenc.jax.RotaryEmbedding"] = pj.RotaryEmbedding.__init__
    return found


@pytest.mark.parametrize("name", sorted(_public()))
def test_every_rope_signature_takes_the_one_settings_declaration(name: str) -> None:
    params = inspect.signature(_public()[name]).parameters
    var = [p for p in params.values() if p.kind is p.VAR_KEYWORD]
    assert [str(p.annotation) for p in var] in (["Unpack[RopeSettings]"], ["Unpack[RopeFrequencySettings]"])
    assert not ROPE_SETTINGS & set(params)  # no setting spelled out again beside it
    marked = {n: p.default for n, p in params.items() if isinstance(p.default, (str, float))
              and type(p.default) not in (str, float)}
    assert marked == {}


@pytest.mark.parametrize(("call", "allowed"), [
    (lambda: posenc.rope_frequencies(8, bsae=5.0), FREQUENCY_SETTINGS),
    (lambda: posenc.rope_cos_sin([0, 1], 8, bsae=5.0), FREQUENCY_SETTINGS),
    (lambda: posenc.apply_rope(np.ones((2, 8)), [0, 1], bsae=5.0), ROPE_SETTINGS),
], ids=["rope_frequencies", "rope_cos_sin", "apply_rope"])
def test_an_unknown_setting_is_refused_by_name_with_the_allowed_ones(call: Any, allowed: frozenset[str]) -> None:
    with pytest.raises(PosEncError) as info:
        call()
    assert str(info.value) == (f"unknown RoPE setting bsae=5.0: the settings are {', '.join(sorted(allowed))} "
                               "(or spec=, a posenc.RopeConfig)")


def test_layout_is_no_setting_of_the_tables() -> None:
    with pytest.raises(PosEncError, match="unknown RoPE setting layout='interleaved'"):
        posenc.rope_cos_sin([0, 1], 8, layout="interleaved")  # type: ignore[call-arg]


@pytest.mark.parametrize("settings", [{"layout": "half"}, {"base": 10000.0}, {"section_layout": "contiguous"}])
def test_a_setting_beside_a_spec_is_refused_even_at_its_default(settings: dict[str, Any]) -> None:
    cfg = RopeConfig(8)
    with pytest.raises(PosEncError, match="part of the spec, so leave them out beside it"):
        posenc.apply_rope(np.ones((2, 8)), [0, 1], spec=cfg, **settings)
    if "layout" not in settings:
        with pytest.raises(PosEncError, match="part of the spec"):
            posenc.rope_frequencies(cfg, **settings)


def test_none_beside_a_spec_is_left_out_for_the_settings_whose_default_is_none() -> None:
    cfg = RopeConfig(8, layout="interleaved")
    x = np.ones((2, 8))
    assert np.array_equal(posenc.apply_rope(x, [0, 1], spec=cfg, scaling=None, rotary_dim=None, sections=None),
                          posenc.apply_rope(x, [0, 1], spec=cfg))


def test_a_section_setting_beside_a_sections_object_is_refused_even_at_its_default() -> None:
    sec = posenc.Sections((2, 2))
    with pytest.raises(PosEncError, match=r"^section_layout='contiguous' beside a Sections"):
        posenc.rope_cos_sin([[0, 1]], 8, sections=sec, section_layout="contiguous")
    assert posenc.rope_frequencies(8, sections=sec).sections == sec
