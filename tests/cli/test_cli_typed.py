"""Negative values read as values, and values shown as typed, through argparse's public interface only.

Expected numbers come from mpmath or are written out here, never from posenc's own output.
"""

from __future__ import annotations

import argparse
import math

import mpmath
import pytest

import posenc
from cli_helpers import run, run_json
from posenc.cli import build_parser
from posenc.cli.typed import MARK, Shown, mark_negatives, unmarked, written_float, written_int
from posenc.errors import show_value


def _sin(p: float, i: int, d: int) -> float:
    return float(mpmath.sin(mpmath.mpf(p) * mpmath.power(10000, mpmath.mpf(-2 * i) / d)))


@pytest.mark.parametrize(("typed", "value"), [("-3", -3.0), ("-2.5", -2.5), ("-.5", -0.5), ("-1e2", -100.0),
                                              ("-1_000", -1000.0), ("-2pi", -2 * math.pi), ("-0.5*π", -math.pi / 2)])
def test_a_negative_position_in_any_form_is_a_value(capsys, typed, value):
    code, data = run_json(capsys, "encode", typed, "--d-model", "4", "--dtype", "float64")
    assert code == 0
    assert data["positions"] == [pytest.approx(value, abs=0)]
    assert data["encoding"][0][2] == pytest.approx(_sin(value, 1, 4), abs=1e-16)


def test_negative_values_sit_anywhere_among_options(capsys):
    # before the option, after it, as an option's value, beside a positive one
    _, a = run_json(capsys, "dot", "-3", "-1e1", "--d-model", "4")
    _, b = run_json(capsys, "dot", "--d-model", "4", "-3", "-1e1")
    assert a == b
    code, out, err = run(capsys, "shift", "--pos", "-1e1", "--by", "-2pi", "--d-model", "4")
    assert code in (0, 1) and err == "" and out


@pytest.mark.parametrize(("argv", "says"), [
    (["encode", "-1e300", "--d-model", "4"], "got -1e300"),
    (["encode", "-inf", "--d-model", "4"], "got -inf"),
    (["encode", "-9007199254740993", "--d-model", "4"], "got -9007199254740993"),
    (["table", "--length", "3", "--d-model", "-4e0"], "got -4e0"),
    (["encode", "1", "--d-model", "4", "--layout", "-3"], "invalid choice: '-3'"),
    (["encode", "1", "--d-model", "-2.5"], "expected an integer, got '-2.5'"),
    (["-3"], "invalid choice: '-3'"),
    (["bench", "--shape", "-4x8"], "got '-4x8'"),
])
def test_a_rejected_negative_value_is_quoted_as_typed(capsys, argv, says):
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("posenc: error: ") and err.count("\n") == 1 and says in err, err
    assert MARK not in err and "\\x00" not in err


def test_the_parser_leaves_argparse_private_matcher_alone():
    # read here (never set by posenc): each parser keeps argparse's own
    default = argparse.ArgumentParser()._negative_number_matcher.pattern
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {p._negative_number_matcher.pattern for p in [parser, *sub.choices.values()]} == {default}


def test_every_value_taking_argument_reads_unmarked():
    # a text argument (no type) gets the text as typed: no mark left in it
    args = build_parser().parse_args(["plot", "heatmap", "--out", "-3.png"])
    assert args.out == "-3.png"
    args = build_parser().parse_args(["encode", "-1e300", "--d-model", "4"])
    assert args.positions == [-1e300] and repr(args.positions[0]) == "-1e300"


def test_marking():
    assert mark_negatives(["-3", "--json", "-pi", "-x", "3", "-", "--"]) == [MARK + "-3", "--json", MARK + "-pi",
                                                                            "-x", "3", "-", "--"]
    assert mark_negatives(mark_negatives(["-3"])) == [MARK + "-3"]  # once only: subparsers parse again
    read = unmarked(int)
    assert read(MARK + "-3") == -3 and read.__wrapped__ is int  # type: ignore[attr-defined]
    with pytest.raises(argparse.ArgumentTypeError, match=r"^invalid int value: '-x'$"):
        read(MARK + "-x")
    assert unmarked(None)(MARK + "-3") == "-3"


def test_a_typed_value_shows_as_typed_and_computes_as_its_number():
    n, x = written_int(10**6, " 1e6 "), written_float(2 * math.pi, "2pi")
    assert (repr(n), str(n), f"{n}", n + 1) == ("1e6", "1000000", "1000000", 1000001)
    assert (repr(x), str(x), f"{x:.3f}") == ("2pi", repr(2 * math.pi), "6.283")
    assert (show_value(n), show_value(x), show_value(Shown("a b"))) == ("1e6", "2pi", "a b")
    with pytest.raises(posenc.PosEncError, match=r"got 1e400pi$"):  # deep in the library, still as typed
        posenc.encode([1.0, written_float(math.inf, "1e400pi")], 4)


@pytest.mark.parametrize("group", ["add_mutually_exclusive_group", "add_argument_group"])
def test_an_argument_in_a_group_reads_unmarked(group):
    from posenc.cli._base import CommandError, Parser, real

    parser = Parser(prog="t")
    getattr(parser, group)().add_argument("--x", type=real)
    parser.add_argument("y", nargs="*")
    args = parser.parse_args(["--x", "-1e300", "-2pi"])
    assert (repr(args.x), args.y) == ("-1e300", ["-2pi"])
    with pytest.raises(CommandError, match=r"^unrecognized arguments: -x3$"):  # no number: still an option
        parser.parse_args(["-x3"])
