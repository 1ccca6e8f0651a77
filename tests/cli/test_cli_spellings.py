"""Whatever way a count or a number is typed, the command computes and writes the same (issues 31 §2, 36).

Before: ``posenc table --length 1e6 --d-model 4 --out t.npy`` exited 0 and wrote
a header ``{'shape': (1e6, 4), ...}`` that ``np.load`` refuses: the typed
numbers, whose ``repr`` is the text typed, reached NumPy, which writes the
header from ``repr``; ``--d-model 0_4`` wrote ``(3, 0_4)``, ``--length １０``
crashed with a latin-1 traceback. ``--d-model 4e0`` was taken where
``--grid 4e0,6.0``, ``--sections 2e0,6.0`` and ``bench --shape 1e3x8`` were
refused; ``--grid 0x10`` was a grid 0 by 10 where every count refused
``0x10``.

Every subcommand that writes a file or prints JSON runs here with all its
numbers spelled each way, and its output, read back with its consumer's
own reader (``np.load``, ``np.loadtxt``, ``json.loads``,
``matplotlib.image.imread``, ``html.parser``), must equal the output of the
same command with the numbers written plainly.
"""

from __future__ import annotations

import argparse
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_options import NUMBER_TYPES, OPTIONS, argv_with

import posenc.cli as cli
from cli_helpers import run
from posenc.cli import _base, build_parser
from posenc.cli import bench as cli_bench
from posenc.cli.typed import WrittenFloat, WrittenInt

#: The spellings of a count the command reads (the value 10 as "1e1", "1E1", "1_0", "+10", "10.0", "１０").
STYLES = ["1e6", "1E6", "1_000_000", "+5", "5.0", "１０"]
_FULL = {ord(str(d)): 0xFF10 + d for d in range(10)}


def spell(v: int, style: str) -> str:
    """``v`` written in ``style`` (one of :data:`STYLES`; ``"plain"``: digits)."""
    digits = str(v)
    if style == "plain":
        return digits
    if style in ("1e6", "1E6"):
        mantissa = digits.rstrip("0") or "0"
        return f"{mantissa}{'e' if style == '1e6' else 'E'}{len(digits) - len(mantissa)}"
    if style == "1_000_000":
        return f"{v:_}" if v >= 1000 else ("_".join(digits) if v >= 10 else f"0_{v}")
    if style == "+5":
        return f"+{v}"
    if style == "5.0":
        return f"{v}.0"
    assert style == "１０"
    return digits.translate(_FULL)


def test_the_spellings():
    assert [spell(1_000_000, s) for s in STYLES] == ["1e6", "1E6", "1_000_000", "+1000000", "1000000.0",
                                                     "１００００００"]
    assert [spell(4, s) for s in STYLES] == ["4e0", "4E0", "0_4", "+4", "4.0", "４"]
    assert [spell(16, s) for s in STYLES] == ["16e0", "16E0", "1_6", "+16", "16.0", "１６"]


# ---------------------------------------------------------------- every number option, parsed


def _spelled(kind: str, style: str) -> tuple[str, Any]:
    """An argument of ``kind`` spelled in ``style``, and the plain value it must parse to."""
    if kind == "counts":
        return f"{spell(16, style)},{spell(8, style)}", (16, 8)
    if kind == "shape":
        return f"{spell(16, style)}x{spell(8, style)}", (16, 8)
    return spell(16, style), 16


def test_the_sweep_covers_every_number_option():
    names = {(" ".join(p), a.option_strings[-1] if a.option_strings else a.dest) for p, a in OPTIONS}
    assert len(names) > 100
    assert {("ladder", "--grid"), ("ladder", "--sections"), ("bench", "--shape"), ("plot grid", "--patch"),
            ("table", "--length"), ("encode", "positions"), ("timestep", "t"), ("plot kernel", "--refs")} <= names


_PARSER = build_parser()


def _parsed(argv: list[str], dest: str) -> Any:
    typed = _PARSER.parse_args(argv)
    return cli.typed.plain_namespace(typed).__dict__[dest]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(("path", "action"), OPTIONS,
                         ids=[" ".join(p) + " " + (a.option_strings[-1] if a.option_strings else a.dest)
                              for p, a in OPTIONS])
def test_every_number_option_reads_every_spelling_as_the_same_value(path, action, style):
    kind = NUMBER_TYPES[action.type.__wrapped__.__name__]
    text, want = _spelled(kind, style)
    got = _parsed(argv_with(path, action, text), action.dest)
    plain = _parsed(argv_with(path, action, _spelled(kind, "plain")[0]), action.dest)
    if isinstance(action, argparse._AppendAction) or action.nargs in ("+", "*"):  # a list of the one value given
        (got,), (plain,) = got, plain
    assert got == plain == want
    flat = got if isinstance(got, tuple) else (got,)
    assert all(type(v) in (int, float) for v in flat)  # plain numbers, never the typed kind


@pytest.mark.parametrize(("path", "action"), OPTIONS,
                         ids=[" ".join(p) + " " + (a.option_strings[-1] if a.option_strings else a.dest)
                              for p, a in OPTIONS])
def test_every_number_option_refuses_0x10_naming_it(capsys, tmp_path, monkeypatch, path, action):
    monkeypatch.chdir(tmp_path)
    kind = NUMBER_TYPES[action.type.__wrapped__.__name__]
    text = {"counts": "4,0x10", "shape": "0x10x8"}.get(kind, "0x10")
    code, out, err = run(capsys, *argv_with(path, action, text))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"'{text}'" in err or "'0x10'" in err, err
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- every subcommand that writes or prints JSON


class N:
    """A number in a case, spelled by the run's style."""

    def __init__(self, *values: int) -> None:
        self.values = values

    def text(self, style: str) -> str:
        return ",".join(spell(v, style) for v in self.values)


class Spec:
    """A ``--scaling`` spec with its numbers spelled."""

    def __init__(self, name: str, **fields: int) -> None:
        self.name, self.fields = name, fields

    def text(self, style: str) -> str:
        return f"{self.name}:" + ",".join(f"{k}={spell(v, style)}" for k, v in self.fields.items())


_PLOT = {
    "wave": ["--d-model", N(4), "--base", N(10000), "--positions", N(8)],
    "rotation": ["--pos", N(3), "--by", N(5), "--d-model", N(4), "--base", N(10000), "--pair", N(1)],
    "heatmap": ["--length", N(16), "--start", N(8), "--d-model", N(16), "--base", N(10000)],
    "kernel": ["--d-model", N(16), "--base", N(10000), "--max-offset", N(100), "--refs", N(10), N(250)],
    "ladder": ["--d-model", N(64), "--base", N(10000), "--context", N(8192)],
    "rope": ["--head-dim", N(16), "--base", N(10000), "--pair", N(2), "--positions", N(24), "--max-offset", N(200),
             "--refs", N(10), N(1000), "--scaling", Spec("yarn", factor=4, original_max=4096)],
    "grid": ["--grid", N(8, 8), "--d-model", N(32), "--base", N(10000), "--patch", N(3, 4)],
    "alibi": ["--heads", N(8), "--max-distance", N(256), "--penalty", N(1), "--json"],
    "buckets": ["--num-buckets", N(32), "--max-distance", N(128), "--span", N(200), "--json"],
    "xpos": ["--rotary-dim", N(64), "--scale-base", N(512), "--max-offset", N(2048), "--json"],
    "timesteps": ["--dim", N(16), "--t-max", N(1000)],
}

#: name -> (arguments, output: "json" (stdout) or a file suffix).
CASES: dict[str, tuple[list[Any], str]] = {
    "table 1e6 .npy": (["table", "--length", N(1_000_000), "--d-model", N(4)], ".npy"),
    "table .npy": (["table", "--length", N(10), "--start", N(16), "--d-model", N(4), "--base", N(10000)], ".npy"),
    "table .csv": (["table", "--length", N(10), "--start", N(16), "--d-model", N(4), "--base", N(10000)], ".csv"),
    "table .json": (["table", "--length", N(10), "--start", N(16), "--d-model", N(4), "--base", N(10000)], ".json"),
    "table --json": (["table", "--length", N(10), "--start", N(16), "--d-model", N(4), "--digits", N(3)], "json"),
    "encode": (["encode", N(16), N(1000), "--d-model", N(8), "--base", N(10000), "--digits", N(4)], "json"),
    "ladder": (["ladder", "--d-model", N(16), "--base", N(10000), "--context", N(4096)], "json"),
    "ladder --rope": (["ladder", "--d-model", N(16), "--rope", "--rotary-dim", N(8), "--seq-len", N(4096),
                       "--scaling", Spec("yarn", factor=4, original_max=2048)], "json"),
    "ladder --grid": (["ladder", "--d-model", N(64), "--grid", N(16, 16)], "json"),
    "ladder --sections": (["ladder", "--d-model", N(64), "--grid", N(4, 16, 16), "--sections", N(8, 12, 12)], "json"),
    "context": (["context", N(4096), "--d-model", N(16), "--base", N(10000)], "json"),
    "context --rope": (["context", N(4096), "--d-model", N(16), "--rope", "--rotary-dim", N(8), "--seq-len", N(100)],
                       "json"),
    "context --grid": (["context", "--d-model", N(8), "--grid", N(16, 16)], "json"),
    "shift": (["shift", "--pos", N(3), "--by", N(5), "--d-model", N(8), "--base", N(10000)], "json"),
    "dot": (["dot", N(3), N(10), "--d-model", N(8), "--base", N(10000)], "json"),
    "alias": (["alias", N(3), N(10), "--d-model", N(8), "--atol", N(1)], "json"),
    "alibi": (["alibi", "--heads", N(8), "--penalty", N(2)], "json"),
    "alibi mpt": (["alibi", "--heads", N(6), "--bias-max", N(8)], "json"),
    "buckets": (["buckets", "--num-buckets", N(32), "--max-distance", N(128)], "json"),
    "timestep": (["timestep", N(500), N(10), "--dim", N(16)], "json"),
    **{f"plot {kind}": (["plot", kind, "--dpi", N(40), *args], ".png") for kind, args in _PLOT.items()},
}


def _cmd(case: list[Any], style: str) -> list[str]:
    return [a if isinstance(a, str) else a.text(style) for a in case]


def _read(path: Path, suffix: str) -> Any:
    """The file as its consumer reads it."""
    if suffix == ".npy":
        arr = np.load(path)
        return arr.dtype.str, arr.shape, arr.tobytes()
    if suffix == ".csv":
        return path.read_text().splitlines()[0], np.loadtxt(path, delimiter=",", skiprows=1).tobytes()
    if suffix == ".json":
        return json.loads(path.read_text())
    from matplotlib.image import imread

    return imread(path).tobytes()


def _output(capsys: Any, folder: Path, case: list[Any], out: str, style: str) -> Any:
    argv = _cmd(case, style)
    path = folder / f"{style}{out}"
    if out != "json":
        argv += ["--out", str(path)]
    elif argv[0] != "plot":
        argv.append("--json")
    code, stdout, err = run(capsys, *argv)
    assert (code, err) == (0, ""), (argv, err)
    printed = None
    if "--json" in argv:
        printed = json.loads(stdout)
        if isinstance(printed, dict):
            printed.pop("wrote", None)
    return printed, None if out == "json" else _read(path, out)


#: name -> the plain spelling's output: what every other spelling is compared with, made once per worker
_PLAIN: dict[str, Any] = {}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("name", list(CASES))
def test_every_spelling_gives_the_same_output(capsys, tmp_path, name, style):
    case, out = CASES[name]
    if case[0] == "plot":
        pytest.importorskip("matplotlib")
    if name not in _PLAIN:
        _PLAIN[name] = _output(capsys, tmp_path, case, out, "plain")
    assert _output(capsys, tmp_path, case, out, style) == _PLAIN[name]


def test_the_issue_s_table_loads(capsys, tmp_path):
    out = tmp_path / "t.npy"
    code, stdout, _ = run(capsys, "table", "--length", "1e6", "--d-model", "4", "--out", str(out))
    assert code == 0 and stdout.startswith(f"wrote {out}: 1000000 rows × 4 channels")
    assert np.load(out).shape == (1_000_000, 4)  # before: ValueError: shape is not valid: (1000000.0, 4)
    for d_model in ("4e0", "4.0", "0_4", "４"):
        code, _, err = run(capsys, "table", "--length", "3", "--d-model", d_model, "--out", str(out))
        assert code == 0 and np.load(out).shape == (3, 4), err


def test_bench_hands_plain_shapes_to_the_benchmark(capsys, monkeypatch):
    from posenc.bench import Report, Row

    seen = []

    def fake(**kwargs: Any) -> Report:  # the timing itself takes a minute; its arguments are what is checked
        seen.append(kwargs)
        rows = tuple(Row(operation=f"table {n}x{d} f32", method="posenc", median_ms=1.0, ratio=1.0)
                     for n, d in kwargs["shapes"])
        return Report(machine="test", rows=rows)

    monkeypatch.setattr(cli_bench, "run", fake)
    for style in ["plain", *STYLES]:
        code, stdout, err = run(capsys, "bench", "--quick", "--no-scaling", "--repeats", spell(2, style),
                                "--shape", f"{spell(1000, style)}x{spell(8, style)}", "--json")
        assert (code, err) == (0, "")
        assert [r["operation"] for r in json.loads(stdout)["rows"]] == ["table 1000x8 f32"]
    assert all(k["shapes"] == ((1000, 8),) and k["repeats"] == 2 for k in seen)
    assert all(type(v) is int for k in seen for v in (k["repeats"], *k["shapes"][0]))


def _written(value: Any) -> bool:
    if isinstance(value, (WrittenInt, WrittenFloat)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_written(v) for v in value)
    return False


@pytest.mark.parametrize("name", list(CASES))
def test_a_subcommand_gets_plain_numbers(capsys, tmp_path, monkeypatch, name):
    """What reaches a subcommand's code, hence the library: int and float, not the typed kinds."""
    case, _ = CASES[name]
    seen = {}
    original = _base.COMMANDS[case[0]]

    def spy(args: argparse.Namespace) -> int:
        seen.update(vars(args))
        return 0

    monkeypatch.setitem(_base.COMMANDS, case[0], _base.Command(original.name, original.help, original.setup, spy))
    code, _, err = run(capsys, *_cmd(case, "1e6"), *(["--out", str(tmp_path / "x.png")] if case[0] == "plot" else []))
    assert code == 0 and seen, err
    assert [k for k, v in seen.items() if _written(v)] == []


# ---------------------------------------------------------------- the subcommands without numbers


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)


@pytest.mark.parametrize("cmd", ["examples", "quiz"])
def test_the_seed_commands_print_json_that_loads(capsys, cmd):
    code, out, err = run(capsys, cmd, "--json")
    assert code == 0 and err == "" and isinstance(json.loads(out), dict)


def test_page_and_tour_write_files_their_readers_load(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    assert run(capsys, "page", "--out", str(tmp_path / "page"))[0] == 0
    assert run(capsys, "tour", "--out", str(tmp_path / "tour"))[0] == 0
    for page in (tmp_path / "page" / "index.html", tmp_path / "tour" / "index.html"):
        tags = _Tags()
        tags.feed(page.read_text(encoding="utf-8"))
        tags.close()
        assert tags.tags[0] == "html" and tags.tags[-1] == "/html" and "/body" in tags.tags
    for png in sorted((tmp_path / "tour").glob("*.png")):
        assert imread(png).ndim == 3
    assert len(list((tmp_path / "tour").glob("*.png"))) == 5
