"""Fuzz every pair of arguments of every public function, drawn hostile together (issue 18).

The single-argument fuzz (test_fuzz_api.py) draws each argument from its
hostile strategy, most of them left at their defaults. Values that are fine
alone may not be together: a preset with the base it fixes
(``encode(1, 4, convention="fairseq", base=np.array([1.0, 2.0]))`` escaped as
NumPy's "truth value is ambiguous"), a name compared as an array
(``role=np.array(["q"])`` passed as "q"). So here, for every function in
:data:`~test_fuzz_api.CASES` and every pair (a, b) of its parameters, a and
b are both drawn, each from its own hostile strategy or from
:func:`hostile.misplaced` (arrays, tensors and sequences where a scalar or
a name belongs, and the junk); the other required arguments from their
strategies, the other optional ones left at their defaults. The outcomes
allowed are those of the single-argument fuzz (:func:`~test_fuzz_api.judge`).

Besides the drawn pairs, an exhaustive sweep: every argument of every
function in turn gets every misplaced and every junk value, alone and beside
each preset of the functions that take one (a preset with an argument it
fixes is a pair too), the other required arguments a set that works.

Examples per pair: POSENC_PAIR_EXAMPLES, else a tenth of the hypothesis profile's (6 in the suite's, 60 in
the deep one). In all, 456 pairs
of 52 functions (2,736 calls) and 13,694 sweep calls; tests/fuzz/test_fuzz_torch.py
adds the torch modules' 169 pairs.
"""

from __future__ import annotations

import inspect
import itertools
import os
import re
import sys
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import find, given, settings
from test_fuzz_api import CASES, Case, drawn, judge

import posenc
from hostile import JUNK, misplaced, misplaced_values

PAIR_EXAMPLES = int(os.environ.get("POSENC_PAIR_EXAMPLES", max(1, settings().max_examples // 10)))


def fields(case: Case) -> tuple[dict[str, Any], dict[str, Any]]:
    """(required, optional) argument strategies of a case (recorded by test_fuzz_api._kw)."""
    return case.args.fields  # type: ignore[attr-defined, no-any-return]


def pairs(case: Case) -> list[tuple[str, str]]:
    required, optional = fields(case)
    return list(itertools.combinations([*required, *optional], 2))


PAIRS = [(name, a, b) for name in sorted(CASES) for a, b in pairs(CASES[name])]


def pair_args(case: Case, a: str, b: str) -> st.SearchStrategy[dict[str, Any]]:
    required, optional = fields(case)
    own = {**required, **optional}
    forced = {k: st.one_of(own[k], misplaced()) for k in (a, b)}
    return st.fixed_dictionaries({**{k: v for k, v in required.items() if k not in forced}, **forced})


@pytest.mark.parametrize(("name", "a", "b"), PAIRS, ids=[f"{n}:{a}+{b}" for n, a, b in PAIRS])
def test_hostile_pair(name, a, b):
    case = CASES[name]

    @settings(max_examples=PAIR_EXAMPLES)
    @given(drawn(pair_args(case, a, b)))
    def attempt(kw: dict[str, Any]) -> None:
        judge(case, kw)

    attempt()


def parameters(call: Any) -> set[str]:
    """The names ``call`` takes: its parameters, and the keys of a ``**settings: Unpack[XSettings]`` (a TypedDict)."""
    sig = inspect.signature(call)
    names = {p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    for p in sig.parameters.values():
        shared = re.fullmatch(r"Unpack\[(\w+)\]", str(p.annotation)) if p.kind is p.VAR_KEYWORD else None
        if shared:  # the TypedDict is imported where the parameters are written (only Unpack is the checker's alone)
            written = getattr(call, "__signature_of__", call)  # a backend's form: NumPy's def (support.signatures)
            names |= set(getattr(sys.modules[written.__module__], shared.group(1)).__annotations__)
    return names


def test_every_parameter_is_drawn():
    # the pairs are every pair of the signature's parameters: a case must draw each of them
    missing = {}
    for name, case in CASES.items():
        required, optional = fields(case)
        lacking = parameters(case.call) - set(required) - set(optional)
        if lacking:
            missing[name] = sorted(lacking)
    assert missing == {}


def test_pairs_are_counted():
    # the closing note of issue 18 gives this count: every pair of every public function's parameters
    assert len(PAIRS) == sum(len(pairs(c)) for c in CASES.values()) and len(set(PAIRS)) == len(PAIRS)
    assert ("encode", "base", "convention") in PAIRS and ("apply_rope", "xpos", "role") in PAIRS


#: the presets of the functions that take one: each is tried with every other argument misplaced
PRESETS = {**{n: posenc.conventions.NAMES for n in ("encode", "table")},
           **{n: posenc.conventions_nd.NAMES for n in ("encode_nd", "grid_report", "grid_similarity")},
           **{n: tuple(posenc.ALIBI_CONVENTIONS) for n in ("alibi_slopes", "alibi_bias")}}

#: required arguments that work, where hypothesis seldom draws a set that does (the patch must lie in the grid;
#: a processor's grid_thw must hold whole merge blocks: 500 draws once found none)
WORKING = {"grid_similarity": {"sizes": [2, 3], "d_model": 8, "patch": [1, 2]},
           "VisionGrid.from_processor": {"grid_thw": [1, 4, 6]}}


def _accepted(case: Case, kw: dict[str, Any]) -> bool:
    try:
        case.call(**kw)
    except Exception:  # looking for any call that works; judging is judge's
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_argument_misplaced(name):
    # exhaustive, not drawn: every argument in turn gets every misplaced value and every junk value, the
    # other required ones a set that works (found by hypothesis), the optional ones their defaults
    case = CASES[name]
    required, optional = fields(case)
    base = WORKING.get(name) or find(drawn(st.fixed_dictionaries(required)), lambda kw: _accepted(case, kw),
                                     settings=settings(max_examples=500, database=None, derandomize=True))
    assert _accepted(case, base), base
    for preset in [{}, *({"convention": p} for p in PRESETS.get(name, ()))]:  # and beside each preset
        for arg in {*required, *optional} - set(preset):
            for value in [*misplaced_values(), *JUNK]:
                judge(case, {**base, **preset, arg: value})
