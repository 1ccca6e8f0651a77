"""Every option of the command that takes a number, and an argument list that parses with it.

Shared by the spellings sweep (tests/cli/test_cli_spellings.py) and the
messages sweep (tests/cli/test_cli_typed_messages.py).
"""

from __future__ import annotations

import argparse

from posenc.cli import build_parser

#: The argument types that read numbers, and what they read.
NUMBER_TYPES = {"integer": "count", "_digits": "count", "real": "number", "position": "number",
                 "int_list": "counts", "_shape": "shape"}


def parsers() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """(subcommand path, parser) for the command and every subcommand, depth first."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


def number_options() -> list[tuple[list[str], argparse.Action]]:
    return [(path, action) for path, parser in parsers() for action in parser._actions
            if getattr(getattr(action.type, "__wrapped__", None), "__name__", None) in NUMBER_TYPES]


#: What each subcommand needs besides the option under test, to parse.
_NEEDS = {"encode": ["1", "--d-model", "4"], "table": ["--length", "3", "--d-model", "4"],
          "ladder": ["--d-model", "4"], "context": ["4096", "--d-model", "4"],
          "shift": ["--pos", "3", "--by", "1", "--d-model", "4"], "dot": ["1", "2", "--d-model", "4"],
          "alias": ["1", "2", "--d-model", "4"], "alibi": ["--heads", "4"], "buckets": [], "plot": ["--out", "f.png"],
          "bench": [], "timestep": ["1"], "parity": ["config.json"]}


#: Where a positional slot's value goes: the arguments before it and after it.
_SLOTS = {("encode", "positions"): ([], ["--d-model", "4"]), ("context", "context"): ([], ["--d-model", "4"]),
          ("dot", "p"): ([], ["2", "--d-model", "4"]), ("dot", "q"): (["1"], ["--d-model", "4"]),
          ("alias", "p"): ([], ["2", "--d-model", "4"]), ("alias", "q"): (["1"], ["--d-model", "4"]),
          ("timestep", "t"): ([], [])}


def argv_with(path: list[str], action: argparse.Action, value: str) -> list[str]:
    if not action.option_strings:
        before, after = _SLOTS[(path[0], action.dest)]
        return [*path, *before, value, *after]
    need = list(_NEEDS[path[0]])
    flag = action.option_strings[-1]
    if flag in need:
        at = need.index(flag)
        del need[at:at + 2]
    return [*path, *need, flag, value]


#: (subcommand path, action) of every option and positional slot that takes a number.
OPTIONS = number_options()
