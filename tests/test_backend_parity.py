"""Backend parity: every RoPE spec one backend takes, the others take, with the same float32 bits.

The backends are NumPy (:func:`posenc.apply_rope`), torch's functional
(:func:`posenc.torch.apply_rope`) and module (:class:`posenc.torch.RotaryEmbedding`),
and JAX (:func:`posenc.jax.apply_rope`, eager and under ``jax.jit``). Each
spec goes to each as ``spec=`` (the module: in ``head_dim``'s place). The
first findings of this test were torch's: the module refused
``layout="head_half"`` and the functional form had no ``spec=``, ``xpos`` or
``role``.

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
    ("jax", "xpos"): "posenc.jax.apply_rope has no xPos: its factors ζ^(p/scale_base) need the exact "
                     "exponential that the 32-bit path does not have yet",
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


@pytest.mark.parametrize("role", ["q", "k"])
def test_xpos_in_numpy_and_torch_gives_the_same_bits(role: str) -> None:
    cfg = RopeConfig(32)
    x, p = _inputs(cfg)
    x = x[..., :5, :]
    want = posenc.apply_rope(x, p[:5] % 4096, spec=cfg, xpos=XPos(), role=role)
    got = pt.apply_rope(torch.from_numpy(x), torch.from_numpy(p[:5] % 4096), spec=cfg, xpos=XPos(), role=role)
    assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))


def test_every_keyword_of_numpys_apply_rope_is_taken_by_the_other_backends() -> None:
    numpy_names = set(inspect.signature(posenc.apply_rope).parameters)
    for backend, fn in (("torch", pt.apply_rope), ("jax", pj.apply_rope)):
        missing = numpy_names - set(inspect.signature(fn).parameters)
        stated = {name for (b, name) in GAPS if b == backend}
        assert missing - {"role"} - stated == set(), backend  # role comes with xpos


def test_the_stated_gaps_are_still_gaps() -> None:
    for backend, name in GAPS:
        fn = {"jax": pj.apply_rope, "torch": pt.apply_rope}[backend]
        assert name not in inspect.signature(fn).parameters


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
