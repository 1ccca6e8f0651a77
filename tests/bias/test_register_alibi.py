"""posenc.register_alibi: a user's ALiBi variant works by name through the public API, as a built-in does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    posenc.register("alibi", "test-halved", Halved())
    assert posenc.alibi_slopes(4, convention="test-halved").tolist() == [0.125, 0.03125, 0.0078125, 0.001953125]
    got = posenc.alibi_bias(3, 3, 1, convention="test-halved")
    # slope 2**-9 on the paper's causal bias −m·(i − j)
    want = np.array([[[0.0, -np.inf, -np.inf], [-2**-9, 0.0, -np.inf], [-2**-8, -2**-9, 0.0]]], np.float32)
    assert np.array_equal(got, want)
    assert "test-halved" in posenc.bias.ALIBI_VARIANTS and "test-halved" not in posenc.ALIBI_CONVENTIONS


def test_a_registered_factory_and_the_torch_module() -> None:
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    posenc.register("alibi", "test-mpt-4", lambda: Mpt(alibi_bias_max=4.0))
    mine = pt.AlibiBias(2, convention="test-mpt-4")(3, 5, offset=2)
    assert torch.equal(mine, pt.AlibiBias(2, convention=Mpt(alibi_bias_max=4.0))(3, 5, offset=2))
    assert mine[0, 0, -1, -1].item() == 0.0 and mine[0, 0, -1, 0].item() == -4 * 0.25  # m·(j − (k_len − 1))


def test_unknown_names_list_the_registered_ones_and_bad_variants_are_refused() -> None:
    posenc.register("alibi", "test-listed", Halved())
    with pytest.raises(PosEncError, match=r"one of 'press', 'bloom', 'mpt'.*'test-listed'.*got 'nope'"):
        posenc.alibi_slopes(2, convention="nope")
    with pytest.raises(PosEncError, match="already registered"):
        posenc.register("alibi", "press", Halved())
    with pytest.raises(PosEncError, match="preset must be"):
        posenc.register("alibi", "test-bad", 3)
    posenc.register("alibi", "test-bad-factory", lambda: 3)
    with pytest.raises(PosEncError, match="returned 3"):
        posenc.alibi_bias(2, 2, 1, convention="test-bad-factory")


# ---------------------------------------------------------------- issues 31 and 36: a registered variant is checked
# Before: register_alibi took all of these; the bias then came out with 3 heads for 2, full of NaN, or raised a raw
# AttributeError ('str' object has no attribute 'shape') at use.


@dataclass(frozen=True)
class ThreeSlopes(Press):
    """Always three slopes, whatever the head count."""

    def slopes(self, n_heads: int) -> np.ndarray:
        return np.array([0.5, 0.25, 0.125])


@dataclass(frozen=True)
class NaNSlopes(Press):
    def slopes(self, n_heads: int) -> np.ndarray:
        return np.full(n_heads, np.nan)


@dataclass(frozen=True)
class TextSlopes(Press):
    def slopes(self, n_heads: int) -> Any:
        return "abc"


@dataclass(frozen=True)
class ZeroSlopes(Press):
    def slopes(self, n_heads: int) -> np.ndarray:
        return np.zeros(n_heads)


@dataclass(frozen=True)
class RightUpToThree(Press):
    """Correct at the head counts registration asks for (1, 2, 3), one slope too many beyond."""

    def slopes(self, n_heads: int) -> np.ndarray:
        return super().slopes(n_heads) if n_heads <= 3 else super().slopes(n_heads + 1)


@dataclass(frozen=True)
class EvenHeadsOnly(Press):
    """A variant that refuses odd head counts itself, with a PosEncError: a legitimate answer."""

    def slopes(self, n_heads: int) -> np.ndarray:
        if n_heads % 2:
            raise PosEncError(f"EvenHeadsOnly needs an even n_heads, got {n_heads}")
        return super().slopes(n_heads)


class Duck:
    """Every method a variant needs, but a plain (mutable) class."""

    def slopes(self, n_heads: int) -> np.ndarray:
        return Press().slopes(n_heads)

    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return k_pos - q_pos

    def reach(self, lo: float, hi: float) -> float:
        return hi - lo


@dataclass
class MutableDataclass(Duck):
    pass


@pytest.mark.parametrize(("variant", "why"), [
    (ThreeSlopes(), r"ThreeSlopes\(\): slopes\(1\) returned \[0\.5, 0\.25, 0\.125\] \(shape \(3,\) of float64\); "
                    r"expected float64 \[1\]"),
    (NaNSlopes(), r"NaNSlopes\(\): slopes\(1\) returned \[nan\]; every slope must be finite and > 0"),
    (TextSlopes(), r"TextSlopes\(\): slopes\(1\) returned 'abc'; expected float64 \[1\]"),
    (ZeroSlopes(), r"ZeroSlopes\(\): slopes\(1\) returned \[0\.0\]; every slope must be finite and > 0"),
    (Duck(), r"must be a frozen dataclass instance.*Duck object"),
    (MutableDataclass(), r"must be a frozen dataclass instance.*MutableDataclass\(\)"),
], ids=["wrong length", "nan", "str", "zero", "plain class", "non-frozen dataclass"])
def test_a_bad_variant_is_refused_when_it_is_registered(variant: Any, why: str) -> None:
    name = f"test-refused-{type(variant).__name__}"
    with pytest.raises(PosEncError, match=rf"register_alibi\('{name}'\): .*{why}"):
        posenc.register("alibi", name, variant)
    assert name not in posenc.bias.ALIBI_VARIANTS


@pytest.mark.parametrize(("variant", "why"), [
    (ThreeSlopes(), r"slopes\(2\) returned \[0\.5, 0\.25, 0\.125\] \(shape \(3,\) of float64\); "
                    r"expected float64 \[2\]"),
    (NaNSlopes(), r"slopes\(2\) returned \[nan, nan\]; every slope must be finite and > 0"),
    (TextSlopes(), r"slopes\(2\) returned 'abc'; expected float64 \[2\]"),
], ids=["wrong length", "nan", "str"])
def test_a_bad_variant_from_a_factory_or_given_directly_is_refused_at_use(variant: Any, why: str) -> None:
    name = f"test-factory-of-{type(variant).__name__}"
    posenc.register("alibi", name, lambda: variant)  # a factory is called at use: its variant is checked then
    for convention in (name, variant):
        for call, args in ((posenc.alibi_bias, (1, 3, 2)), (posenc.alibi_slopes, (2,)),
                           (posenc.bias.alibi_table, (2, 0, 3))):
            with pytest.raises(PosEncError, match=rf"the ALiBi variant {type(variant).__name__}\(\): {why}"):
                call(*args, convention=convention)


def test_a_wrong_length_past_the_probed_head_counts_is_refused_at_use() -> None:
    posenc.register("alibi", "test-right-up-to-three", RightUpToThree())  # 1, 2 and 3 heads are right
    assert posenc.alibi_bias(1, 3, 3, convention="test-right-up-to-three").shape == (3, 1, 3)
    with pytest.raises(PosEncError, match=r"slopes\(4\) returned .*\(shape \(5,\) of float64\); expected .*\[4\]"):
        posenc.alibi_bias(1, 3, 4, convention="test-right-up-to-three")


def test_a_variant_may_refuse_a_head_count_itself() -> None:
    posenc.register("alibi", "test-even-heads", EvenHeadsOnly())
    assert posenc.alibi_slopes(2, convention="test-even-heads").tolist() == [0.0625, 0.00390625]
    with pytest.raises(PosEncError, match="EvenHeadsOnly needs an even n_heads, got 3"):
        posenc.alibi_slopes(3, convention="test-even-heads")


def test_a_plain_class_given_as_the_convention_is_refused_naming_frozen() -> None:
    with pytest.raises(PosEncError, match=r"convention must be a frozen dataclass instance .*Duck object"):
        posenc.alibi_bias(1, 3, 2, convention=Duck())


def test_a_factory_that_raises_or_takes_arguments_is_a_posenc_error_naming_it() -> None:
    def broken() -> Any:
        raise RuntimeError("no variant today")

    posenc.register("alibi", "test-raising-factory", broken)
    with pytest.raises(PosEncError, match=r"the factory registered as 'test-raising-factory' raised RuntimeError: "
                                          r"no variant today") as info:
        posenc.alibi_bias(1, 3, 2, convention="test-raising-factory")
    assert isinstance(info.value.__cause__, RuntimeError)  # chained: the original is kept
    with pytest.raises(PosEncError, match=r"registered as 'test-arity' must be callable as f\(\), but its signature "
                                          r"is \(n_heads\)"):
        posenc.register("alibi", "test-arity", lambda n_heads: Press())
    assert "test-arity" not in posenc.bias.ALIBI_VARIANTS


@dataclass(frozen=True)
class JunkReach(Press):
    def reach(self, lo: float, hi: float) -> Any:
        return "far"


@dataclass(frozen=True)
class NaNCoefficient(Press):
    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return (k_pos - q_pos) * np.nan


@dataclass(frozen=True)
class WrongShapeCoefficient(Press):
    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return np.zeros(7)


@pytest.mark.parametrize(("variant", "why"), [
    (JunkReach(), r"JunkReach\(\): reach\(0\.0, 2\.0\) returned 'far'; expected a finite real >= 0"),
    (NaNCoefficient(), r"NaNCoefficient\(\): coefficient\(\.\.\.\) returned a non-finite distance term"),
    (WrongShapeCoefficient(), r"WrongShapeCoefficient\(\): coefficient\(\.\.\.\) returned float64 of shape \(7,\); "
                              r"expected a real array broadcastable to \(1, 3\)"),
], ids=["reach", "nan coefficient", "coefficient shape"])
def test_a_variant_whose_reach_or_coefficient_is_junk_is_refused_at_use(variant: Any, why: str) -> None:
    # before: a raw error (float('far')), a bias of NaN, or a raw broadcasting ValueError
    with pytest.raises(PosEncError, match=why):
        posenc.alibi_bias(1, 3, 2, offset=2, convention=variant)


@dataclass(frozen=True)
class StrCoefficient(Press):
    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return "x"


@dataclass(frozen=True)
class HalfCoefficient(Press):
    def coefficient(self, q_pos: Any, k_pos: Any, k_last: Any, causal: bool) -> Any:
        return (k_pos - q_pos) * 0.5


@pytest.mark.parametrize(("variant", "why"), [
    (NaNCoefficient(), r"NaNCoefficient\(\): coefficient\(\.\.\.\) returned a non-finite distance term"),
    (StrCoefficient(), r"StrCoefficient\(\): coefficient\(\.\.\.\) returned 'x'; expected a real tensor"),
    (WrongShapeCoefficient(), r"WrongShapeCoefficient\(\): coefficient\(\.\.\.\) returned .*\(shape \(7,\)\); "
                              r"expected a real tensor broadcastable to \(3, 3\)"),
    (HalfCoefficient(), r"HalfCoefficient\(\): coefficient\(\.\.\.\) returned fractional distance terms"),
], ids=["nan", "str", "shape", "fractional"])
def test_the_torch_module_checks_a_variants_coefficient_as_numpy_does(variant: Any, why: str) -> None:
    # before: the NaN was reported as a position, a str raised AttributeError 'numel', the wrong shape a raw
    # RuntimeError, and 0.5 was reported as a position the table cannot index
    pytest.importorskip("torch")
    import posenc.torch as pt

    with pytest.raises(PosEncError, match=why):
        pt.AlibiBias(2, convention=variant)(3, 3)


@pytest.mark.parametrize("variant", [NaNCoefficient(), StrCoefficient(), WrongShapeCoefficient()],
                         ids=["nan", "str", "shape"])
def test_the_jax_form_checks_a_variants_coefficient_as_numpy_does(variant: Any) -> None:
    pytest.importorskip("jax")
    import posenc.jax as pj

    with pytest.raises(PosEncError, match=type(variant).__name__ + r"\(\): coefficient"):
        pj.alibi_bias(3, 3, 2, convention=variant)
