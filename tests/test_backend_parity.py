"""Backend parity: every RoPE spec one backend takes, the others take, with the same float32 bits.

The backends are NumPy (:func:`posenc.apply_rope`), torch's functional
(:func:`posenc.torch.apply_rope`) and module (:class:`posenc.torch.RotaryEmbedding`),
and JAX (:func:`posenc.jax.apply_rope`, eager and under ``jax.jit``). Each
spec goes to each as ``spec=`` (the module: in ``head_dim``'s place). The
first findings of this test were torch's: the module refused
``layout="head_half"`` and the functional form had no ``spec=``, ``xpos`` or
``role``.

With xPos (:data:`XPOS`, both roles) over the specs without sections: the
same bits in every backend, JAX's traced rows (built from 32-bit integers)
and :class:`posenc.jax.RotaryEmbedding`'s ``xpos=`` included.

The cos/sin rows too: :func:`posenc.rope_cos_sin`, :func:`posenc.jax.rope_cos_sin`
(eager and jitted) and the torch module's :meth:`~posenc.torch.RotaryEmbedding.cos_sin`.
And the names: every keyword one backend's ``apply_rope`` / ``rope_cos_sin``
accepts (its parameters and its ``**settings``), the others accept, passed
for real, with the spec form's bits.

Stated gaps, checked to still be gaps (so that closing one updates this file):
:data:`GAPS`.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import posenc
from posenc import RopeConfig, XPos
from posenc.rope.scaling import Proportional
from posenc.rope.spec import FREQUENCY_SETTINGS, ROPE_SETTINGS

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import posenc.jax as pj  # noqa: E402
import posenc.torch as pt  # noqa: E402

_BASE = {"hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 16384, "rope_theta": 500000.0}

#: name -> a transformers-style config (read by posenc.from_hf_config) or a spec
SPECS: dict[str, Any] = {
    "default": _BASE,
    "interleaved": RopeConfig(64, base=10000.0, layout="interleaved"),
    "partial": dict(_BASE, partial_rotary_factor=0.5),
    "head_half": RopeConfig(16, rotary_dim=4, scaling=Proportional(16, 1.0), layout="head_half"),
    "linear": dict(_BASE, rope_scaling={"rope_type": "linear", "factor": 4.0}),
    "yarn": dict(_BASE, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}),
    "llama3": dict(_BASE, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    "mrope": RopeConfig(16, sections=(2, 3, 3)),
    "mrope-interleaved": RopeConfig(16, sections=(4, 2, 2), section_layout="interleaved"),
    "axial": RopeConfig(16, sections=(4, 4), ladder="per_axis", layout="interleaved"),
}

#: what a backend lacks, by name: each is asserted to be missing still (test_the_stated_gaps_are_still_gaps)
GAPS = {
    ("numpy", "sequence_dim"): "NumPy and JAX broadcast positions against x.shape[:-1] instead ([b, s, 1] for "
                               "[b, s, n_h, h_d]); torch's [s] / [b, s] positions need the axis named",
    ("jax", "sequence_dim"): "as NumPy",
}


def spec(name: str) -> RopeConfig:
    value = SPECS[name]
    return value if isinstance(value, RopeConfig) else posenc.from_hf_config(value)


def _inputs(cfg: RopeConfig, s: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, repr(cfg))) % 2**32)
    x = rng.standard_normal((2, 3, s, cfg.head_dim)).astype(np.float32)
    if cfg.multi_axis is None:
        positions = np.array([0, 1, 2, 1000, 65535, 123456, 999999])[:s]
    else:
        positions = rng.integers(0, 5000, (s, cfg.multi_axis.n_axes))
    return x, positions


def _outputs(cfg: RopeConfig) -> dict[str, np.ndarray]:
    x, p = _inputs(cfg)
    xt, pt_ = torch.from_numpy(x), torch.from_numpy(p)
    q, _ = pt.RotaryEmbedding(cfg)(xt, xt, positions=pt_)
    jx, jp = jnp.asarray(x), jnp.asarray(p.astype(np.int32))
    return {
        "numpy": posenc.apply_rope(x, p, spec=cfg),
        "torch.apply_rope": pt.apply_rope(xt, pt_, spec=cfg).numpy(),
        "torch.RotaryEmbedding": q.numpy(),
        "jax.apply_rope": np.asarray(pj.apply_rope(jx, jp, spec=cfg)),
        "jax.jit(apply_rope)": np.asarray(jax.jit(lambda a, b: pj.apply_rope(a, b, spec=cfg))(jx, jp)),
    }


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_backend_takes_the_spec_and_gives_numpys_bits(name: str) -> None:
    out = _outputs(spec(name))
    want = out.pop("numpy")
    assert want.dtype == np.float32 and np.isfinite(want).all()
    differ = {k: int((v.view(np.uint32) != want.view(np.uint32)).sum()) for k, v in out.items()}
    assert differ == dict.fromkeys(out, 0)


#: xPos variants of the battery, each with its seq_len (the centre seq_len//2) and positions it holds in range
XPOS: dict[str, tuple[XPos, int | None, list[int]]] = {
    "paper": (XPos(), 32768, [0, 1, 2, 1000, 4095, 16384, 30000]),
    # factors within 2**±100 (e**±66 here): the products stay normal floats, which XLA on the CPU would flush
    # to zero (NumPy keeps them subnormal): the rotation's arithmetic, not the rows'
    "uncentred": (XPos(gamma=0.1, scale_base=128.0, center=False), None, [-3500, -7, 0, 3, 999, 2048, 3500]),
    "slow": (XPos(gamma=1.0, scale_base=4096.0), 600000, [0, 1, 2, 1000, 65535, 123456, 599999]),
}

#: (spec, variant) pairs of the xPos battery: every variant on the default spec, each other spec once (each
#: case compiles its own traced rows, seconds apiece)
XPOS_CASES = [("default", v) for v in sorted(XPOS)] + [
    ("interleaved", "uncentred"), ("partial", "slow"), ("head_half", "paper"), ("yarn", "paper"),
    ("llama3", "uncentred")]


def _xpos_outputs(cfg: RopeConfig, xpos: XPos, seq_len: int | None, positions: list[int],
                  role: str, floats: bool) -> dict[str, np.ndarray]:
    x, _ = _inputs(cfg)
    p = np.array(positions)
    xt, pt_ = torch.from_numpy(x), torch.from_numpy(p)
    jx, jp = jnp.asarray(x), jnp.asarray(p.astype(np.int32))
    kw: dict[str, Any] = {"spec": cfg, "xpos": xpos, "role": role, "seq_len": seq_len}
    # the JAX module eagerly (its traced rows are the function's: tests/jax/test_jax_modules.py), [b, s, n_h, h_d]
    module = pj.RotaryEmbedding(cfg, xpos=xpos, seq_len=seq_len).rotate(jnp.moveaxis(jx, 1, 2), jp, role=role)
    return {  # the torch module's xPos rows are NumPy's (tests/torch): left out here, they take seconds to build
        "numpy": posenc.apply_rope(x, p, **kw),
        "jax.RotaryEmbedding": np.asarray(module).swapaxes(1, 2),
        "torch.apply_rope": pt.apply_rope(xt, pt_, **kw).numpy(),
        "jax.apply_rope": np.asarray(pj.apply_rope(jx, jp, **kw)),
        "jax.jit(apply_rope)": np.asarray(jax.jit(lambda a, b: pj.apply_rope(a, b, **kw))(jx, jp)),
    } | ({} if not floats else {"jax.jit(apply_rope) float32 positions": np.asarray(
        jax.jit(lambda a, b: pj.apply_rope(a, b, **kw))(jx, jnp.asarray(p.astype(np.float32))))})


@pytest.mark.parametrize("role", ["q", "k"])
@pytest.mark.parametrize(("name", "variant"), XPOS_CASES)
def test_xpos_in_every_backend_gives_numpys_bits(name: str, variant: str, role: str) -> None:
    xpos, seq_len, positions = XPOS[variant]
    out = _xpos_outputs(spec(name), xpos, seq_len, positions, role, floats=name == "default")  # floats: once each
    want = out.pop("numpy")
    assert want.dtype == np.float32 and np.isfinite(want).all()
    differ = {k: int((v.view(np.uint32) != want.view(np.uint32)).sum()) for k, v in out.items()}
    assert differ == dict.fromkeys(out, 0)


def accepted(fn: Any) -> set[str]:
    """The keywords ``fn`` takes: its named parameters, and the settings its ``**settings`` stands for."""
    params = inspect.signature(fn).parameters
    named = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    var = [p for p in params.values() if p.kind is p.VAR_KEYWORD]
    if not var:
        return named
    want = {"Unpack[RopeSettings]": ROPE_SETTINGS, "Unpack[RopeFrequencySettings]": FREQUENCY_SETTINGS}
    return named | want[str(var[0].annotation)]


APPLY = {"numpy": posenc.apply_rope, "torch": pt.apply_rope, "jax": pj.apply_rope}
COS_SIN = {"numpy": posenc.rope_cos_sin, "jax": pj.rope_cos_sin}


@pytest.mark.parametrize(("table", "gaps"), [(APPLY, set(GAPS)), (COS_SIN, set())], ids=["apply_rope", "rope_cos_sin"])
def test_every_keyword_one_backend_takes_the_others_take(table: dict[str, Any], gaps: set[tuple[str, str]]) -> None:
    names = {b: accepted(fn) for b, fn in table.items()}
    every = set().union(*names.values())
    missing = {(b, n) for b, have in names.items() for n in every - have}
    assert missing == gaps


def test_the_stated_gaps_are_still_gaps() -> None:
    for backend, name in GAPS:
        assert name not in accepted(APPLY[backend])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_backend_takes_every_setting_by_name_with_the_spec_forms_bits(name: str) -> None:
    cfg = spec(name)
    x, p = _inputs(cfg)
    settings = dict(cfg.kwargs(), layout=cfg.layout)
    assert set(settings) == ROPE_SETTINGS or cfg.sections is None  # every name passed, with sections
    want = posenc.apply_rope(x, p, spec=cfg)
    jx, jp = jnp.asarray(x), jnp.asarray(p.astype(np.int32))
    got = {
        "numpy": posenc.apply_rope(x, p, **settings),
        "torch.apply_rope": pt.apply_rope(torch.from_numpy(x), torch.from_numpy(p), **settings).numpy(),
        "torch.RotaryEmbedding": pt.RotaryEmbedding(cfg.head_dim, **settings)(
            torch.from_numpy(x), torch.from_numpy(x), positions=torch.from_numpy(p))[0].numpy(),
        "jax.apply_rope": np.asarray(pj.apply_rope(jx, jp, **settings)),
        "jax.RotaryEmbedding": np.asarray(pj.RotaryEmbedding(cfg.head_dim, **settings)(
            jnp.moveaxis(jx, 1, 2), jnp.moveaxis(jx, 1, 2), jp)[0]).swapaxes(1, 2),
    }
    differ = {k: int((v.view(np.uint32) != want.view(np.uint32)).sum()) for k, v in got.items()}
    assert differ == dict.fromkeys(got, 0)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_backend_gives_numpys_cos_sin_rows(name: str) -> None:
    cfg = spec(name)
    _, p = _inputs(cfg)
    want = np.stack(posenc.rope_cos_sin(p, cfg))
    jp = jnp.asarray(p.astype(np.int32))
    module = pt.RotaryEmbedding(cfg)
    got = {
        "numpy keywords": np.stack(posenc.rope_cos_sin(p, cfg.head_dim, **cfg.kwargs())),
        "jax.rope_cos_sin": np.stack([np.asarray(t) for t in pj.rope_cos_sin(jp, cfg)]),
        "jax.jit(rope_cos_sin)": np.stack([np.asarray(t) for t in jax.jit(lambda q: pj.rope_cos_sin(q, cfg))(jp)]),
        "torch.RotaryEmbedding.cos_sin": np.stack([t.numpy() for t in module.cos_sin(
            len(p), positions=torch.from_numpy(p))]),
    }
    assert want.dtype == np.float32 and np.isfinite(want).all()
    differ = {k: int((v.view(np.uint32) != want.view(np.uint32)).sum()) for k, v in got.items()}
    assert differ == dict.fromkeys(got, 0)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_an_unknown_setting_is_refused_by_name_by_every_backend(backend: str) -> None:
    cfg = RopeConfig(8)
    x, p = _inputs(cfg, 3)
    args = {"numpy": (x, p), "torch": (torch.from_numpy(x), torch.from_numpy(p)),
            "jax": (jnp.asarray(x), jnp.asarray(p.astype(np.int32)))}[backend]
    with pytest.raises(posenc.PosEncError, match=r"unknown RoPE setting bsae=5\.0: the settings are base, ladder, "
                                                 r"layout, rotary_dim, scaling, section_layout, sections"):
        APPLY[backend](*args, bsae=5.0)


def test_a_spec_beside_its_own_settings_is_refused_by_every_backend() -> None:
    cfg = spec("interleaved")
    x, p = _inputs(cfg)
    calls: dict[str, Any] = {
        "numpy": lambda: posenc.apply_rope(x, p, spec=cfg, base=5.0),
        "torch": lambda: pt.apply_rope(torch.from_numpy(x), torch.from_numpy(p), spec=cfg, base=5.0),
        "jax": lambda: pj.apply_rope(jnp.asarray(x), jnp.asarray(p.astype(np.int32)), spec=cfg, base=5.0),
    }
    for call in calls.values():
        with pytest.raises(posenc.PosEncError, match=r"base=5\.0: part of the spec"):
            call()
