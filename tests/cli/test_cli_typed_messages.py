"""A refusal quotes the value the user typed, not one derived from it or reformatted (issue 36).

Before: ``plot timesteps --t-max 1e300`` named ``3.9215686274509807e+297``
(t_max/255, the first sampled t too large); ``timestep 1e16`` quoted
``1e+16``; ``timestep 1e13 --convention flux`` said ``|p| = 10000000000000``;
``alias --atol -1e300`` said ``-1e+300``; ``plot buckets --max-distance 3e5``
named the span 450000 it implies; ``--scaling yarn:original_max=3.2768e4``
was refused as ``32768.0``; ``plot ladder --context 1e300`` ended in an
OverflowError traceback from matplotlib. The command now hands the library
plain numbers and words a refusal with the numbers as typed.
"""

from __future__ import annotations

import pytest
from cli_options import NUMBER_TYPES, OPTIONS, argv_with

from cli_helpers import run


def _refusal(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("posenc: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err.rstrip()


@pytest.mark.parametrize(("argv", "says"), [
    (["plot", "timesteps", "--t-max", "1e300"],
     "t_max must satisfy |p| < 2**53 (float64 holds every integer only below it), got 1e300"),
    (["plot", "timesteps", "--t-max", "1e13", "--convention", "flux"],
     "t_max must keep every angle |t·ω| < 2**53 for exact sin/cos; flux's fastest frequency is ω = 1000 (its time "
     "factor folded in): keep |t_max| < 9.0072e+12, got 1e13"),
    (["timestep", "1e16"], "t must satisfy |p| < 2**53 (float64 holds every integer only below it), got 1e16"),
    (["timestep", "3", "1E16"], "got 1E16"),
    (["timestep", "3", "1e13", "--convention", "flux"], "keep |t| < 9.0072e+12, got 1e13"),
    (["alias", "1", "2", "--d-model", "4", "--atol", "-1e300"], "atol must be >= 0, got -1e300"),
    (["plot", "buckets", "--max-distance", "3e5"],
     "max_distance must be <= 66667 to draw with the default span (1.5·max_distance, at most 100000; or give --span), "
     "got 3e5"),
    (["plot", "ladder", "--context", "1e300"], "context must be <= 1e250 to draw (a log axis overflows past it), "
                                               "got 1e300"),
    (["plot", "ladder", "--base", "1e280"], "base 1e280 with d_model 512 gives λ_max"),
    (["ladder", "--d-model", "8", "--scaling", "yarn:factor=4,original_max=32768.5"],
     "YaRN.original_max must be an integer, got 32768.5"),
    (["ladder", "--d-model", "8", "--scaling", "yarn:factor=-4e0,original_max=4096"], "got -4e0"),
    (["bench", "--shape", "4x1e6"], "--shape 4x1e6: D must be <= 65536"),
    (["ladder", "--d-model", "64", "--grid", "4,2.5"], "got '2.5' in '4,2.5'"),
])
def test_a_refusal_quotes_the_value_typed(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    if argv[0] == "plot":
        pytest.importorskip("matplotlib")
        argv = [*argv, "--out", "f.png"]
    err = _refusal(capsys, *argv)
    assert says in err, err
    assert not list(tmp_path.iterdir())  # the second run, which words the message, writes nothing


def test_a_count_in_a_scaling_reads_as_every_count_does(capsys):
    code, out, err = run(capsys, "ladder", "--d-model", "8", "--scaling", "yarn:factor=4e0,original_max=3.2768e4")
    assert code == 0 and "scaling yarn:factor=4,original_max=32768" in out, err


@pytest.mark.parametrize("typed", ["1e300", "-1e300", "1e16", "1E25"])
@pytest.mark.parametrize(("path", "action"), OPTIONS,
                         ids=[" ".join(p) + " " + (a.option_strings[-1] if a.option_strings else a.dest)
                              for p, a in OPTIONS])
def test_every_refusal_that_names_a_value_names_it_as_typed(capsys, tmp_path, monkeypatch, path, action, typed):
    monkeypatch.chdir(tmp_path)
    kind = NUMBER_TYPES[action.type.__wrapped__.__name__]
    text = {"counts": f"4,{typed}", "shape": f"{typed}x8"}.get(kind, typed)
    code, _, err = run(capsys, *argv_with(path, action, text))
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code == 2 and "got" in err:
        assert typed in err and "e+" not in err.split("got")[-1], err


# ---------------------------------------------------------------- how the message is worded


def test_a_late_refusal_is_not_reworded(capsys, monkeypatch):
    import posenc.cli.command as cli

    monkeypatch.setattr(cli, "REWORD_WITHIN", -1.0)  # every refusal counts as late: no second run
    err = _refusal(capsys, "timestep", "1e16")
    assert err.endswith("got 1e+16")  # the plain number's own repr


def test_a_second_run_that_ends_elsewhere_leaves_the_first_message(capsys, monkeypatch):
    from posenc.cli import _base
    from posenc.cli.typed import WrittenInt
    from posenc.errors import PosEncError

    def run_it(args):
        if isinstance(args.heads, WrittenInt):  # only in the second run, with the numbers as typed
            raise PosEncError(f"elsewhere, got {args.heads!r}")
        raise PosEncError(f"here, got {args.heads!r}")

    original = _base.COMMANDS["alibi"]
    monkeypatch.setitem(_base.COMMANDS, "alibi", _base.Command("alibi", original.help, original.setup, run_it))
    assert _refusal(capsys, "alibi", "--heads", "1e1").endswith("here, got 10")

    def same_place(args):
        raise PosEncError(f"here, got {args.heads!r}")

    monkeypatch.setitem(_base.COMMANDS, "alibi", _base.Command("alibi", original.help, original.setup, same_place))
    assert _refusal(capsys, "alibi", "--heads", "1e1").endswith("here, got 1e1")
    assert _refusal(capsys, "alibi", "--heads", "10").endswith("here, got 10")
