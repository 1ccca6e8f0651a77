"""posenc.register_convention: a user's preset works through the public API as a built-in does (issue 19)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import posenc
from posenc import PosEncError, conventions


@dataclass(frozen=True)
class HalfSpeed(conventions.Convention):
    """A custom preset: the seed's ladder at base 10000, every position halved (ω_i / 2)."""

    name: ClassVar[str] = "half-speed"

    def plan(self, d_model: Any) -> conventions.Plan:
        from fractions import Fraction

        from posenc.exact import geometric_ladder

        d = int(d_model)
        return conventions.Plan(geometric_ladder(d // 2, 10000.0, Fraction(d // 2), Fraction(1, 2)), "interleaved", d)


def test_a_registered_preset_class_is_used_by_encode_and_table() -> None:
    posenc.register("sinusoid", "test-half-speed", HalfSpeed)
    p = np.arange(0, 40, 2)
    got = posenc.encode(p, 8, dtype=np.float64, convention="test-half-speed")
    # independent: the seed's encoding at positions p/2 (exact integers here) is the half-speed one at p
    want = posenc.encode(p // 2, 8, dtype=np.float64)
    assert np.array_equal(got, want)
    assert np.array_equal(posenc.table(20, 8, dtype=np.float64, convention="test-half-speed")[::2],
                          posenc.table(10, 8, dtype=np.float64))
    assert isinstance(conventions.get("test-half-speed"), HalfSpeed)


def test_a_registered_instance_is_returned_as_is() -> None:
    preset = conventions.Vaswani(base=100.0, layout="split")
    posenc.register("sinusoid", "test-base-100-split", preset)
    # the same preset again: a no-op
    posenc.register("sinusoid", "test-base-100-split", conventions.Vaswani(base=100.0, layout="split"))
    with pytest.raises(PosEncError, match="already registered"):
        posenc.register("sinusoid", "test-base-100-split", conventions.Vaswani(base=100.0))
    assert conventions.get("test-base-100-split") is preset
    assert np.array_equal(posenc.encode([3, 5], 6, convention="test-base-100-split"),
                          posenc.encode([3, 5], 6, base=100.0, layout="split"))


@pytest.mark.parametrize("name", ["keras", "", " spaced", 3, None])
def test_a_taken_or_bad_name_is_refused(name: Any) -> None:
    with pytest.raises(PosEncError, match=r"already registered|non-empty string"):
        posenc.register("sinusoid", name, conventions.Keras())


@pytest.mark.parametrize("preset", [3, "keras", lambda: 3])
def test_a_preset_that_is_no_convention_is_refused(preset: Any) -> None:
    name = f"test-bad-{id(preset)}"
    try:
        posenc.register("sinusoid", name, preset)
    except PosEncError as exc:
        assert "preset" in str(exc)
        return
    with pytest.raises(PosEncError, match=r"not a posenc\.conventions preset"):
        posenc.encode([0], 4, convention=name)


def test_threads_registering_at_once_each_get_their_name_once() -> None:
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def register(i: int) -> None:
        barrier.wait()
        try:
            posenc.register("sinusoid", "test-raced", conventions.Keras(max_wavelength=100.0 + i))
            outcomes.append("ok")
        except PosEncError:
            outcomes.append("refused")

    threads = [threading.Thread(target=register, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] + ["refused"] * 7
