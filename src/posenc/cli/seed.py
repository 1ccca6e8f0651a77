"""The seed, live: ``examples``, ``quiz`` and ``tour``.

The cases, their numbers and their checks are :mod:`posenc.seed`; this
module only lays them out. A figure the seed misprints is shown beside its
true value and named an erratum; only a failed check of the library makes
the exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import plot, seed
from ..errors import PosEncError, show_value
from ..seed import Case, QuizItem, bias_cases, time_cases
from ..support.version import __version__
from ._base import add_json_option, command, emit_json, folder, render_table
from .file_set import write_set
from .plotting import PLOT_KINDS, render

__all__: list[str] = []

_RULE = "─" * 78


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _figures_table(figs: tuple[seed.Printed, ...], indent: int, source: str = "seed") -> str:
    rows = [[f.label, f.printed, f.true_text, "✓" if f.agrees else f"erratum: the {source} prints {f.printed}"]
            for f in figs]
    return render_table(["number", source, "posenc", ""], rows, "lrrl", indent)


def _checks(checks: tuple[seed.Check, ...], indent: int) -> list[str]:
    pad = " " * indent
    return [f"{pad}{_mark(c.passed)} {c.claim}   [{c.detail}]" for c in checks]


def _source(c: Case) -> str:
    """Whose printed figures a case shows: the seed's, or worked by hand (the grid and bias cases)."""
    return "seed" if c.cell in seed.CELLS else "worked"


def _family(c: Case) -> str:
    """``Ex 3`` for the seed's cases, ``grid Ex 3`` / ``bias Ex 3`` for a family's."""
    if c.cell in seed.CELLS:
        return f"Ex {c.example}"
    family = "bias" if c.cell in bias_cases.CELLS else "times" if c.cell in time_cases.CELLS else "grid"
    return f"{family} Ex {c.example}"


def print_case(c: Case) -> None:
    """One worked case: its numbers against the printed ones, then its checks."""
    ex = _family(c)
    print(f"{c.cell} · {ex} · {c.title}")
    print(f"    what makes it tricky: {c.tricky}")
    print()
    print(_figures_table(c.figures, 4, _source(c)))
    print()
    print("\n".join(_checks(c.checks, 4)))


def _case_json(c: Case) -> dict[str, object]:
    return {
        "cell": c.cell, "example": c.example, "title": c.title, "tricky": c.tricky, "passed": c.passed,
        "source": _source(c),
        "figures": [{"label": f.label, "printed": f.printed, "value": f.value, "true_text": f.true_text,
                     "agrees": f.agrees, "erratum": f.erratum} for f in c.figures],
        "checks": [{"claim": k.claim, "passed": k.passed, "detail": k.detail} for k in c.checks],
    }


def _summary(cs: list[Case]) -> str:
    checks = [k for c in cs for k in c.checks]
    good = sum(k.passed for k in checks)
    wrong = sum(len(c.errata) for c in cs)
    verified = sum(c.passed for c in cs)
    text = f"{verified} of {len(cs)} cases verified: {good} of {len(checks)} checks passed"
    if wrong:
        text += f"; {wrong} of the figures the seed prints in these cases are errata (true values shown beside them)"
    return text


def _sets(cells: list[str]) -> list[list[Case]]:
    """The cases asked for, by set: the seed's (A–H), the grid cases (N1–N6), the bias cases (ALIBI, T5,
    XPOS); all three when none are named.

    ``seed``, ``grid`` and ``bias`` name a whole set; a name of no set is an error, raised before any work.
    """
    seed_names: list[str] = []
    grid_names: list[str] = []
    bias_names: list[str] = []
    time_names: list[str] = []
    for given in cells or ["seed", "grid", "bias", "times"]:
        n = given.upper() if isinstance(given, str) else given
        if n == "SEED":
            seed_names += seed.CELLS
        elif n == "GRID":
            grid_names += seed.GRID_CELLS
        elif n == "BIAS":
            bias_names += bias_cases.CELLS
        elif n == "TIMES":
            time_names += time_cases.CELLS
        elif n in time_cases.CELLS:
            time_names.append(n)
        elif n in seed.GRID_CELLS:
            grid_names.append(n)
        elif n in bias_cases.CELLS:
            bias_names.append(n)
        elif n in seed.CELLS:
            seed_names.append(n)
        else:
            raise PosEncError(f"cell must be one of {', '.join(seed.CELLS)}, {', '.join(seed.GRID_CELLS)}, "
                              f"{', '.join(bias_cases.CELLS)}, {', '.join(time_cases.CELLS)}, 'seed', 'grid', 'bias' "
                              f"or 'times', got {show_value(given)}")
    out = []
    if seed_names:
        out.append(seed.cases(seed_names))
    if grid_names:
        out.append(seed.grid_cases(grid_names))
    if bias_names:
        out.append(bias_cases.cases(bias_names))
    if time_names:
        out.append(time_cases.cases(time_names))
    return out


def run_examples(cells: list[str]) -> bool:
    """Print the cases (the seed's eight, the grid cases, the bias cases, by default); True when every check passed."""
    ok = True
    for cs in _sets(cells):
        for c in cs:
            print_case(c)
            print(_RULE)
        print(_summary(cs))
        print()
        ok = ok and all(c.passed for c in cs)
    return ok


def _examples_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("cells", nargs="*", metavar="CELL",
                   help=f"cells to show ({' '.join(seed.CELLS)}; {' '.join(seed.GRID_CELLS)}; "
                        f"{' '.join(c.lower() for c in bias_cases.CELLS)}; "
                        f"{' '.join(c.lower() for c in time_cases.CELLS)}; or a set, seed, grid, bias or times; "
                        "default all)")
    add_json_option(p)


@command("examples", "the seed's eight worked cases (A–H), the grid cases (N1–N6), the bias cases (ALiBi, T5, "
         "xPos) and the timestep and field cases, computed live, every claim checked", _examples_setup)
def examples_cmd(args: argparse.Namespace) -> int:
    if args.json:
        cs = [c for group in _sets(args.cells) for c in group]
        emit_json({"cases": [_case_json(c) for c in cs], "passed": all(c.passed for c in cs),
                   "errata": [e for c in cs for e in c.errata]})
        return 0 if all(c.passed for c in cs) else 1
    return 0 if run_examples(args.cells) else 1


# ---------------------------------------------------------------- quiz

def _answer(q: QuizItem) -> None:
    print(f"    → {q.answer}")
    for f in q.figures:
        note = "" if f.agrees else f"   (the seed prints {f.printed}: erratum)"
        print(f"      {f.label} = {f.true_text}{note}")
    print("\n".join(_checks(q.checks, 6)))


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def run_quiz(interactive: bool) -> bool:
    """The self-test; waits for Enter before each answer when ``interactive``. True when every check passed."""
    items = seed.quiz()
    for n, q in enumerate(items, 1):
        print(f"Q{n}. {q.question}")
        if interactive:
            try:
                input("    (Enter for the answer) ")
                if not _is_terminal(sys.stdin):
                    print()  # a terminal echoes the Enter; a pipe does not
            except EOFError:
                interactive = False  # no more input: show the rest straight away
                print()
        _answer(q)
        print()
    checks = [k for q in items for k in q.checks]
    print(f"{sum(k.passed for k in checks)} of {len(checks)} answers checked against the library")
    return all(k.passed for k in checks)


def _quiz_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-input", action="store_true", help="print every answer without waiting for Enter")
    add_json_option(p)


@command("quiz", "the seed's self-test: a question, Enter, the answer with the live number behind it", _quiz_setup)
def quiz_cmd(args: argparse.Namespace) -> int:
    if args.json:
        items = seed.quiz()
        ok = all(k.passed for q in items for k in q.checks)
        emit_json({"passed": ok, "questions": [
            {"question": q.question, "answer": q.answer,
             "figures": [{"label": f.label, "printed": f.printed, "value": f.value, "true_text": f.true_text,
                          "agrees": f.agrees} for f in q.figures],
             "checks": [{"claim": k.claim, "passed": k.passed, "detail": k.detail} for k in q.checks]}
            for q in items]})
        return 0 if ok else 1
    return 0 if run_quiz(not args.no_input) else 1


# ---------------------------------------------------------------- tour

def _tour_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=folder, default="posenc-tour", metavar="DIR",
                   help="where the figures and the page go (default posenc-tour/); skipped without matplotlib")


def _section(title: str) -> None:
    print()
    print("═" * 78)
    print(title)
    print("═" * 78)


#: The figures of the seed that ``tour`` draws (``plot rope`` goes beyond the seed).
TOUR_FIGURES = ("wave", "rotation", "heatmap", "kernel", "ladder")


def _print_errata(in_cases: int) -> None:
    """Every misprint of the seed, counted where the reader met it."""
    errata = seed.errata()
    if not errata:
        return
    print()
    print(f"The seed's {len(errata)} misprinted figures, {in_cases} in the cases above and "
          f"{len(errata) - in_cases} in the self-test below (the seed's figure, then the true value):")
    for e in errata:
        print(f"  {e}")


#: The tour's PNG files, drawn once per process: each is a plot at its defaults, so it depends on nothing but
#: this code (as the site's pages, :func:`posenc.page.build_site`). Drawing the five took ~3 s of every tour.
_TOUR_PNGS: dict[str, bytes] = {}


def _tour_png(name: str) -> bytes:
    """The PNG bytes of the tour's figure ``name`` (:data:`TOUR_FIGURES`), drawn on the first call."""
    with plot.DRAWING:  # a second caller waits for the first one's drawing, then reads it
        if name not in _TOUR_PNGS:
            kind = PLOT_KINDS[name]
            _TOUR_PNGS[name] = bytes(render(kind.figure(), Path(f"{kind.name}.png")))
        return _TOUR_PNGS[name]


def _figures(out: Path, linger: bool) -> None:
    """Every figure and the site, as one set (:func:`posenc.cli.file_set.write_set`): all new, or all old."""
    from ..page import build_site

    files: dict[Path, Any] = {}
    for kind in (PLOT_KINDS[name] for name in TOUR_FIGURES):
        files[out / f"{kind.name}.png"] = _tour_png(kind.name)
    pages = build_site()
    for name, data in pages.items():
        files[out / name] = data
    write_set(files, linger=linger)
    for kind in (PLOT_KINDS[name] for name in TOUR_FIGURES):
        print(f"  {kind.name:<9} {kind.help}")
    print(f"  {'page':<9} index.html, the worked examples as one page: cases, figures, explorer, self-test")
    print(f"  {'site':<9} {len(pages) - 1} more pages, one per family, linked from index.html: "
          + ", ".join(n.removesuffix(".html") for n in list(pages)[1:]))
    written = list(files)
    print()
    print("Files written:")
    for path in written:
        print(f"  {path}")


#: The console tour's case per family: (family, the set it comes from, its cell).
TOUR_CASES = (("RoPE", "rope", "R2"), ("scalings", "scaling", "S4"), ("M-RoPE", "grid", "N6"),
              ("ALiBi", "bias", "ALIBI"), ("T5 buckets", "bias", "T5"), ("xPos", "bias", "XPOS"),
              ("timesteps", "times", "SHIFT"), ("NeRF bands", "times", "NERFBAND"))


def _family_cases() -> bool:
    """Print one worked case of each family; True when every check passed."""
    from ..seed import rope_cases

    pick = {"rope": rope_cases.case, "scaling": rope_cases.scaling_case, "grid": seed.grid_case,
            "bias": bias_cases.case, "times": time_cases.case}
    ok = True
    for family, where, cell in TOUR_CASES:
        c = pick[where](cell)
        print(f"[{family}]")
        print_case(c)
        print(_RULE)
        ok = ok and c.passed
    print(f"{len(TOUR_CASES)} families, one case each: "
          + ("every claim checked and passed" if ok else "SOME CLAIMS FAILED"))
    return ok


@command("tour", "the eight cases, the self-test answered, the seed's five figures and the page in DIR "
         "(with posenc[plot])",
         _tour_setup)
def tour_cmd(args: argparse.Namespace) -> int:
    try:
        plot.require()
        missing = None
    except ImportError as exc:  # the cases and the answers need NumPy alone: show them, skip the figures
        missing = str(exc)
    out = Path(args.out)
    if missing is None:
        out.mkdir(parents=True, exist_ok=True)  # an unwritable DIR fails before any work
    print(f"posenc {__version__}: the seed's worked examples, every number computed live by the library")
    _section("The eight worked cases (A–H)")
    ok = run_examples(["seed"])
    _print_errata(sum(len(c.errata) for c in seed.cases()))
    _section("The self-test, answered")
    ok = run_quiz(False) and ok
    _section("One worked case per family (every family has its page in the site)")
    ok = _family_cases() and ok
    if missing is None:
        _section(f"The figures, in {out}/")
        _figures(out, bool(getattr(args, "as_command", False)))
    else:
        _section("The figures: skipped")
        print(f"  skipped {len(TOUR_FIGURES)} figures ({', '.join(TOUR_FIGURES)}) and the page: {missing}")
    return 0 if ok else 1
