"""The compile guard, applied once at the boundary (:func:`posenc.support.compile.guard_public`).

Every public callable is guarded, under the path users call it by: the name a ``fullgraph=True`` compile's
error shows (``posenc.conventions.get computes in NumPy ...``). These tests need no torch: they read the
registry the guard fills.
"""

from __future__ import annotations

import pathlib
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


def test_every_guarded_name_is_the_path_users_call():
    assert len(pc._REGISTRY) >= 80, sorted(pc._REGISTRY)
    wrong = [n for n, fn in pc._REGISTRY.items()
             if not n.startswith("test_compile.") and getattr(_reach(n), "__wrapped__", None) is not fn]
    assert wrong == [], wrong


def _public_callables() -> dict[str, object]:
    """Every function and field-checking class users reach: ``posenc.__all__`` and the namespaces' ``__all__``."""
    found: dict[str, object] = {}
    for prefix, module in [("", posenc)] + [(f"{n}.", getattr(posenc, n)) for n in _NAMESPACES]:
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and getattr(obj, "__module__", "").startswith("posenc") and \
                    (not isinstance(obj, type) or "__post_init__" in vars(obj)):
                found.setdefault(prefix + name, obj)
    return found


_NAMESPACES = ("conventions", "conventions_nd", "bias", "rope", "timesteps", "fields")


def test_every_public_callable_is_guarded_and_no_module_decorates_its_own():
    """A new public function is guarded by being exported: the guard is the boundary's, not each module's."""
    unguarded = [n for n, obj in _public_callables().items()
                 if not hasattr(obj.__post_init__ if isinstance(obj, type) else obj, "__wrapped__")]
    assert unguarded == [], unguarded
    src = pathlib.Path(posenc.__file__).parent
    decorated = [str(f.relative_to(src)) for f in src.rglob("*.py")
                 if "@outside_compile" in f.read_text() and f.name != "compile.py"]
    assert decorated == [], decorated


def test_a_function_called_inside_the_package_meets_the_same_guard():
    """The guard replaces the module globals too, as a decorator would: posenc's own calls go through it."""
    from posenc.sinusoidal import encoding

    assert encoding.encode is posenc.encode and posenc.sinusoidal.encode is posenc.encode
    assert conventions.get is posenc.conventions.get and hasattr(conventions.get, "__wrapped__")


def test_the_name_comes_from_the_path_users_call():
    expected = {
        posenc.encode: "encode",
        conventions.get: "conventions.get",
        conventions.Convention.encode: "conventions.Convention.encode",
        conventions.Fairseq.__post_init__: "conventions.Fairseq",
        conventions_nd.get: "conventions_nd.get",
        posenc.bias.Mpt.__post_init__: "bias.Mpt",
        posenc.bias.register_alibi: "bias.register_alibi",
        posenc.alibi_bias: "alibi_bias",
        posenc.bias.T5Buckets.__post_init__: "bias.T5Buckets",
        posenc.register: "register",
        posenc.from_hf_config: "from_hf_config",
        posenc.VisionGrid.from_processor.__func__: "VisionGrid.from_processor",
    }
    assert all(pc._REGISTRY[name] is fn.__wrapped__ for fn, name in expected.items())


def test_the_reason_names_the_public_path():
    assert pc.reason("conventions.get").startswith("posenc.conventions.get computes in")


def test_the_decorator_names_by_hand():
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
        pc.outside_compile("encode")(encode)
    assert pc._REGISTRY["encode"] is posenc.encode.__wrapped__


def test_a_guarded_call_inside_a_guard_runs_straight_through_in_that_thread_only(monkeypatch):
    """Nested guards cost nothing (nothing below the first can be traced); another thread's calls still guard."""
    import threading

    pytest.importorskip("torch")
    import torch._dynamo  # noqa: F401  (what torch.compile loads: the guards are live)

    pc.prepare()
    seen: list[str] = []
    real = pc._outside
    monkeypatch.setattr(pc, "_outside", lambda name: (seen.append(name), real(name))[1])
    posenc.encode([0, 1], 4)  # calls conventions.get and more inside
    assert seen == ["encode"]

    inside, release = threading.Event(), threading.Event()

    def hold():
        inside.set()
        release.wait(10)

    holding = pc.outside_compile("test_compile.hold")(hold)
    pc.prepare()
    worker = threading.Thread(target=holding)
    worker.start()
    try:
        assert inside.wait(10)
        seen.clear()
        posenc.encode([0, 1], 4)  # this thread is inside no guard
        assert seen == ["encode"]
    finally:
        release.set()
        worker.join(10)
    assert pc._STATE.depth == 0
