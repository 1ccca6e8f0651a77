"""One public name per concept across the backends, with one signature: posenc (NumPy), posenc.torch, posenc.jax.

Every function name of ``posenc.jax.__all__`` and ``posenc.torch.__all__`` is
in the other backends' ``__all__``, or in :data:`MISSING` with the reason;
and each shared function, called with the same small battery of inputs, gives
the NumPy function's float32 bits in torch (eagerly, and under
``torch.compile(fullgraph=False)``) and in JAX, or the same refusal (a
:class:`~posenc.PosEncError` from all three). The reference is NumPy posenc.
And a function every backend has takes NumPy's parameters, with NumPy's
defaults: the signatures each backend writes out (they are what the
reference pages show) are held to one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import posenc
from posenc import PosEncError

torch = pytest.importorskip("torch")
jnp = pytest.importorskip("jax.numpy")
pt = pytest.importorskip("posenc.torch")
pj = pytest.importorskip("posenc.jax")

BACKENDS = {"posenc": posenc, "posenc.torch": pt, "posenc.jax": pj}

#: (name, backend that lacks it): why the concept has no function of that name there
MISSING = {
    ("positions", "posenc"): "JAX's guard for host positions headed into jax.jit (which cuts int64 to int32 "
                             "silently); NumPy and torch read int64 themselves",
    ("positions", "posenc.torch"): "as for NumPy: torch keeps int64 positions",
    ("rotate", "posenc"): "JAX's rotation of precomputed rows, the primitive its RotaryEmbedding shares; NumPy "
                          "rotates through apply_rope only",
    ("rotate", "posenc.torch"): "torch's rotation of rows is RotaryEmbedding.rotate (the module holds the rows)",
    ("rope_frequencies", "posenc.torch"): "the frequencies are a host object (RopeFrequencies): torch uses "
                                          "posenc.rope_frequencies; JAX's adds the static seq_len its tracing needs",
    ("positions_from_cu_seqlens", "posenc"): "flash-attn's packed batches are a torch convention",
    ("positions_from_cu_seqlens", "posenc.jax"): "flash-attn's packed batches are a torch convention",
}


def _functions(module: Any) -> set[str]:
    return {n for n in module.__all__ if n[0].islower() and not n.startswith("_")}


def test_every_framework_function_name_is_in_the_other_backends():
    absent = {(name, other) for mine in ("posenc.torch", "posenc.jax") for name in _functions(BACKENDS[mine])
              for other, module in BACKENDS.items() if other != mine and name not in module.__all__}
    assert absent == set(MISSING), {"unexplained": sorted(absent - set(MISSING)),
                                    "no longer missing": sorted(set(MISSING) - absent)}


def test_each_missing_name_is_a_function_of_another_backend():
    for name, lacking in MISSING:
        assert name not in BACKENDS[lacking].__all__
        assert any(name in _functions(m) for b, m in BACKENDS.items() if b != lacking), name
        assert callable(getattr(BACKENDS[next(b for b, m in BACKENDS.items() if name in m.__all__)], name))


# ---------------------------------------------------------------- the battery

def _i(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def _f(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.float32)


_W = np.random.default_rng(3).standard_normal((32, 3)).astype(np.float32)

#: (function name, positional arguments, keywords): NumPy arrays in, each backend's arrays passed
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("rope_cos_sin", (_i(0, 1, 7, 1000, 2**31 - 1), 8), {}),
    ("rope_cos_sin", (_f(0.5, -3.25, 1e6), 16), {"base": 500000.0, "scaling": posenc.Linear(4.0)}),
    ("rope_cos_sin", (_i(3, 9), 8), {"scaling": posenc.YaRN(4.0, 16)}),
    ("rope_cos_sin", (_i([3, 0, 5], [7, 7, 7]), 16), {"sections": (2, 3, 3)}),
    ("rope_cos_sin", (_i(0, 1), 7), {}),  # odd head_dim: refused
    ("timestep_embedding", (_i(0, 1, 999, 500), 320), {}),
    ("timestep_embedding", (_f(0.5, 0.03125, 1.0), 9), {"convention": "flux"}),
    ("timestep_embedding", (_f(12.25, 0.0), 8), {"convention": "guided-diffusion"}),
    ("timestep_embedding", (_f(1.0, np.nan), 8), {}),  # NaN: refused
    ("timestep_embedding", (_i(1), 0), {}),  # no channels: refused
    ("nerf_encoding", (_f([0.1, -0.7, 0.3], [1.0, 0.0, -1.0]), 4), {}),
    ("nerf_encoding", (_f([0.25, 1.0], [-3.5, 2.0]), 3), {"convention": "tcnn"}),
    ("nerf_encoding", (_f([0.1, 0.2]), 6), {"convention": "nerfstudio", "include_input": True}),
    ("nerf_encoding", (_f(0.5), 2), {}),
    ("nerf_encoding", (_f([0.1]), -1), {}),  # refused
    ("fourier_features", (_f([1 / 8, 1 / 4], [0.3, -0.7]), _f([1, 0], [2, 1], [-2.5, 0.75])), {}),
    ("fourier_features", (_f([[0.5, 0.25, -1.0]]), _f([1.5, -2.0, 3.0])[None]), {}),
    ("fourier_features", (_f([0.5, 0.25]), _f([1.0, 2.0, 3.0])[None]), {}),  # d mismatch: refused
    ("alibi_bias", (3, 5, 4), {"offset": 2}),
    ("alibi_bias", (4, 4, 6), {"convention": "bloom", "causal": False}),
    ("alibi_bias", (2, 3, 8), {"convention": "mpt", "positions": _i([0, 1, 2], [0, 0, 1])}),
    ("alibi_bias", (4, 3, 2), {}),  # a query past the keys under causal: refused
    ("t5_bucket", (_i(-1, 0, 1, -8, -12, -128, 500, -(2**31)),), {}),
    ("t5_bucket", (_i([-20, 0, 5], [3, -300, 64]),), {"bidirectional": False, "num_buckets": 16,
                                                       "max_distance": 64}),
    ("t5_bucket", (_f(0.5, 1.0),), {}),  # not integers: refused
    ("t5_bias", (_W, 4, 6), {"offset": 2}),
    ("t5_bias", (_W, 3, 3), {"q_positions": _i(4, 9, 300), "k_positions": _i(0, 50, 100), "bidirectional": False}),
    ("t5_bias", (_W, 1, 2), {"q_positions": _i(-(2**31)), "k_positions": _i(2**31 - 1, -(2**31))}),  # past int32
    ("t5_bias", (_W, 2, 1), {"q_positions": _f(0.5, 1), "k_positions": _i(0)}),  # not integers: refused
    ("t5_bias", (_W[0], 3, 3), {}),  # weights not a matrix: refused
    ("encode_nd", (posenc.grid(3, 2), 8), {}),
    ("encode_nd", (posenc.grid(2, 2), 16), {"convention": "mae", "cls_token": True}),
    ("encode_nd", (_f([0.5, -1.25, 3.0]), 12), {"convention": "positional-encodings"}),
    ("encode_nd", (posenc.grid(2, 2), 6), {}),  # 3 channels per axis: refused
    ("encode", (_i(0, 5, 1000), 16), {"convention": "fairseq"}),
    ("table", (4, 8), {"start": -2}),
]


def _torch_arg(v: Any) -> Any:
    return torch.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v


def _jax_arg(v: Any) -> Any:
    if not isinstance(v, np.ndarray):
        return v
    return jnp.asarray(v.astype(np.int32) if v.dtype.kind in "iu" else v.astype(np.float32))


def _numpy_out(v: Any) -> Any:
    return v


def _torch_out(v: Any) -> Any:
    return v.detach().cpu().numpy()


def _jax_out(v: Any) -> Any:
    return np.asarray(v)


_CALLS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "posenc": (lambda v: v, _numpy_out), "posenc.torch": (_torch_arg, _torch_out), "posenc.jax": (_jax_arg, _jax_out)}


def outcome(backend: str, name: str, args: tuple[Any, ...], kw: dict[str, Any],
            wrap: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda f: f) -> Any:
    """The result as NumPy arrays (int64 buckets, float32 values), or the PosEncError class on a refusal."""
    into, out = _CALLS[backend]
    fn = wrap(getattr(BACKENDS[backend], name))
    try:
        got = fn(*(into(a) for a in args), **{k: into(v) for k, v in kw.items()})
    except PosEncError:
        return PosEncError
    parts = got if isinstance(got, tuple) else (got,)
    arrays = tuple(out(p) for p in parts)
    return tuple(a.astype(np.int64) if a.dtype.kind in "iu" else a for a in arrays)


def bits(result: Any) -> Any:
    if result is PosEncError:
        return result
    return tuple((a.dtype.str, a.shape, a.tobytes()) for a in result)


_IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)]


@pytest.mark.parametrize(("name", "args", "kw"), CASES, ids=_IDS)
def test_shared_functions_give_numpys_float32_bits_or_its_refusal(name, args, kw):
    want = outcome("posenc", name, args, kw)
    for backend in ("posenc.torch", "posenc.jax"):
        got = outcome(backend, name, args, kw)
        assert bits(got) == bits(want), (backend, name, got, want)


def test_the_battery_has_every_shared_function_and_refusals():
    shared = _functions(pt) & _functions(pj) & _functions(posenc)
    assert shared == {n for n, _, _ in CASES} | {"apply_rope"}  # apply_rope: tests/test_backend_parity.py
    refused = {n for n, a, k in CASES if outcome("posenc", n, a, k) is PosEncError}
    assert refused >= shared - {"encode", "table", "apply_rope"}, sorted(shared - refused)


@pytest.mark.parametrize("name", ["timestep_embedding", "nerf_encoding", "t5_bias", "rope_cos_sin"])
def test_torch_under_compile_gives_the_same_bits(name):
    torch._dynamo.reset()
    for case in [c for c in CASES if c[0] == name][:1]:
        _, args, kw = case
        compiled = outcome("posenc.torch", name, args, kw,
                           wrap=lambda f: torch.compile(lambda *a, **k: f(*a, **k), backend="aot_eager"))
        assert compiled is not PosEncError
        assert bits(compiled) == bits(outcome("posenc", name, args, kw))
    torch._dynamo.reset()


# ---------------------------------------------------------------- one signature

#: (name, backend): parameters a backend's function has beyond NumPy's, or without them, and why
SIGNATURE_DIFFERENCES = {
    ("apply_rope", "posenc.torch"): "torch names the sequence axis of [s] / [b, s] positions (sequence_dim)",
}


def _dtype_name(d: Any) -> Any:
    if isinstance(d, torch.dtype):
        return str(d).removeprefix("torch.")
    return d if d is None else np.dtype(d).name


def _parameters(fn: Any) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of each parameter, positional ones in order; a dtype default read as its name."""
    import inspect

    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if p.name == "dtype" and default is not inspect.Parameter.empty:
            default = _dtype_name(default)
        out.append((p.name, p.kind, default))
    # keyword-only parameters in any order: a caller cannot tell
    return sorted(out, key=lambda p: (p[1], p[0] if p[1] == inspect.Parameter.KEYWORD_ONLY else ""))


@pytest.mark.parametrize("name", sorted(set(_functions(pj)) & set(_functions(pt)) & set(posenc.__all__)))
def test_a_function_every_backend_has_takes_numpys_parameters_and_defaults(name: str) -> None:
    """The signatures a backend repeats are NumPy's: names, kinds, order and defaults (dtype: each one's float32)."""
    want = _parameters(getattr(posenc, name))
    for backend in ("posenc.torch", "posenc.jax"):
        got = _parameters(getattr(BACKENDS[backend], name))
        if (name, backend) in SIGNATURE_DIFFERENCES:
            got = [p for p in got if p in want]
        assert got == want, (backend, name)


def test_each_stated_signature_difference_is_still_one():
    for name, backend in SIGNATURE_DIFFERENCES:
        numpy_form = _parameters(getattr(posenc, name))
        extra = [p for p in _parameters(getattr(BACKENDS[backend], name)) if p not in numpy_form]
        assert extra, (name, backend)
