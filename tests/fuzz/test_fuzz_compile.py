"""Every public name under torch.compile (issue 18): eager's bits, or an error that names posenc and the remedy.

Driven by the fuzz table: every name of :data:`test_fuzz_api.CASES` (one per
public callable of ``posenc``) and of ``posenc.torch.__all__`` has a call in
:data:`compile_cases.COMPILE`, run compiled with ``backend="aot_eager"``
(Dynamo's tracing, graph breaks and guards, without inductor's C++ builds),
``fullgraph`` off and on, ``dynamic`` off and on. The outcomes allowed:

- ``fullgraph=False``: the eager result, bit for bit (signs of zeros too),
  with or without a graph break;
- ``fullgraph=True``: the same, or an error whose message names the posenc
  callable and says what to do (``fullgraph=False``, or what to call before
  compiling), never a number from Dynamo's NumPy emulation.

On main, before this test, ``encode``'s zeros came back as ``-0``/``-1`` and
a first compiled call could raise Dynamo's own AssertionError.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch
from compile_cases import compile_cases
from test_fuzz_api import CASES, NOT_CALLED
from torch._dynamo.utils import counters

import posenc
import posenc.torch as pt

_NAMES = compile_cases()
_MODES = [(fg, dyn) for fg in (False, True) for dyn in (False, True)]
_MODE_IDS = [f"{'fullgraph' if f else 'breaks'}-{'dynamic' if d else 'static'}" for f, d in _MODES]
_REMEDY = re.compile(r"fullgraph=False|reserve\(|seq_len=")


def same(a: Any, b: Any) -> bool:
    """Equal to the bit: dtypes, shapes and bytes of arrays and tensors, fields of dataclasses, signs of zeros."""
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        return bool(a.contiguous().view(torch.uint8).equal(b.contiguous().view(torch.uint8)))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return isinstance(b, float) and np.float64(a).tobytes() == np.float64(b).tobytes()
    return type(a) is type(b) and a == b


def run_compiled(module: str, name: str, fullgraph: bool, dynamic: bool) -> tuple[Any, Any, str | None, int]:
    """(eager result, compiled result or None, the fullgraph error or None, graph breaks) for one name."""
    call = _NAMES[module][name]
    torch._dynamo.reset()
    counters.clear()
    want = call.fn(*call.args())
    compiled = torch.compile(call.fn, backend="aot_eager", fullgraph=fullgraph, dynamic=dynamic)
    try:
        got = compiled(*call.args())
    except Exception as exc:  # fullgraph's Unsupported; anything else fails the test below
        if not fullgraph:
            raise
        return want, None, str(exc), 0
    finally:
        torch._dynamo.reset()
    return want, got, None, sum(counters["graph_break"].values())


#: (module, name, dynamic) -> the outcome of that case's fullgraph compile, read by both its modes (run_mode)
_FULLGRAPH: dict[tuple[str, str, bool], tuple[Any, Any, str | None, int]] = {}


def run_mode(module: str, name: str, fullgraph: bool, dynamic: bool) -> tuple[Any, Any, str | None, int]:
    """:func:`run_compiled` with one compile per case and ``dynamic`` where the two modes' bits are the same.

    ``fullgraph=True`` changes only what Dynamo does at a graph break (it raises instead of splitting the graph):
    a call that compiled with it has no break, and ``fullgraph=False`` traces the same one graph, so its outcome
    stands for both modes. Where the fullgraph compile raised, the breaks mode compiles on its own.
    """
    key = (module, name, dynamic)
    if key not in _FULLGRAPH:
        _FULLGRAPH[key] = run_compiled(module, name, True, dynamic)
    outcome = _FULLGRAPH[key]
    if fullgraph or outcome[2] is None:
        return outcome
    return run_compiled(module, name, False, dynamic)


# a case's four modes on one pytest-xdist worker (--dist loadgroup), so they share its compiles
@pytest.mark.parametrize(("fullgraph", "dynamic"), _MODES, ids=_MODE_IDS)
@pytest.mark.parametrize("module, name", [pytest.param(m, n, marks=pytest.mark.xdist_group(f"compile {m} {n}"))
                                          for m, calls in _NAMES.items() for n in sorted(calls)])
def test_compiled_gives_eager_bits_or_names_posenc(module, name, fullgraph, dynamic):
    want, got, error, _ = run_mode(module, name, fullgraph, dynamic)
    if error is None:
        assert same(want, got), (want, got)
        return
    head = error.split("from user code")[0]  # the reason, not the stack (which names posenc's files anyway)
    assert re.search(r"posenc(\.torch)?\.\w", head), head
    assert _REMEDY.search(head), head


def test_every_public_name_has_a_compile_case():
    numpy_names = {n for n in posenc.__all__ if n not in NOT_CALLED} | set(CASES)
    assert numpy_names <= set(_NAMES["posenc"]), sorted(numpy_names - set(_NAMES["posenc"]))
    assert set(pt.__all__) <= set(_NAMES["posenc.torch"]), sorted(set(pt.__all__) - set(_NAMES["posenc.torch"]))
    # the data a compiled function could build (RopeConfig), checked too; results and constants are not callables
    built = {n for n in NOT_CALLED if inspect.isclass(getattr(posenc, n)) and n in _NAMES["posenc"]}
    assert "RopeConfig" in built


def test_every_decorated_numpy_callable_leaves_the_graph_under_its_own_name():
    """The reason a fullgraph compile fails with names the callable the user called (not an inner one)."""
    _, _, error, _ = run_compiled("posenc", "conventions.Fairseq", True, False)
    assert error is not None and "posenc.conventions.Fairseq" in error.split("from user code")[0], error
    _, _, error, _ = run_compiled("posenc.torch", "apply_rope", True, False)
    assert error is not None and "posenc.torch.apply_rope" in error.split("from user code")[0], error


def test_import_posenc_stays_free_of_torch():
    code = "import posenc, sys; posenc.encode([0, 1], 4); assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_posenc_torch_loads_no_dynamo_and_a_compile_meets_its_host_calls_ready():
    """``import posenc.torch`` and eager calls leave torch._dynamo unloaded (~1.5 s at import, ~1 s at exit). When a
    compile loads it, the wrappers are made before anything is traced, and posenc's names point at them (Dynamo
    reads torch's own marker on them, ``_torchdynamo_disable``): a host-only call fails ``fullgraph=True``
    with one line giving its remedy (the rows beyond the table: reserve(); posenc.torch.apply_rope: the module
    to use instead), and without fullgraph it is a graph break with eager's bits."""
    code = (
        "import sys, torch, posenc.torch as pt\n"
        "make = lambda: pt.SinusoidalPositionalEncoding(16)  # rows 0 … 4095: offset 4090 + 8 lies beyond them\n"
        "x, q = torch.zeros(1, 8, 16), torch.randn(1, 2, 8, 16)\n"
        "eager = (make()(x, offset=4090), pt.apply_rope(q, torch.arange(8)))\n"
        "assert 'torch._dynamo' not in sys.modules, 'posenc.torch loaded torch._dynamo'\n"
        "import torch._dynamo, posenc.torch._rows as rows\n"
        "# the names themselves now the disabled functions: Dynamo does not trace into a wrapper first\n"
        "assert pt.apply_rope._torchdynamo_disable and rows.host_rows._torchdynamo_disable\n"
        "cases = ((lambda: (lambda t, pe=make(): pe(t, offset=4090)), x, 'reserve('),\n"
        "         (lambda: (lambda t: pt.apply_rope(t, torch.arange(8))), q, 'posenc.torch.RotaryEmbedding'))\n"
        "for fn, where, text in cases:\n"
        "    try:\n"
        "        torch.compile(fn(), backend='aot_eager', fullgraph=True)(where)\n"
        "    except Exception as exc:\n"
        "        lines = [line for line in str(exc).splitlines() if text in line]\n"
        "        assert len(lines) == 1, str(exc)\n"
        "    else:\n"
        "        raise SystemExit(f'fullgraph traced the host-only call that names {text}')\n"
        "    torch._dynamo.reset()\n"
        "got = [torch.compile(fn(), backend='aot_eager')(where) for fn, where, _ in cases]\n"
        "assert all(torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(got, eager)), got\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_a_first_call_traced_before_the_wrappers_exist_breaks_the_graph_by_name():
    """posenc imported before torch: the first traced call makes the wrappers, after a graph break naming it."""
    code = (
        "import posenc, torch\n"
        "f = lambda t: torch.as_tensor(posenc.encode(t.numpy(), 4))\n"
        "t = torch.tensor([0., 1., 3.])\n"
        "try:\n"
        "    torch.compile(f, backend='aot_eager', fullgraph=True)(t)\n"
        "except Exception as exc:\n"
        "    assert 'posenc.encode' in str(exc).split('from user code')[0], str(exc)\n"
        "else:\n"
        "    raise SystemExit('fullgraph traced posenc.encode')\n"
        "torch._dynamo.reset()\n"
        "got = torch.compile(f, backend='aot_eager')(t)\n"
        "assert torch.equal(got.view(torch.int32), f(t).view(torch.int32)), got\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
