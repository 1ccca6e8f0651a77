"""posenc.torch.RotaryEmbedding at real-valued positions: EVA-02's and DINOv3's fractional coordinates.

References, written independently here in mpmath from the sources:
timm ``timm/layers/pos_embed_sincos.py`` (``freq_bands(dim // 4, step=1)``,
``build_fourier_pos_embed`` with ``ref_feat_shape``: coordinate i·ref/feat)
for ``rope_preset("eva02")``, and facebookresearch/dinov3
``dinov3/layers/rope_position_encoding.py`` (``RopePositionEmbedding``,
base 100, periods base^(2j/(D/2)), angle 2π·c/period with
c = 2·(i + 0.5)/H − 1) for ``rope_preset("dinov3")``. The bits are the
NumPy core's (:func:`posenc.apply_rope`, :func:`posenc.rope_cos_sin`).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

import posenc
from posenc import DynamicNTK, PosEncError, YaRN, dinov3_coords, eva02_coords, rope_preset
from posenc.torch import RotaryEmbedding
from reference import ulp_error

mpf = mpmath.mpf


def _module(name: str, **kw) -> tuple[RotaryEmbedding, posenc.RopeConfig]:
    cfg = rope_preset(name, **kw)
    return RotaryEmbedding(cfg.head_dim, layout=cfg.layout, **cfg.kwargs()), cfg


def eva02_angles(feat, ref, head_dim):
    """timm: bands 10000^(-k/(dim/4)), coordinate i·ref/feat per axis (h, w), [h bands | w bands]."""
    n = head_dim // 4
    bands = [mpmath.power(10000, -mpf(k) / n) for k in range(n)]
    axes = [[mpf(i) * r / f for i in range(f)] for f, r in zip(feat, ref, strict=True)]
    return [[a * w for w in bands] + [b * w for w in bands] for a in axes[0] for b in axes[1]]


def dinov3_angles(h, w, head_dim):
    """DINOv3: 2π·c/period_j, c = 2·(i + 0.5)/H − 1 (separate), periods 100^(2j/(D/2)), j < D/4, h then w."""
    periods = [mpmath.power(100, mpf(2 * j) / (head_dim // 2)) for j in range(head_dim // 4)]
    coord = [[2 * (mpf(i) + mpf(1) / 2) / size - 1 for i in range(size)] for size in (h, w)]
    return [[2 * mpmath.pi * c / p for c in (a, b) for p in periods] for a in coord[0] for b in coord[1]]


CASES = [
    ("eva02", lambda: eva02_coords((4, 4), (7, 7)), lambda: eva02_angles((4, 4), (7, 7), 64)),
    ("eva02", lambda: eva02_coords((5, 3), (16, 16)), lambda: eva02_angles((5, 3), (16, 16), 64)),
    ("dinov3", lambda: dinov3_coords(3, 5), lambda: dinov3_angles(3, 5, 64)),
    ("dinov3", lambda: dinov3_coords(14, 14), lambda: dinov3_angles(14, 14, 64)),
]


@pytest.mark.parametrize(("name", "coords", "angles"), CASES)
def test_rows_within_one_float32_ulp_of_the_models_formula(name, coords, angles):
    """Within 1 ulp of the formula at the float64 coordinate given; and at the model's exact coordinate,
    within that ulp plus the coordinate's own rounding (DINOv3's 2π·c, EVA-02's i·ref/feat: 2**-50 at most)."""
    rope, cfg = _module(name)
    c = coords()
    cos, sin = rope.cos_sin(c.shape[0], positions=torch.tensor(c))
    pair_axes = np.repeat([0, 1], cfg.head_dim // 4)
    omega = [mpmath.power(10000 if name == "eva02" else 100, -mpf(2 * (j % (cfg.head_dim // 4))) / (cfg.head_dim // 2))
             for j in range(cfg.head_dim // 2)]
    worst = 0.0
    for r, row in enumerate(angles()):
        for j, th in enumerate(row):
            given = mpf(float(c[r, pair_axes[j]])) * omega[j]  # the angle of the coordinate passed in
            for got, f in ((cos[r, j], mpmath.cos), (sin[r, j], mpmath.sin)):
                e = ulp_error(float(got), f(given), np.float32)
                assert e <= 1.0, (name, r, j, float(got), f(given))
                worst = max(worst, e)
                model = f(th)
                bound = float(np.spacing(np.float32(abs(float(model))))) + 2.0**-50
                assert abs(float(got) - model) <= bound, (name, r, j, float(got), model)
    assert 0.0 < worst <= 1.0  # the comparison saw rounded values


@pytest.mark.parametrize(("name", "coords", "angles"), CASES[::2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_module_equals_numpy_apply_rope_bit_for_bit(name, coords, angles, dtype):
    rope, cfg = _module(name)
    c = coords()
    x = torch.randn(2, 3, c.shape[0], cfg.head_dim, generator=torch.Generator().manual_seed(1)).to(dtype)
    q, k = rope(x, x[:, :1], positions=torch.tensor(c))
    assert q.dtype == dtype and q.shape == x.shape and k.shape == (2, 1, c.shape[0], cfg.head_dim)
    if dtype != torch.bfloat16:
        want = posenc.apply_rope(x.numpy(), c, layout=cfg.layout, **cfg.kwargs())
        assert np.array_equal(q.numpy(), want)
    else:  # bf16 q is rotated in float32 and rounded once, as for integer positions
        wide, _ = rope(x.float(), x[:, :1].float(), positions=torch.tensor(c))
        assert torch.equal(q, wide.to(torch.bfloat16))
    # batched positions [b, s, 2], each row its own, and float32 positions (the coordinate as given)
    both = torch.tensor(np.stack([c, c[::-1]]))
    qb, _ = rope(x, x, positions=both)
    assert torch.equal(qb[0], q[0]) and torch.equal(qb[1], rope(x[1:], x[1:], positions=both[1])[0][0])
    c32 = torch.tensor(c, dtype=torch.float32)
    q32, _ = rope(x, x, positions=c32)
    assert torch.equal(q32, rope(x, x, positions=c32.double())[0])


def test_integer_valued_floats_give_the_tables_bits():
    for rope in (RotaryEmbedding(64, base=5e5), RotaryEmbedding(64, scaling=YaRN(4.0, 256)),
                 RotaryEmbedding(64, sections=(16, 8, 8))):
        shape = (40,) if rope.sections is None else (40, 3)
        ints = torch.randint(-3000, 3000, shape, generator=torch.Generator().manual_seed(2))
        a = rope.cos_sin(40, positions=ints)
        b = rope.cos_sin(40, positions=ints.to(torch.float64))
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize("name", ["eva02", "dinov3"])
def test_under_torch_compile_fullgraph_the_same_bits(name):
    rope, cfg = _module(name)
    c = torch.tensor(eva02_coords((4, 4), (7, 7)) if name == "eva02" else dinov3_coords(4, 4))
    x = torch.randn(1, 2, 16, cfg.head_dim, generator=torch.Generator().manual_seed(3))
    compiled = torch.compile(lambda q, p: rope(q, q, positions=p)[0], fullgraph=True)
    assert torch.equal(compiled(x, c), rope(x, x, positions=c)[0])


def test_nothing_in_the_state_dict_and_half_keeps_the_ladder():
    rope, _ = _module("dinov3")
    assert dict(rope.state_dict()) == {}
    c = torch.tensor(dinov3_coords(2, 3))
    before = rope.cos_sin(6, positions=c)
    after = rope.half().cos_sin(6, positions=c)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


def test_fractional_positions_are_differentiable_in_q():
    rope, cfg = _module("eva02")
    x = torch.randn(1, 1, 4, cfg.head_dim, dtype=torch.float64, requires_grad=True)
    c = torch.tensor(eva02_coords((2, 2), (3, 3)))
    assert torch.autograd.gradcheck(lambda q: rope(q, q, positions=c)[0], (x,))


@pytest.mark.parametrize(("call", "needle"), [
    (lambda r: r(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), positions=torch.tensor([[0.0, 0.5]] * 3)),
     "[s, 2] with s = 2"),
    (lambda r: r(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), positions=torch.tensor([[0.0, float("nan")]] * 2)),
     "finite"),
    (lambda r: r(torch.zeros(1, 1, 1, 64), torch.zeros(1, 1, 1, 64), positions=torch.tensor([[2.0**53, 0.0]])),
     "2**53"),
    (lambda r: r(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), positions=torch.zeros(2, 2), offset=1),
     "either"),
    (lambda r: r(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), positions=torch.zeros(3, 2, 2)), "b = 1"),
])
def test_bad_real_positions_name_the_problem(call, needle):
    rope, _ = _module("eva02")
    with pytest.raises(PosEncError) as info:
        call(rope)
    assert needle in str(info.value)


def test_a_length_dependent_scaling_needs_seq_len_for_real_positions():
    q = torch.zeros(1, 1, 3, 64)
    with pytest.raises(PosEncError, match="seq_len"):
        RotaryEmbedding(64, scaling=DynamicNTK(2.0, 16))(q, q, positions=torch.tensor([0.0, 0.5, 1.0]))
    fixed = RotaryEmbedding(64, scaling=DynamicNTK(2.0, 16), seq_len=64)
    got = fixed.cos_sin(3, positions=torch.tensor([0.0, 0.5, 1.0]))[0]
    want = posenc.rope_cos_sin([0.0, 0.5, 1.0], 64, scaling=DynamicNTK(2.0, 16), seq_len=64)[0]
    assert np.array_equal(got.numpy(), want)


def test_meta_init_then_to_empty_rewrites_the_ladder_words():
    cfg = rope_preset("dinov3")
    with torch.device("meta"):
        meta = RotaryEmbedding(cfg.head_dim, layout=cfg.layout, **cfg.kwargs())
    meta.to_empty(device="cpu")  # uninitialised memory, but for the words LadderBuffers writes again
    ref, _ = _module("dinov3")
    for name in ("w0", "w1", "w2", "w0h", "w0l", "w1h", "w1l"):
        assert torch.equal(getattr(meta.angles, name), getattr(ref.angles, name))
    c = torch.tensor(dinov3_coords(4, 4))
    x = torch.randn(1, 2, 16, cfg.head_dim, generator=torch.Generator().manual_seed(4))
    compiled = torch.compile(lambda q, p: meta(q, q, positions=p)[0], fullgraph=True)  # the twin reads the words
    assert torch.equal(compiled(x, c), ref(x, x, positions=c)[0])
