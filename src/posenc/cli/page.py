"""``posenc page --out DIR``: the worked-examples site: ``DIR/index.html`` (the sinusoid) and a page per family."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PosEncError, show_value
from ._base import command, folder
from .file_set import write_set
from .files import atomic_file

if TYPE_CHECKING:
    from ..page.data import Start

__all__ = ["DEFAULT_OUT", "write_page", "write_site"]

#: Where ``posenc page`` writes when no ``--out`` is given.
DEFAULT_OUT = "posenc-page"


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=folder, default=DEFAULT_OUT, metavar="DIR",
                   help=f"the folder to write the site into, index.html first (default {DEFAULT_OUT}/)")


@command("page", "the worked-examples site (DIR/index.html and a page per family): cases, figures, explorers, "
         "self-tests", _setup)
def page_cmd(args: argparse.Namespace) -> int:
    paths = write_site(args.out, linger=bool(getattr(args, "as_command", False)))
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {paths[0]} and {len(paths) - 1} more pages ({size / 1024:.0f} KiB in all, self-contained: open "
          "index.html in a browser, no server needed)")
    return 0


def write_page(out: str | os.PathLike[str], start: Start | None = None) -> Path:
    """Write only the sinusoid page, ``out/index.html`` (the folder is created); returns its path.

    ``posenc page`` writes the whole site (:func:`write_site`).
    Written aside and renamed (:func:`posenc.cli.files.atomic_file`): a crash
    or a failed build never leaves half a page, and the old one stays.
    """
    if not str(out).strip():  # Path("") is the current folder: never what an empty argument meant
        raise PosEncError(f"out must name a folder, got {show_value(str(out))}")
    from ..page import build_html  # matplotlib loads only here

    data = build_html(start).encode("utf-8")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "index.html"
    with atomic_file(target, size=len(data)) as fh:
        fh.write(data)
    return target


def write_site(out: str | os.PathLike[str], *, linger: bool = False) -> list[Path]:
    """Write every page into ``out`` (created), all or none (:func:`posenc.cli.file_set.write_set`); their paths.

    Raises:
        PosEncError: for an empty folder name.
    """
    if not str(out).strip():  # Path("") is the current folder: never what an empty argument meant
        raise PosEncError(f"out must name a folder, got {show_value(str(out))}")
    from ..page import build_site  # matplotlib loads only here

    pages = build_site()
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    files = {folder / name: data for name, data in pages.items()}
    write_set(files, linger=linger)
    return list(files)
