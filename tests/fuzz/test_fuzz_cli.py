"""Fuzz every subcommand with hostile option values (issue 10): exit 0 with output, or exit 2 with one line naming it.

:data:`COMMANDS` is the table: per subcommand, a strategy of argument lists
mixing valid values with hostile text (``nan``, ``1e400``, 400 digits,
``0x10``, ``π``, ...). Allowed outcomes:

- exit 0 with output on stdout (valid JSON with ``--json``), nothing on stderr;
- exit 1 from a failed check, only where the command has one (``examples``,
  ``quiz``, ``shift``, ``context --check``);
- exit 2 with exactly one ``posenc: error: ...`` line on stderr that names
  an option or shows a value given, and no traceback.

Slow commands (``plot``, ``tour``, ``bench``) always get at least one
hostile value, and fewer examples: the fuzz is about what they refuse.
A new subcommand adds one row; the last test fails until it does.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from hostile import names_the_value, tokens
from posenc.cli import main
from posenc.cli._base import COMMANDS as REGISTERED


@dataclass(frozen=True)
class Command:
    """Argument lists for one subcommand, given the folder files may go to."""

    argv: Any  # Callable[[Path], SearchStrategy[list[str]]]
    checks: bool = False  # may exit 1 (a failed check)
    examples: int | None = None  # fewer than the profile's, for slow commands


def _opt(flag: str, valid: st.SearchStrategy[str], *, required: bool = False) -> st.SearchStrategy[list[str]]:
    """``[flag, value]`` (or nothing, when optional and left out)."""
    pair = tokens(valid).map(lambda v: [flag, v])
    return pair if required else st.one_of(st.just([]), pair)


def _flag(flag: str) -> st.SearchStrategy[list[str]]:
    return st.sampled_from([[], [flag]])


def _argv(*parts: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda ps: [tok for p in ps for tok in p])


_D = st.integers(1, 32).map(lambda k: str(2 * k))
_BASE = st.sampled_from(["10000", "100", "2", "5e5", "1e7"])
_POS = st.one_of(st.integers(-(10**6), 10**6).map(str), st.sampled_from(["2pi", "-2.5", "0.5*π", "2147483647"]))
_SMALL = st.integers(0, 20).map(str)
_SCALING = st.sampled_from([
    "yarn:factor=4,original_max=4096", "linear:factor=2", "ntk:factor=2", "dynamic:factor=2,original_max=16",
    "llama3:factor=8,low_freq_factor=1,high_freq_factor=4,original_max=8192",
    "longrope:short_factor=1/1,long_factor=1/1,original_max=8", "yarn:factor=1e400,original_max=64",
    "linear:factor=1e-320", "yarn:factor=4,original_max=4096,mscale=-100,mscale_all_dim=1", "bogus:x=1", "yarn",
    "yarn:factor=", "ntk:factor=" + "9" * 400, "linear:factor=1e-7", "dynamic:factor=2,original_max=0",
])

_MODEL = (_opt("--d-model", _D, required=True), _opt("--base", _BASE))
_OUT = (_opt("--digits", st.sampled_from(["0", "3", "17"])), _flag("--json"))
_LAYOUT = _opt("--layout", st.sampled_from(["interleaved", "split"]))
_ROPE = (st.sampled_from([[], ["--rope"], ["--rope", "half"], ["--rope", "interleaved"], ["--rope", "sideways"]]),
         _opt("--scaling", _SCALING), _opt("--rotary-dim", st.sampled_from(["2", "4", "8"])),
         _opt("--seq-len", st.sampled_from(["1", "100", "100000"])))


def _suffixed(folder: Path, suffixes: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(suffixes).map(lambda s: str(folder / f"out{s}"))


def _hostile_only(argv: st.SearchStrategy[list[str]], bad: list[str]) -> st.SearchStrategy[list[str]]:
    """Argument lists with at least one value from ``bad`` (a slow command must not run for real)."""
    return argv.filter(lambda a: any(t in bad for t in a))


def _not_endless(argv: list[str]) -> bool:
    """Leave out a table of more than 10**4 rows to stdout: a valid request that streams for minutes or hours."""
    if "--out" in argv:
        return True  # a file: its size is checked against the free space first
    text = argv[argv.index("--length") + 1]
    try:
        n = float(text)
    except ValueError:
        return True
    return not 1e4 < n < 2.0**53


_BAD = ["nan", "inf", "-inf", "-1", "0", "1e400", "-1e400", "9" * 400, "abc", "", " ", "0x10", "1_000", "2**53",
        "1/3", "-", "π", "½", "1e-320", "1e308", "1000000000000", "-0", "true", "None", "\x00", "1e15", "4.0"]

def _parity_argv(d: Path) -> st.SearchStrategy[list[str]]:
    """A checkpoint's config (a small Llama), one that is no JSON object, one that is missing; positions and layers."""
    (d / "config.json").write_text('{"hidden_size": 64, "num_attention_heads": 4, "rope_theta": 10000.0, '
                                   '"max_position_embeddings": 2048}')
    (d / "list.json").write_text("[1]")
    config = st.sampled_from([str(d / "config.json"), str(d / "list.json"), str(d / "missing.json"), str(d)])
    return _argv(config.map(lambda c: [c]), _opt("--positions", st.sampled_from(["0,1,10", "0,1000", "5"])),
                 _opt("--layer", st.sampled_from(["0", "1"])), *_OUT)


COMMANDS: dict[str, Command] = {
    "encode": Command(lambda d: _argv(st.lists(tokens(_POS), min_size=1, max_size=3), *_MODEL, _LAYOUT,
                                      _opt("--dtype", st.sampled_from(["float16", "float32", "float64"])), *_OUT)),
    "table": Command(lambda d: _argv(_opt("--length", _SMALL, required=True), _opt("--start", _POS), *_MODEL,
                                     _LAYOUT, _opt("--dtype", st.sampled_from(["float16", "float64"])),
                                     _opt("--out", _suffixed(d, [".npy", ".csv", ".json", ".txt", ".NPY"])), *_OUT
                                     ).filter(_not_endless)),
    "ladder": Command(lambda d: _argv(*_MODEL, _opt("--context", st.sampled_from(["100", "8192", "1e6"])), *_ROPE,
                                      *_OUT)),
    "context": Command(lambda d: _argv(tokens(st.sampled_from(["100", "8192", "1e6"])).map(lambda v: [v]), *_MODEL,
                                       _flag("--check"), *_ROPE, *_OUT), checks=True),
    "shift": Command(lambda d: _argv(_opt("--pos", _POS, required=True), _opt("--by", _POS, required=True), *_MODEL,
                                     _LAYOUT, *_OUT), checks=True),
    "dot": Command(lambda d: _argv(tokens(_POS).map(lambda v: [v]), tokens(_POS).map(lambda v: [v]), *_MODEL,
                                   *_OUT)),
    "alias": Command(lambda d: _argv(tokens(_POS).map(lambda v: [v]), tokens(_POS).map(lambda v: [v]), *_MODEL,
                                     _LAYOUT, _opt("--atol", st.sampled_from(["1e-9", "0", "0.5"])), *_OUT)),
    "examples": Command(lambda d: _argv(st.lists(tokens(st.sampled_from(list("ABCDEFGH"))), max_size=2), *_OUT),
                        checks=True, examples=20),
    "quiz": Command(lambda d: _argv(_flag("--no-input"), *_OUT), checks=True, examples=10),
    "plot": Command(lambda d: _hostile_only(_argv(
        st.sampled_from(["wave", "rotation", "heatmap", "kernel", "ladder", "rope", "spiral"]).map(lambda k: [k]),
        _opt("--out", _suffixed(d, [".png", ".svg", ".pdf"]), required=True),
        _opt("--dpi", st.sampled_from(["50", "100"])), _opt("--d-model", _D), _opt("--base", _BASE),
        _opt("--length", _SMALL), _opt("--max-offset", _SMALL), _opt("--context", _BASE)), _BAD), examples=30),
    "alibi": Command(lambda d: _argv(_opt("--heads", st.sampled_from(["1", "8", "12"]), required=True),
                                     _opt("--convention", st.sampled_from(["press", "bloom", "mpt"])),
                                     _opt("--bias-max", st.sampled_from(["8", "16"])),
                                     _opt("--penalty", st.sampled_from(["1", "0.5"])), *_OUT)),
    "buckets": Command(lambda d: _argv(_opt("--num-buckets", st.sampled_from(["32", "8"])),
                                       _opt("--max-distance", st.sampled_from(["128", "20"])),
                                       _flag("--unidirectional"), *_OUT)),
    "page": Command(lambda d: st.sampled_from([["--out", str(d / "blocker")], ["--out", str(d / "blocker" / "x")]]),
                    examples=4),
    "tour": Command(lambda d: st.sampled_from([["--out", str(d / "blocker")], ["--out", str(d / "blocker" / "x")]]),
                    examples=4),
    "bench": Command(lambda d: _hostile_only(_argv(
        _flag("--quick"), _opt("--repeats", st.sampled_from(["1", "3"])),
        _opt("--shape", st.sampled_from(["64x8", "1000000000000x512", "4096x100000", "10x3", "0x4", "axb"])),
        _flag("--json")), [*_BAD, "1000000000000x512", "4096x100000", "10x3", "0x4", "axb"]), examples=20),
    "parity": Command(_parity_argv, examples=10),
    "timestep": Command(lambda d: _argv(st.lists(tokens(_POS), min_size=1, max_size=3), _opt("--dim", _D),
                                        _opt("--convention", st.sampled_from(["diffusers", "flux", "guided-diffusion",
                                                                              "sd9"])), *_OUT)),
}


#: What the library calls each command's positional arguments (messages name them so).
POSITIONALS = {"encode": ("positions",), "context": ("context",), "dot": ("p", "q", "p - q"), "alias": ("p", "q"),
               "shift": ("k", "p", "pos", "by", "target p + k"), "examples": ("cell",),
               "timestep": ("t",)}


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    stdin = sys.stdin
    sys.stdin = io.StringIO("\n" * 50)  # quiz waits for Enter between questions
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        sys.stdin = stdin
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_hostile_command_lines(name, tmp_path):
    (tmp_path / "blocker").write_text("a file where a folder is expected\n")
    spec = COMMANDS[name]

    # a command's own count, scaled with the profile (make test-deep runs ten times as many)
    scale = settings().max_examples / settings.get_profile("posenc").max_examples
    @settings(max_examples=max(1, round(spec.examples * scale))) if spec.examples else (lambda f: f)
    @given(spec.argv(tmp_path))
    def attempt(args: list[str]) -> None:
        argv = [name, *args]
        code, out, err = _run(argv)
        assert "Traceback" not in err, err
        if code == 2:
            assert err.startswith("posenc: error: ") and err.count("\n") == 1, err
            if "the following arguments are required:" in err:  # argparse names the missing argument itself
                return
            names = [a for a in argv if a.startswith("--")] + [name, *POSITIONALS.get(name, ())]
            assert names_the_value(err, names, argv), (err, argv)
            return
        assert code == 0 or (code == 1 and spec.checks), (code, argv, err)
        assert out.strip(), argv
        if "--json" in argv:
            json.loads(out)
        if code == 0:
            assert err == "", err

    attempt()


def test_every_subcommand_is_fuzzed():
    assert set(REGISTERED) <= set(COMMANDS), sorted(set(REGISTERED) - set(COMMANDS))
