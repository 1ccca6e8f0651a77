"""The command says what it means: counts written like positions, values shown as typed, help that matches itself.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

import mpmath
import pytest
from cli_options import parsers

from cli_helpers import run, run_json
from posenc.cli import build_parser
from reference import omega

BIG = "9" * 100_000  # a 100 KB argument


# ---------------------------------------------------------------- counts written as positions are

def test_counts_accept_integral_scientific_notation(capsys):
    code, data = run_json(capsys, "table", "--length", "1e1", "--start", "-1e1", "--d-model", "4", "--dtype", "float64")
    assert code == 0 and data["start"] == -10 and data["length"] == 10 and len(data["table"]) == 10
    assert data["table"][0][2] == pytest.approx(float(mpmath.sin(-10 * omega(4, 10000.0, 1))), abs=1e-16)
    code, out, _ = run(capsys, "encode", "1", "--d-model", "8e0", "--digits", "2e0")
    assert code == 0 and "d_model 8" in out and "0.84" in out and "0.841" not in out


@pytest.mark.parametrize(("value", "shown"),
                         [("2.5", "'2.5'"), ("1e-3", "'1e-3'"), ("nan", "'nan'"), ("1e400", "'1e400'")])
def test_a_count_that_is_no_integer_is_named_as_typed(capsys, value, shown):
    code, out, err = run(capsys, "table", "--length", value, "--d-model", "4")
    assert (code, out) == (2, "")
    assert err.startswith("posenc: error: argument --length: expected an integer") and err.rstrip().endswith(shown)


# ---------------------------------------------------------------- values as the user wrote them

@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["encode", "1e300", "--d-model", "4"], "|p| < 2**53 (float64 holds every integer only below it), got 1e300"),
        (["encode", "-1e300", "--d-model", "4"], "got -1e300"),  # a negative exponent form is a value, not an option
        (["encode", "0", "2pi", "-inf", "--d-model", "4"], "got -inf"),
        (["encode", "1", "--d-model", "4", "--base", "1e400"], "got 1e400"),
        (["encode", "1", "--d-model", "4", "--base", "0.5e0"], "got 0.5e0"),
        (["context", "1e400", "--d-model", "4"], "got 1e400"),
        (["ladder", "--d-model", "4", "--context", "-1e300"], "got -1e300"),
        (["alias", "0", "1e300", "--d-model", "4"],
         "q must satisfy |p| < 2**53 (float64 holds every integer only below it), got 1e300"),
        (["shift", "--pos", "3", "--by", "-1e16", "--d-model", "4"],
         "k must satisfy |p| < 2**53 (float64 holds every integer only below it), got -1e16"),
        (["shift", "--pos", "4503599627370496", "--by", "4503599627370496", "--d-model", "4"],
         "the target P + K must satisfy |p| < 2**53 (float64 holds every integer only below it), got 9007199254740992"),
        (["dot", "4503599627370496", "-4503599627370496", "--d-model", "4"],
         "p - q must satisfy |p - q| < 2**53, got p - q = 9007199254740992"),
        (["dot", "4503599627370496", "-4503599627370495.5", "--d-model", "4"], "got p - q = 9007199254740991.5"),
        (["plot", "wave", "--positions", "1e3", "--out", "w.png"], "positions must be <= 64 (each dot is labelled), "
                                                                   "got 1e3"),
        (["plot", "kernel", "--refs", "0", "1e300", "--out", "k.png"], "got 1e300"),
        (["plot", "wave", "--dpi", "5e0", "--out", "w.png"], "--dpi must be 10 … 1000, got 5e0"),
    ],
)
def test_messages_show_values_as_typed(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert says in err and err.rstrip().endswith(says.split("got ")[-1]), err
    assert "np." not in err and "float64(" not in err and "e+" not in err
    assert not list(tmp_path.iterdir())  # no figure written


def test_negative_positions_in_every_form_are_values(capsys):
    _, by_pi = run_json(capsys, "shift", "--pos", "3", "--by", "-2pi", "--d-model", "4")
    _, data = run_json(capsys, "encode", "-1.5e1", "-pi", "--d-model", "4", "--dtype", "float64")
    assert by_pi["by"] == pytest.approx(-2 * float(mpmath.pi), rel=1e-16)
    assert data["encoding"][0][0] == pytest.approx(float(mpmath.sin(-15)), abs=1e-16)
    assert data["encoding"][1][0] == pytest.approx(0.0, abs=2e-16)  # sin(-π)


def _options(keep: Callable[[argparse.Action], bool], *, positional: bool = False) -> list[tuple[list[str], str]]:
    """(subcommand path, option) for every option of every subcommand that ``keep`` takes; "" for a positional slot."""
    found = []
    for path, parser in parsers():
        found += [(path, a.option_strings[-1]) for a in parser._actions
                  if a.option_strings and not isinstance(a, argparse._SubParsersAction) and keep(a)]
        if path and positional:
            found.append((path, ""))
    return found


def _value_options() -> list[tuple[list[str], str]]:
    """Every option that takes a value, and every subcommand's positional slot."""
    return _options(lambda a: a.nargs != 0 and a.dest != "help", positional=True)


@pytest.mark.parametrize("big", [BIG, BIG + "x", " " * 50_000 + "2 pi x"], ids=["digits", "digits+x", "spaces"])
@pytest.mark.parametrize(("path", "flag"), _value_options(), ids=lambda x: " ".join(x) if isinstance(x, list) else x)
def test_a_100kb_argument_gives_a_one_line_message(capsys, tmp_path, monkeypatch, path, flag, big):
    """Read in linear time too: a backtracking parser would not finish on the digits + x."""
    monkeypatch.chdir(tmp_path)
    argv = [*path, flag, big] if flag else [*path, big]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("posenc: error: ") and err.count("\n") == 1
    assert len(err) < 400, err[:400]
    if BIG[:30] in err:  # the value is named: its head, its tail and its length
        assert re.search(r"…[9xX]+\W* \(1000\d\d characters\)", err), err[:400]


# ---------------------------------------------------------------- rejected integer options, as typed

# Before: an integer option went through check_int, which returned a bare int, so a later check showed
# 1e+25 (a float rounding), 10000000000000000000000000, or 100 for what the user typed as 1e25 or 1e2.
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["table", "--length", "3", "--d-model", "4", "--start", "1e25"], "got start = 1e25"),
        (["table", "--length", "3", "--d-model", "4", "--start", "1E25"], "got start = 1E25"),
        (["table", "--length", "3", "--d-model", "4", "--start", "-1.5e25"], "got start = -1.5e25"),
        (["table", "--length", "1e25", "--d-model", "4"],  # the last position, exact: 10**25 - 1, not 1e+25
         "got start+length-1 = 9999999999999999999999999 (start 0, length 1e25)"),
        (["table", "--length", "2E0", "--start", "9007199254740991", "--d-model", "4"],
         "got start+length-1 = 9007199254740992 (start 9007199254740991, length 2E0)"),
        (["plot", "heatmap", "--start", "1E25", "--out", "h.png"], "got start = 1E25"),
        (["encode", "1", "--d-model", "4", "--digits", "1E2"], "expected 0 … 17 decimal places, got 1E2"),
        (["table", "--length", "3", "--d-model", "4", "--digits", "1e25"], "decimal places, got 1e25"),
        (["table", "--length", "3", "--d-model", "1E25"], "got 1E25"),
        (["plot", "alibi", "--heads", "1e2", "--out", "a.png"], "n_heads must be <= 64 to draw, got 1e2"),
        (["plot", "alibi", "--max-distance", "1E25", "--out", "a.png"],
         "max_distance must be <= 100000 to draw, got 1E25"),
        (["plot", "buckets", "--span", "2e5", "--out", "b.png"], "span must be <= 100000 to draw, got 2e5"),
        (["plot", "xpos", "--max-offset", "1e25", "--out", "x.png"], "max_offset must be <= 100000 to draw, got 1e25"),
        (["plot", "xpos", "--rotary-dim", "2.048e3", "--out", "x.png"],
         "rotary_dim must be <= 1024 to draw, got 2.048e3"),
        (["plot", "grid", "--d-model", "1e25", "--out", "g.png"], "× d_model 1e25 is too large"),
        (["buckets", "--num-buckets", "2e0"], "exact bucket), got 2e0"),
        (["buckets", "--max-distance", "-1e1"], "the logarithmic buckets start there), got -1e1"),
        (["ladder", "--d-model", "8", "--rope", "--rotary-dim", "1.6e1"],
         "rotary_dim must be <= head_dim = 8, got 1.6e1"),
    ],
)
def test_rejected_integer_options_show_the_text_typed(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("posenc: error: ") and err.count("\n") == 1 and says in err, err
    assert "e+" not in err and "10000000000000000000000000" not in err  # no float rounding, no bare int
    assert not list(tmp_path.iterdir())  # no figure written


@pytest.mark.parametrize("typed", ["12.5", "0x10", "1e-3", "1e40"])
@pytest.mark.parametrize("option", [["table", "--length", "3", "--d-model", "4", "--start"],
                                    ["plot", "alibi", "--out", "a.png", "--heads"],
                                    ["encode", "1", "--d-model", "4", "--digits"]])
def test_a_value_no_integer_option_reads_is_named_as_typed(capsys, tmp_path, monkeypatch, option, typed):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *option, typed)
    assert (code, out) == (2, "")
    assert err.startswith(f"posenc: error: argument {option[-1]}: expected an integer")
    assert err.rstrip().endswith(f"got '{typed}'"), err


_BASE = {"encode": ["1", "--d-model", "4"], "table": ["--length", "3", "--d-model", "4"], "ladder": ["--d-model", "4"],
         "context": ["4096", "--d-model", "4"], "shift": ["--pos", "3", "--by", "1", "--d-model", "4"],
         "dot": ["1", "2", "--d-model", "4"], "alias": ["1", "2", "--d-model", "4"], "alibi": ["--heads", "4"],
         "buckets": [], "plot": ["--out", "f.png"], "bench": ["--quick"], "timestep": ["1"],
         "parity": ["config.json"]}


def _integer_options() -> list[tuple[list[str], str]]:
    """Every option read by the integer type (``1e6``)."""
    from posenc.cli._base import _digits, integer

    # the parser reads every type through posenc.cli.typed.unmarked, which wraps it
    return _options(lambda a: getattr(a.type, "__wrapped__", a.type) in (integer, _digits))


def test_the_sweep_covers_the_integer_options():
    options = _integer_options()
    assert len(options) > 40 and (["plot", "alibi"], "--heads") in options and (["table"], "--start") in options


@pytest.mark.parametrize("typed", ["1E25", "-1e25"])
@pytest.mark.parametrize(("path", "flag"), _integer_options(), ids=lambda x: " ".join(x) if isinstance(x, list) else x)
def test_every_integer_option_rejects_1e25_as_typed(capsys, tmp_path, monkeypatch, path, flag, typed):
    monkeypatch.chdir(tmp_path)
    extra = ["--rope"] if flag in ("--rotary-dim", "--seq-len") and path[0] in ("ladder", "context") else []
    code, out, err = run(capsys, *path, *_BASE[path[0]], *extra, flag, typed)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and typed in err and "e+" not in err, err


# ---------------------------------------------------------------- headings and help

def test_encode_split_heading_states_the_split_formula(capsys):
    _, out, _ = run(capsys, "encode", "5", "--d-model", "6", "--layout", "split")
    heading = out.splitlines()[0]
    assert "PE(pos, i) = sin(ω_i·pos), PE(pos, 3+i) = cos(ω_i·pos)" in heading and "2i" not in heading
    # the table below agrees: channel 3 + i holds cos of pair i (values from mpmath)
    _, data = run_json(capsys, "encode", "5", "--d-model", "6", "--layout", "split", "--dtype", "float64")
    for i in range(3):
        assert data["encoding"][0][3 + i] == pytest.approx(float(mpmath.cos(5 * omega(6, 10000.0, i))), abs=2e-16)
        assert data["encoding"][0][i] == pytest.approx(float(mpmath.sin(5 * omega(6, 10000.0, i))), abs=2e-16)
    _, out, _ = run(capsys, "encode", "5", "--d-model", "6")
    assert "PE(pos, 2i) = sin(ω_i·pos), PE(pos, 2i+1) = cos(ω_i·pos)" in out.splitlines()[0]


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    out = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        out.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(sub, f"{name} {sub_name}")

    walk(build_parser(), "posenc")
    return out


# a lone capital letter in a help text is a name the reader looks up in the usage line
_SYMBOL = re.compile(r"(?<![\w.])([A-Z])(?![\w(]|-[A-Za-z])")  # not M-RoPE's M


@pytest.mark.parametrize(("name", "parser"), _parsers(), ids=lambda x: x if isinstance(x, str) else "")
def test_help_names_only_its_own_metavars(name, parser):
    metavars = set()
    for action in parser._actions:
        shown = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
        for m in shown if isinstance(shown, tuple) else [shown]:
            metavars.update(re.split(r"\W+", m))  # H,W names H and W
    texts = [parser.description or ""] + [a.help or "" for a in parser._actions]
    for text in texts:
        values = re.sub(r"\b[A-Z]–[A-Z]\b|\b(?:[A-Z] ){2,}[A-Z]\b", "", text)  # A–H, A B … H: the seed's cells
        for symbol in _SYMBOL.findall(values):
            assert symbol in metavars, (name, symbol, text)


def test_plot_help_writes_the_formula_in_its_metavars(capsys):
    code, out, _ = run(capsys, "plot", "ladder", "--help")
    assert code == 0 and "--d-model D" in out and "--base B" in out and "B^(-2i/D)" in out
    _, out, _ = run(capsys, "plot", "rope", "--help")
    assert "--head-dim H" in out and "B^(-2i/H)" in out


@pytest.mark.parametrize("cmd", ["quiz", "examples"])
def test_the_seed_commands_offer_no_digits_they_would_ignore(capsys, cmd):
    code, out, _ = run(capsys, cmd, "--help")
    assert code == 0 and "--digits" not in out and "table" not in out
    assert run(capsys, cmd, "--digits", "3")[0] == 2


@pytest.mark.parametrize(
    "argv",
    [["encode", "1", "--d-model", "4"], ["table", "--length", "2", "--d-model", "4"], ["ladder", "--d-model", "4"],
     ["context", "100", "--d-model", "4"], ["shift", "--pos", "1", "--by", "2", "--d-model", "4"],
     ["dot", "1", "2", "--d-model", "4"], ["alias", "1", "2", "--d-model", "4"]],
)
def test_digits_changes_what_is_printed(capsys, argv):
    _, few, _ = run(capsys, *argv, "--digits", "2")
    _, many, _ = run(capsys, *argv, "--digits", "9")
    assert few != many
