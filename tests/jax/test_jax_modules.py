"""posenc.jax's Flax NNX modules: the functions' values, no state, safe under nnx.jit."""

from __future__ import annotations

import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jax
import posenc
import posenc.jax as pj

RNG = np.random.default_rng(2225)


def test_rotary_module_equals_the_function_and_holds_no_state():
    rope = pj.RotaryEmbedding(64, base=500000.0, scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192), rotary_dim=48)
    assert nnx.state(rope) == nnx.State({})
    q = jnp.asarray(RNG.standard_normal((2, 16, 4, 64)), jnp.bfloat16)
    k = jnp.asarray(RNG.standard_normal((2, 16, 2, 64)), jnp.float32)
    pos = jnp.asarray(RNG.integers(0, 2**31 - 1, (2, 16)).astype(np.int32))
    qr, kr = nnx.jit(lambda m, q, k, p: m(q, k, p))(rope, q, k, pos)
    fn = jax.jit(lambda x, p: pj.apply_rope(x, p[:, :, None], base=500000.0, rotary_dim=48,
                                            scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192)))
    assert qr.dtype == jnp.bfloat16 and kr.dtype == jnp.float32
    assert np.array_equal(np.asarray(qr), np.asarray(fn(q, pos)))
    assert np.array_equal(np.asarray(kr), np.asarray(fn(k, pos)))


def test_rotary_module_with_sections_and_shared_positions():
    rope = pj.RotaryEmbedding(128, base=1e6, sections=(16, 24, 24))
    q = jnp.asarray(RNG.standard_normal((1, 6, 2, 128)).astype(np.float32))
    pos = jnp.asarray(RNG.integers(0, 100, (6, 3)).astype(np.int32))
    qr, _ = jax.jit(lambda q, p: rope(q, q, p))(q, pos)
    want = posenc.apply_rope(np.asarray(q), np.asarray(pos, np.int64)[:, None, :], base=1e6, sections=(16, 24, 24))
    np.testing.assert_allclose(np.asarray(qr), want, rtol=2e-6, atol=2e-6)


def test_rotary_module_checks_at_construction_and_call():
    with pytest.raises(posenc.PosEncError, match="seq_len"):
        pj.RotaryEmbedding(64, scaling=posenc.DynamicNTK(2.0, 4096))
    with pytest.raises(posenc.PosEncError, match="layout"):
        pj.RotaryEmbedding(64, layout="neox")
    rope = pj.RotaryEmbedding(64)
    with pytest.raises(posenc.PosEncError, match="q must be"):
        rope(jnp.ones((8, 64)), jnp.ones((8, 64)), jnp.arange(8))
    with pytest.raises(posenc.PosEncError, match="positions must be"):
        rope(jnp.ones((1, 8, 1, 64)), jnp.ones((1, 8, 1, 64)), jnp.arange(7))


def test_sinusoidal_module_adds_the_encoding():
    pe = pj.SinusoidalEmbedding(32, convention="fairseq")
    assert nnx.state(pe) == nnx.State({})
    x = jnp.asarray(RNG.standard_normal((2, 10, 32)).astype(np.float32))
    got = nnx.jit(lambda m, x: m(x, offset=5))(pe, x)
    enc = posenc.encode(np.arange(5, 15), 32, convention="fairseq")
    assert np.array_equal(np.asarray(got), np.asarray(x) + enc)
    pos = jnp.asarray(RNG.integers(0, 10**6, (2, 10)).astype(np.int32))
    assert np.array_equal(np.asarray(pe(x, pos)), np.asarray(x + pj.encode(pos, 32, convention="fairseq")))


def test_import_posenc_jax_leaves_flax_unloaded_until_a_module_is_asked_for():
    code = ("import sys, posenc.jax\nprint('flax' in sys.modules)\n"
            "posenc.jax.RotaryEmbedding\nprint('flax' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("cfg", [posenc.RopeConfig(64, rotary_dim=32, base=500000.0, layout="interleaved"),
                                 posenc.RopeConfig(128, base=5e6, sections=(24, 20, 20),
                                                   section_layout="interleaved")], ids=repr)
def test_rotary_module_built_from_a_spec_takes_every_setting_it_holds(cfg):
    whole = pj.RotaryEmbedding(cfg)
    assert whole.spec is cfg and whole.layout == cfg.layout and whole.rotary_dim == cfg.rotary_dim
    h = cfg.head_dim
    q = jnp.asarray(RNG.standard_normal((1, 6, 2, h)), jnp.float32)
    p = np.array([0, 5, 77, 4096, 2**20, 2**31 - 2], np.int32)
    pos = p if cfg.sections is None else np.stack([p, p // 2, p // 3], axis=-1)
    got = np.asarray(whole(q, q, jnp.asarray(pos))[0])
    want = jax.jit(lambda x, p: pj.apply_rope(x, p, spec=cfg))(q, jnp.asarray(pos)[:, None])
    assert np.array_equal(got.view(np.uint32), np.asarray(want).view(np.uint32))
    with pytest.raises(posenc.PosEncError, match=r"base=10\.0: part of the spec"):
        pj.RotaryEmbedding(cfg, base=10.0)
    with pytest.raises(posenc.PosEncError, match=r"layout='half': part of the spec"):  # the default, typed
        pj.RotaryEmbedding(cfg, layout="half")


# ---------------------------------------------------------------- xPos

#: (spec, xpos, seq_len, positions): each a shape the others share ([s] = 7 positions), factors within 2**±100
#: (normal float32 products, which XLA on the CPU would otherwise flush to zero where NumPy keeps them subnormal)
XPOS_BATTERY = [
    (posenc.RopeConfig(64, base=500000.0), posenc.XPos(), 32768, np.array([0, 1, 2, 1000, 4095, 16384, 30000])),
    (posenc.RopeConfig(64, rotary_dim=32, layout="interleaved"), posenc.XPos(gamma=0.1, scale_base=128.0, center=False),
     None, np.array([-3500, -7, 0, 3, 999, 2048, 3500])),
    (posenc.RopeConfig(64, layout="head_half"), posenc.XPos(gamma=1.0, scale_base=4096.0), 600000,
     np.array([0.0, 0.5, 2.25, 1000.0, 65535.75, 123456.0, 599999.0], np.float32)),
]


def _bits(a):
    return np.asarray(a).view(np.uint32)


@pytest.mark.parametrize(("case", "batched"), [(0, False), (0, True), (1, False), (2, True)],
                         ids=["paper-s", "paper-b-s", "uncentred-s", "slow-floats-b-s"])  # each compiles: 4
def test_rotary_module_with_xpos_is_the_functions_and_numpys_bits(case, batched):
    cfg, xpos, seq_len, p = XPOS_BATTERY[case]
    rope = pj.RotaryEmbedding(cfg, xpos=xpos, seq_len=seq_len)
    assert nnx.state(rope) == nnx.State({}) and rope.xpos is xpos
    q = RNG.standard_normal((2, 7, 3, 64)).astype(np.float32)
    k = RNG.standard_normal((2, 7, 2, 64)).astype(np.float32)
    pos = np.stack([p, p[::-1]]) if batched else p  # [b, s] or [s]
    jp = jnp.asarray(pos.astype(np.int32) if pos.dtype.kind == "i" else pos)
    per_head = pos[:, :, None] if batched else pos[:, None]  # the functions' [.., s, 1]: broadcast over heads
    kw = {"spec": cfg, "xpos": xpos, "seq_len": seq_len}
    want = {role: posenc.apply_rope(x, per_head, role=role, **kw) for role, x in (("q", q), ("k", k))}
    assert all(w.dtype == np.float32 and np.isfinite(w).all() for w in want.values())

    @jax.jit
    def traced(a, b, c):  # the module and the function in one program: one compile per case
        return rope(a, b, c), {r: pj.apply_rope(x, c[..., None], role=r, **kw) for r, x in (("q", a), ("k", b))}

    (jq, jk), fn = traced(jnp.asarray(q), jnp.asarray(k), jp)
    eq, ek = rope(jnp.asarray(q), jnp.asarray(k), pos)  # concrete: NumPy's rows
    got = {"jit q": jq, "jit k": jk, "function jit q": fn["q"], "function jit k": fn["k"], "eager q": eq,
           "eager k": ek, "rotate q": rope.rotate(jnp.asarray(q), pos, role="q"),
           "rotate k": rope.rotate(jnp.asarray(k), pos, role="k")}
    differ = {name: int((_bits(v) != want[name[-1]].view(np.uint32)).sum()) for name, v in got.items()}
    assert differ == dict.fromkeys(got, 0)
    eager_fn = pj.apply_rope(jnp.asarray(q), per_head, role="q", **kw)
    assert np.array_equal(_bits(eager_fn), _bits(eq))


def _refusal(fn):
    try:
        fn()
    except posenc.PosEncError as exc:
        return str(exc)
    return None


def test_rotary_module_with_xpos_refuses_what_the_function_refuses():
    x = jnp.ones((1, 3, 1, 8))
    cases = {  # module call -> the function's call on the same arguments
        "not an XPos": (lambda: pj.RotaryEmbedding(8, xpos="xpos"),
                        lambda: pj.apply_rope(x[0, :, 0], jnp.arange(3), xpos="xpos", role="q")),
        "sections": (lambda: pj.RotaryEmbedding(8, xpos=posenc.XPos(), sections=(2, 2)),
                     lambda: pj.apply_rope(x[0, :, 0], jnp.zeros((3, 2), jnp.int32), xpos=posenc.XPos(), role="q",
                                           sections=(2, 2))),
        "role without xpos": (lambda: pj.RotaryEmbedding(8).rotate(x, jnp.arange(3), role="q"),
                              lambda: pj.apply_rope(x[0, :, 0], jnp.arange(3), role="q")),
        "xpos without role": (lambda: pj.RotaryEmbedding(8, xpos=posenc.XPos()).rotate(x, jnp.arange(3)),
                              lambda: pj.apply_rope(x[0, :, 0], jnp.arange(3), xpos=posenc.XPos())),
        "a bad role": (lambda: pj.RotaryEmbedding(8, xpos=posenc.XPos()).rotate(x, jnp.arange(3), role="v"),
                       lambda: pj.apply_rope(x[0, :, 0], jnp.arange(3), xpos=posenc.XPos(), role="v")),
        "out of range": (lambda: pj.RotaryEmbedding(8, xpos=posenc.XPos(), seq_len=100)(x, x, [0, 1, 10**6]),
                         lambda: pj.apply_rope(x[0, :, 0], [0, 1, 10**6], xpos=posenc.XPos(), role="q", seq_len=100)),
        "traced centre, no seq_len": (
            lambda: jax.jit(lambda a, p: pj.RotaryEmbedding(8, xpos=posenc.XPos())(a, a, p))(x, jnp.arange(3)),
            lambda: jax.jit(lambda a, p: pj.apply_rope(a, p, xpos=posenc.XPos(), role="q"))(x[0, :, 0],
                                                                                           jnp.arange(3))),
    }
    messages = {name: (_refusal(module), _refusal(function)) for name, (module, function) in cases.items()}
    assert all(m is not None and m == f for m, f in messages.values()), messages
    np_message = _refusal(lambda: posenc.apply_rope(np.ones((3, 8), np.float32), [0, 1, 10**6], xpos=posenc.XPos(),
                                                    role="q", seq_len=100))
    assert messages["out of range"][0] == np_message


def test_rotary_module_docstring_shows_xpos_and_its_doctest_passes():
    import doctest
    import inspect

    doc = pj.RotaryEmbedding.__doc__ or ""
    assert "xpos:" in doc and "role" in doc
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    (test,) = [t for t in finder.find(pj.RotaryEmbedding, "RotaryEmbedding",
                                      globs=dict(vars(inspect.getmodule(pj.RotaryEmbedding))))
               if t.name == "RotaryEmbedding"]
    assert any("xpos=" in ex.source for ex in test.examples)
    result = runner.run(test, out=lambda s: None)
    assert result.failed == 0 and result.attempted >= 8
