"""posenc.register(kind, name, obj): one call for every family's registry; the name then works at every entry point."""

from __future__ import annotations

import numpy as np
import pytest

import posenc
from posenc import PosEncError
from posenc.bias import Mpt
from posenc.fields import NeRF
from posenc.registration import KINDS
from posenc.sinusoidal.conventions import Vaswani
from posenc.sinusoidal.conventions_nd import MAE
from posenc.timesteps import Diffusers


def test_each_kind_registers_into_its_familys_registry() -> None:
    posenc.register("sinusoid", "test-reg-base-100", Vaswani(base=100.0))
    assert np.array_equal(posenc.encode([3], 8, convention="test-reg-base-100"), posenc.encode([3], 8, base=100.0))
    posenc.register("sinusoid", "test-reg-mae", MAE(base=100.0))  # an n-D preset: encode_nd and grid find it
    assert np.array_equal(posenc.encode_nd([[1, 2]], 8, convention="test-reg-mae"),
                          posenc.encode_nd([[1, 2]], 8, convention=MAE(base=100.0)))
    posenc.register("alibi", "test-reg-mpt", Mpt(alibi_bias_max=4.0))
    assert np.array_equal(posenc.alibi_slopes(4, convention="test-reg-mpt"), Mpt(alibi_bias_max=4.0).slopes(4))
    posenc.register("scaling", "test-reg-linear", lambda rope, cfg: posenc.Linear(3.0), replace=True)
    cfg = posenc.from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "test-reg-linear"}})
    assert cfg.scaling == posenc.Linear(3.0)
    posenc.register("timesteps", "test-reg-unet", Diffusers(flip_sin_to_cos=True))
    assert np.array_equal(posenc.timestep_embedding([5.0], 8, convention="test-reg-unet"),
                          posenc.timestep_embedding([5.0], 8, convention=Diffusers(flip_sin_to_cos=True)))
    posenc.register("field", "test-reg-nerf", NeRF(log_sampling=False))
    assert np.array_equal(posenc.nerf_encoding([[0.25]], 3, convention="test-reg-nerf"),
                          posenc.nerf_encoding([[0.25]], 3, convention=NeRF(log_sampling=False)))


@pytest.mark.parametrize("kind", ["bias", "", None, 3, "Sinusoid"])
def test_an_unknown_kind_is_refused_naming_the_kinds(kind: object) -> None:
    with pytest.raises(PosEncError, match=r"kind must be one of 'sinusoid', 'alibi', 'scaling', 'timesteps', 'field'"):
        posenc.register(kind, "test-reg-never", Mpt())  # type: ignore[arg-type]


def test_replace_is_for_scalings_only_and_must_be_a_bool() -> None:
    with pytest.raises(PosEncError, match=r"replace=True: a alibi name is registered once"):
        posenc.register("alibi", "test-reg-replace", Mpt(), replace=True)
    with pytest.raises(PosEncError, match=r"replace must be True or False, got 1"):
        posenc.register("scaling", "test-reg-replace", lambda rope, cfg: None, replace=1)  # type: ignore[arg-type]
    assert "test-reg-replace" not in posenc.bias.ALIBI_VARIANTS


def test_the_familys_own_refusals_come_through() -> None:
    with pytest.raises(PosEncError, match=r"register_alibi\('press'\)|'press' is taken|already"):
        posenc.register("alibi", "press", Mpt())

    class Loose:  # a duck-typed variant, not a frozen dataclass
        def slopes(self, n_heads: int) -> np.ndarray:
            return np.ones(n_heads)

        def coefficient(self, q_pos: object, k_pos: object, k_last: object, causal: bool) -> object:
            return k_pos

        def reach(self, lo: float, hi: float) -> float:
            return hi - lo

    with pytest.raises(PosEncError, match="frozen"):
        posenc.register("alibi", "test-reg-loose", Loose())
    with pytest.raises(PosEncError, match="name"):
        posenc.register("timesteps", "bad\nname", Diffusers())


def test_the_kinds_are_the_literal_type() -> None:
    assert KINDS == ("sinusoid", "alibi", "scaling", "timesteps", "field")
    assert set(posenc.__all__) >= {"register"} and not {"register_alibi", "register_convention",
                                                        "register_scaling"} & set(posenc.__all__)
