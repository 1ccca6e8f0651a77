"""``posenc page --out DIR``: the worked-examples site: ``DIR/index.html`` (the sinusoid) and a page per family."""

from __future__ import annotations

import argparse

from ._base import command, folder

__all__ = ["DEFAULT_OUT"]

#: Where ``posenc page`` writes when no ``--out`` is given.
DEFAULT_OUT = "posenc-page"


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=folder, default=DEFAULT_OUT, metavar="DIR",
                   help=f"the folder to write the site into, index.html first (default {DEFAULT_OUT}/)")


@command("page", "the worked-examples site (DIR/index.html and a page per family): cases, figures, explorers, "
         "self-tests", _setup)
def page_cmd(args: argparse.Namespace) -> int:
    from ..page import write_site  # matplotlib loads only for this command

    paths = write_site(args.out, linger=bool(getattr(args, "as_command", False)))
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {paths[0]} and {len(paths) - 1} more pages ({size / 1024:.0f} KiB in all, self-contained: open "
          "index.html in a browser, no server needed)")
    return 0
