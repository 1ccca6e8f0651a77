"""posenc.register_alibi: a user's ALiBi variant works by name through the public API, as a built-in does."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import posenc
from posenc import PosEncError
from posenc.bias import Mpt, Press


@dataclass(frozen=True)
class Halved(Press):
    """The paper's form with every slope halved (a variant no built-in makes)."""

    def slopes(self, n_heads: int) -> np.ndarray:
        return super().slopes(n_heads) / 2


def test_a_registered_variant_is_used_by_slopes_and_bias() -> None:
    posenc.register_alibi("test-halved", Halved())
    assert posenc.alibi_slopes(4, convention="test-halved").tolist() == [0.125, 0.03125, 0.0078125, 0.001953125]
    got = posenc.alibi_bias(3, 3, 1, convention="test-halved")
    # slope 2**-9 on the paper's causal bias −m·(i − j)
    want = np.array([[[0.0, -np.inf, -np.inf], [-2**-9, 0.0, -np.inf], [-2**-8, -2**-9, 0.0]]], np.float32)
    assert np.array_equal(got, want)
    assert "test-halved" in posenc.bias.ALIBI_VARIANTS and "test-halved" not in posenc.ALIBI_CONVENTIONS


def test_a_registered_factory_and_the_torch_module() -> None:
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    posenc.register_alibi("test-mpt-4", lambda: Mpt(alibi_bias_max=4.0))
    mine = pt.AlibiBias(2, convention="test-mpt-4")(3, 5, offset=2)
    assert torch.equal(mine, pt.AlibiBias(2, convention=Mpt(alibi_bias_max=4.0))(3, 5, offset=2))
    assert mine[0, 0, -1, -1].item() == 0.0 and mine[0, 0, -1, 0].item() == -4 * 0.25  # m·(j − (k_len − 1))


def test_unknown_names_list_the_registered_ones_and_bad_variants_are_refused() -> None:
    posenc.register_alibi("test-listed", Halved())
    with pytest.raises(PosEncError, match=r"one of 'press', 'bloom', 'mpt'.*'test-listed'.*got 'nope'"):
        posenc.alibi_slopes(2, convention="nope")
    with pytest.raises(PosEncError, match="already registered"):
        posenc.register_alibi("press", Halved())
    with pytest.raises(PosEncError, match="preset must be"):
        posenc.register_alibi("test-bad", 3)
    posenc.register_alibi("test-bad-factory", lambda: 3)
    with pytest.raises(PosEncError, match="returned 3"):
        posenc.alibi_bias(2, 2, 1, convention="test-bad-factory")
