"""Marked defaults (posenc.support.arguments): a setting passed beside a spec or preset is refused, at its default too.

``base=10000.0`` typed beside a spec of base 500000, or ``layout="interleaved"``
beside the split tensor2tensor convention, is a conflict: before, it was
taken for "left out" (it equals the default) and the table silently followed
the spec. Each signature's default is now a marked value that equals the
default and shows as it, so the entry point can tell it from a value passed.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import PosEncError, RopeConfig
from posenc.bias import T5Buckets
from posenc.support.arguments import check_flag, default, left_out

#: the settings a spec or a preset holds: every public signature's default for these is marked
HELD = {"base", "layout", "section_layout", "ladder", "num_buckets", "max_distance", "bidirectional"}


@given(st.one_of(st.floats(allow_nan=False), st.integers(), st.booleans(), st.text()))
def test_a_marked_default_is_its_value_in_every_way_but_one(value) -> None:
    d = default(value)
    assert d == value and hash(d) == hash(value) and repr(d) == repr(value) and str(d) == str(value)
    assert bool(d) == bool(value)
    assert left_out(d) and not left_out(value)
    assert left_out(pickle.loads(pickle.dumps(d)))  # a module pickled with its defaults keeps them marked


def test_only_a_marked_default_is_left_out() -> None:
    for v in (None, 0, 0.0, "", False, np.float64(10000.0), np.array(10000.0)):
        assert not left_out(v)
    with pytest.raises(TypeError, match="marks a bool, int, float or str"):
        default([1, 2])


def test_a_flag_default_passes_as_a_flag_and_is_stored_plain() -> None:
    assert check_flag(default(True), "bidirectional") is True
    assert T5Buckets(default(False)).bidirectional is False
    assert RopeConfig(8).section_layout == "contiguous" and not left_out(RopeConfig(8).section_layout)


def _public_callables(module):
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            if not dataclasses.is_dataclass(obj):  # a variant's fields are its values, not settings beside one
                yield f"{module.__name__}.{name}", obj.__init__
        elif callable(obj):
            yield f"{module.__name__}.{name}", obj


# the RoPE signatures hold no marked default any more: their settings are one **settings (posenc.rope.spec.RopeSettings)
@pytest.mark.parametrize(("module", "least"), [("posenc", 25), ("posenc.torch", 7), ("posenc.jax", 12)])
def test_every_public_signature_marks_the_settings_a_spec_or_preset_holds(module, least) -> None:
    mod = pytest.importorskip(module)  # make test installs the torch and jax extras
    seen = 0
    for where, fn in _public_callables(mod):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        for p in sig.parameters.values():
            if p.name in HELD and p.default is not inspect.Parameter.empty and p.default is not None:
                seen += 1
                assert left_out(p.default), f"{where}({p.name}={p.default!r}): a plain default"
                assert repr(p.default) in str(sig)  # help() shows the plain value
    assert seen >= least


CFG = RopeConfig(8, base=500000.0, layout="interleaved", sections=(2, 2), section_layout="interleaved")
X = np.ones((3, 8), np.float32)
POS = np.stack([np.arange(3), np.arange(3)], axis=-1)


@pytest.mark.parametrize(("call", "shown"), [
    (lambda: posenc.apply_rope(X, POS, spec=CFG, base=10000.0), "base=10000.0"),
    (lambda: posenc.apply_rope(X, POS, spec=CFG, layout="half"), "layout='half'"),
    (lambda: posenc.apply_rope(X, POS, spec=CFG, section_layout="contiguous"), "section_layout='contiguous'"),
    (lambda: posenc.apply_rope(X, POS, spec=CFG, ladder="shared"), "ladder='shared'"),
    (lambda: posenc.rope_cos_sin(POS, CFG, base=10000.0), "base=10000.0"),
    (lambda: posenc.rope_frequencies(CFG, base=10000.0), "base=10000.0"),
    (lambda: posenc.t5_bucket([1, 2], spec=T5Buckets(num_buckets=16), num_buckets=32), "num_buckets=32"),
    (lambda: posenc.t5_bucket([1, 2], spec=T5Buckets(bidirectional=False), bidirectional=True), "bidirectional"),
], ids=["base", "layout", "section_layout", "ladder", "cos_sin", "frequencies", "t5 num_buckets", "t5 flag"])
def test_a_default_value_passed_beside_a_spec_is_refused(call, shown) -> None:
    with pytest.raises(PosEncError, match=rf"{shown}.*part of the spec"):
        call()


def test_left_out_beside_a_spec_the_spec_decides() -> None:
    want = posenc.apply_rope(X, POS, layout="interleaved", **CFG.kwargs())
    assert np.array_equal(posenc.apply_rope(X, POS, spec=CFG), want)
    assert np.array_equal(posenc.rope_cos_sin(POS, CFG)[0], posenc.rope_cos_sin(POS, 8, **CFG.kwargs())[0])


@pytest.mark.parametrize("call", [
    lambda: posenc.encode(1, 4, layout="interleaved", convention="tensor2tensor"),  # t2t is split
    lambda: posenc.table(3, 4, base=10000.0, convention="keras"),
    lambda: posenc.encode_nd([[0, 1]], 8, base=10000.0, convention="mae"),
], ids=["encode layout", "table base", "encode_nd base"])
def test_a_default_value_passed_beside_a_convention_is_refused(call) -> None:
    with pytest.raises(PosEncError, match="part of the convention"):
        call()


def test_section_settings_beside_a_sections_object_are_refused_at_their_defaults() -> None:
    sec = posenc.Sections((2, 2), "interleaved")
    with pytest.raises(PosEncError, match="inside the Sections"):
        posenc.rope_cos_sin(POS, 8, sections=sec, section_layout="contiguous")
    with pytest.raises(PosEncError, match="inside the Sections"):
        RopeConfig(8, sections=sec, ladder="per_axis")
    # the spec's own fields: one at its default value is a field left as it is (a dataclass cannot mark it)
    assert RopeConfig(8, sections=sec, section_layout="contiguous").section_layout == "interleaved"


def test_the_command_passes_only_what_was_typed(capsys) -> None:
    from posenc.cli import main

    assert main(["ladder", "--grid", "4,4", "--d-model", "16", "--convention", "mae"]) == 0
    capsys.readouterr()
    assert main(["ladder", "--grid", "4,4", "--d-model", "16", "--convention", "mae", "--base", "10000"]) == 2
    err = capsys.readouterr().err
    assert "part of the convention" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
