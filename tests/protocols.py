"""What every backend-protocol test checks, written once (tests/<family>/test_<family>_backend.py read it).

A family's protocol (a runtime-checkable :class:`typing.Protocol`) declares
exactly its primitives' tuple; each backend implements every primitive and
nothing else; an object missing one is no backend; and a call's whole
observable result (its values' dtype and bits, or its refusal's message) is
compared across backends.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from posenc import PosEncError


def check_declared(protocol: type, primitives: tuple[str, ...], module: ModuleType) -> None:
    """The protocol declares exactly ``primitives``; its module exports the two and nothing else."""
    declared = {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)
    assert declared == set(primitives)
    assert sorted(module.__all__) == sorted([protocol.__name__, *(n for n, v in vars(module).items()
                                                                  if v is primitives)])


def check_implements_only(backend: Any, protocol: type, primitives: tuple[str, ...]) -> None:
    """``backend`` is an instance of the protocol, its public attributes exactly the primitives."""
    assert isinstance(backend, protocol)
    assert {n for n in dir(type(backend)) if not n.startswith("_")} == set(primitives)
    assert [n for n in primitives if n != "name" and not callable(getattr(backend, n))] == []


def check_missing_one_is_no_backend(protocol: type, primitives: tuple[str, ...]) -> None:
    """An object with the name and all primitives but the last is no backend."""
    half = type("Half", (), {"name": "half", **{n: (lambda self, *a: None) for n in primitives[1:-1]}})
    assert not isinstance(half(), protocol)


def outcome(call: Any) -> tuple[str, Any]:
    """("values", (dtype name, values)) or ("refused", the message): a call's whole observable result.

    Floating values come back as float64 (which holds every narrower value, signed zeros included), integers
    as int64; a torch dtype is named as NumPy names it.
    """
    try:
        out = call()
    except PosEncError as e:
        return "refused", str(e)
    if hasattr(out, "detach"):  # a torch tensor (bfloat16 too)
        name = str(out.dtype).removeprefix("torch.")
        out = out.detach().cpu()
        out = out.double() if out.is_floating_point() else out.long()
    else:
        name = str(np.dtype(out.dtype))
    arr = np.asarray(out)
    return "values", (name, arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64))


def check_same(ours: Any, numpys: Any, *, dtype: bool = True) -> None:
    """``ours`` gives NumPy's values bit for bit (its dtype too, unless ``dtype`` is False), or its refusal."""
    kind, got = outcome(ours)
    want_kind, want = outcome(numpys)
    assert kind == want_kind, (got, want)
    if kind == "refused":
        assert got == want
        return
    if dtype:
        assert got[0] == want[0]
    assert got[1].shape == want[1].shape and got[1].tobytes() == want[1].tobytes(), (got, want)


def check_same_refusal(ours: str, numpys: str) -> None:
    """The same rule and the same value named (JAX's position rule adds its 32-bit range to the same words)."""
    head, comma, got = numpys.rpartition(", got ")
    same = ours.startswith(head) and ours.endswith(f", got {got}") if comma else ours == numpys
    assert same, (ours, numpys)
