"""Settings beside a spec or preset (posenc.support.arguments): a setting passed is refused, at its default too.

``base=10000.0`` typed beside a spec of base 500000, or ``layout="interleaved"``
beside the split tensor2tensor convention, is a conflict: before, it was
taken for "left out" (it equals the default) and the table silently followed
the spec. Outside RoPE each family's settings are now keywords typed by one
``TypedDict`` (``**settings: Unpack[SinusoidSettings]``), with the defaults in
the spec's fields alone, so a setting present was passed; RoPE's signatures
still mark their defaults (:func:`default`, being removed).
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import re

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


@pytest.mark.parametrize(("module", "least"), [("posenc", 10), ("posenc.torch", 3), ("posenc.jax", 4)])
def test_beside_a_convention_or_spec_no_setting_has_a_plain_default(module, least) -> None:
    """A plain default beside a preset could not be told from the same value typed: the settings come as keywords."""
    mod = pytest.importorskip(module)  # make test installs the torch and jax extras
    shared = 0
    for where, fn in _public_callables(mod):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        rest = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
        if rest and re.fullmatch(r"Unpack\[\w+Settings\]", str(rest[0].annotation)):
            shared += 1
        if not {"convention", "spec"} & set(sig.parameters):
            continue
        for p in sig.parameters.values():
            if p.name in HELD and p.default is not inspect.Parameter.empty and p.default is not None:
                # RoPE's marked defaults, until its signatures take **settings too
                assert left_out(p.default), f"{where}({p.name}={p.default!r}): a plain default beside a preset"
                assert repr(p.default) in str(sig)  # help() shows the plain value
    assert shared >= least


def _torch():
    return pytest.importorskip("posenc.torch")


def _jax():
    return pytest.importorskip("posenc.jax")


@pytest.mark.parametrize(("call", "where", "allowed"), [
    (lambda: posenc.encode(0, 4, bas=100.0), "encode", "'base', 'layout'"),
    (lambda: posenc.table(2, 4, Layout="split"), "table", "'base', 'layout'"),
    (lambda: posenc.shift(posenc.encode(0, 4), 1, base=100.0, lay="split"), "shift", "'base', 'layout'"),
    (lambda: posenc.shift_matrix(1, 4, layuot="split"), "shift_matrix", "'base', 'layout'"),
    (lambda: posenc.aliasing(0, 1, 4, dtype=np.float32), "aliasing", "'base', 'layout'"),
    (lambda: posenc.encode_nd([[0, 1]], 8, layout="split"), "encode_nd", "'base'"),
    (lambda: posenc.grid_report((4, 4), 8, temperature=100.0), "grid_report", "'base'"),
    (lambda: posenc.grid_similarity((3, 3), 8, (1, 1), bse=10.0), "grid_similarity", "'base'"),
    (lambda: posenc.t5_bucket([1], buckets=16), "t5_bucket", "'bidirectional', 'num_buckets', 'max_distance'"),
    (lambda: posenc.t5_bucket_edges(max_dist=64), "t5_bucket_edges", "'bidirectional'"),
    (lambda: _torch().encode([0], 4, bas=1.0), "posenc.torch.encode", "'base', 'layout'"),
    (lambda: _torch().SinusoidalPositionalEncoding(4, bas=1.0), "SinusoidalPositionalEncoding", "'layout'"),
    (lambda: _torch().T5RelativeBias(2, bidirectionl=False), "T5RelativeBias", "'num_buckets'"),
    (lambda: _jax().encode(np.array([0], np.int32), 4, bas=1.0), "posenc.jax.encode", "'base', 'layout'"),
    (lambda: _jax().table(2, 4, bas=1.0), "posenc.jax.table", "'base', 'layout'"),
    (lambda: _jax().encode_nd(np.array([[0, 1]], np.int32), 8, bas=1.0), "posenc.jax.encode_nd", "'base'"),
    (lambda: _jax().t5_bucket(np.array([1], np.int32), buckets=16), "posenc.jax.t5_bucket", "'max_distance'"),
], ids=lambda v: v if isinstance(v, str) and "'" not in v else None)
def test_an_unknown_setting_is_refused_by_name(call, where, allowed) -> None:
    """A typo or another family's setting, a PosEncError naming it and the settings: before, Python's TypeError."""
    with pytest.raises(PosEncError, match=re.escape(f"{where}() got an unexpected keyword argument")) as err:
        call()
    assert allowed in str(err.value), err.value


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
