"""A clash between a preset and a setting names what the user passed, never a default left out (issue 31).

Before: ``encode(3, 8, convention="keras", base=10000.0)`` said "got base=10000.0, layout='interleaved'": a layout
never passed. The section settings' messages named both section_layout and ladder when one was passed.
"""

from __future__ import annotations

from typing import Any

import pytest

import posenc
from posenc import PosEncError, RopeConfig


@pytest.mark.parametrize(("call", "shown", "not_shown"), [
    (lambda: posenc.encode(3, 8, convention="keras", base=10000.0), "base=10000.0", "layout"),
    (lambda: posenc.encode(3, 8, convention="keras", layout="split"), "layout='split'", "base="),
    (lambda: posenc.table(3, 8, convention="tensor2tensor", base=500.0), "base=500.0", "layout="),
], ids=["base only", "layout only", "table base only"])
def test_a_clash_with_a_convention_names_only_what_was_passed(call: Any, shown: str, not_shown: str) -> None:
    with pytest.raises(PosEncError) as info:
        call()
    msg = str(info.value)
    got = msg.split("; got ", 1)[1].split(" (", 1)[0]  # what the message says was passed
    assert msg.startswith("base and layout are part of the convention ") and got == shown, msg
    assert not_shown not in got


def test_both_settings_passed_are_both_named() -> None:
    with pytest.raises(PosEncError, match=r"^base and layout are part of the convention "
                                          r"Keras\(max_wavelength=10000\.0\); got base=1\.0, layout='split' "
                                          r"\(pass the convention alone"):
        posenc.encode(3, 8, convention="keras", base=1.0, layout="split")


@pytest.mark.parametrize(("call", "want"), [
    (lambda: posenc.rope_cos_sin([0, 1], 8, section_layout="interleaved"),
     r"^section_layout='interleaved': only multi-axis RoPE has a section layout and a ladder, so they need sections"),
    (lambda: RopeConfig(8, ladder="per_axis"),
     r"^ladder='per_axis': only multi-axis RoPE"),
    (lambda: posenc.rope_cos_sin([0, 1], 8, sections=posenc.Sections((2, 2)), ladder="shared"),
     r"^ladder='shared' beside a Sections: pass section_layout and ladder inside the Sections"),
], ids=["section_layout without sections", "ladder without sections", "ladder beside a Sections"])
def test_a_section_setting_message_names_only_the_one_passed(call: Any, want: str) -> None:
    with pytest.raises(PosEncError, match=want):
        call()
