"""outside_compile: each decorated callable named as users reach it, from its own ``__qualname__``.

The name is the one a ``fullgraph=True`` compile's error shows (``posenc.conventions.get computes in NumPy
...``); these tests need no torch: they read the registry the decorator fills.
"""

from __future__ import annotations

import re

import pytest

import posenc
from posenc.sinusoidal import conventions, conventions_nd
from posenc.support import compile as pc


def _reach(name: str):
    obj = posenc
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj.__post_init__ if isinstance(obj, type) else obj


def test_every_name_outside_rope_is_the_path_users_call():
    # RoPE's files (posenc.rope.*) still name themselves by hand, until they move to the bare form
    names = {n: fn for n, fn in pc._REGISTRY.items() if not fn.__module__.startswith("posenc.rope.")}
    assert len(names) >= 40, sorted(names)
    wrong = [n for n, fn in names.items() if getattr(_reach(n), "__wrapped__", None) is not fn]
    assert wrong == [], wrong


def test_the_name_comes_from_the_qualname_and_the_module():
    expected = {
        posenc.encode: "encode",
        conventions.get: "conventions.get",
        conventions.Convention.encode: "conventions.Convention.encode",
        conventions.Fairseq.__post_init__: "conventions.Fairseq",
        conventions_nd.get: "conventions_nd.get",
        posenc.bias.Mpt.__post_init__: "bias.alibi.Mpt",
        posenc.bias.register_alibi: "bias.register_alibi",
        posenc.alibi_bias: "alibi_bias",
        posenc.bias.T5Buckets.__post_init__: "bias.t5.T5Buckets",
        posenc.register: "register",
        posenc.from_hf_config: "from_hf_config",
    }
    got = {fn: pc.public_name(fn.__wrapped__) for fn in expected}
    assert got == expected
    assert all(pc._REGISTRY[name] is fn.__wrapped__ for fn, name in expected.items())


def test_the_reason_names_the_public_path():
    assert pc.reason(pc.public_name(conventions.get.__wrapped__)).startswith("posenc.conventions.get computes in")


def test_the_named_form_still_names_by_hand():
    @pc.outside_compile("test_compile.by_hand")
    def by_hand(x):
        return x + 1

    assert by_hand(1) == 2 and pc._REGISTRY["test_compile.by_hand"] is by_hand.__wrapped__


def test_two_callables_under_one_name_are_refused():
    """Each name has one wrapper, calling one callable: a second would have run the first's under torch.compile."""

    def encode(x):
        return x

    encode.__module__, encode.__qualname__ = "posenc.sinusoidal.somewhere_else", "encode"
    with pytest.raises(RuntimeError, match=re.escape("'encode' names posenc.sinusoidal.encoding.encode already")):
        pc.outside_compile(encode)
    assert pc._REGISTRY["encode"] is posenc.encode.__wrapped__
