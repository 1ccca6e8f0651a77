"""``posenc page --out DIR``: the worked examples as one self-contained web page, ``DIR/index.html``."""

from __future__ import annotations

import argparse

from ._base import command, folder

__all__ = ["DEFAULT_OUT"]

#: Where ``posenc page`` writes when no ``--out`` is given.
DEFAULT_OUT = "posenc-page"


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=folder, default=DEFAULT_OUT, metavar="DIR",
                   help=f"the folder to write index.html into (default {DEFAULT_OUT}/)")


@command("page", "the worked examples as one web page (DIR/index.html): cases, figures, explorer, self-test",
         _setup)
def page_cmd(args: argparse.Namespace) -> int:
    from ..page import write_page  # matplotlib loads only for this command

    path = write_page(args.out)
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1024:.0f} KiB, self-contained: open it in a browser, no server needed)")
    return 0
