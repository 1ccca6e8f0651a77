"""Several files written as one: the old set or the whole new one, never a mix.

``posenc tour`` writes five figures and a page. Written one by one, an
interruption or a full disk after the figures left new figures beside the
old page. :func:`write_set` writes every file aside first (each a
temporary in its target's folder, synced), and only when all are there
renames them in, one after another, with SIGINT and SIGTERM recorded, not
acted on, until the last rename is done. Should a rename fail, the files
already renamed are put back from hard links of the old ones taken just
before, so the set on disk is still the old one. Every file is read back
as its format (:mod:`posenc.cli.proofs`) once it is aside, before any rename:
one that does not is an ``OSError`` too. Every failure says what is true:
nothing in the folder was changed.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .files import (
    Expected,
    Interrupted,
    Unproven,
    _check_room,
    _check_target,
    _discard,
    _mode,
    _preallocate,
    _Signals,
    _through_link,
    check_writes,
    prove,
)
from .proofs import proof_for
from .signals import hold

__all__ = ["write_set"]


class _Aside:
    """One file of the set: its temporary, and a link to the old file once the renames begin."""

    def __init__(self, shown: Path) -> None:
        self.shown = shown
        self.target = _through_link(shown)
        self.existed = self.target.exists()
        self.tmp = ""
        self.old = ""

    def write(self, data: Any, signals: _Signals, kept: str) -> None:
        fd, self.tmp = tempfile.mkstemp(dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".part")
        try:
            view = memoryview(data).cast("B")
            _preallocate(fd, view.nbytes)
            while view.nbytes:
                if signals.received:
                    raise Interrupted(self.shown.parent, signals.received[0], True, kept=kept)
                view = view[os.write(fd, view[: 1 << 20]):]
            os.fchmod(fd, _mode(self.target))
            os.fsync(fd)
        finally:
            os.close(fd)

    def keep_old(self) -> None:
        """A hard link to the old file (a copy where links are not possible), to put back on failure."""
        if not self.existed:
            return
        self.old = self.tmp + ".old"
        try:
            os.link(self.target, self.old)
        except OSError:
            shutil.copy2(self.target, self.old)

    def put_back(self) -> None:
        if self.old:
            os.replace(self.old, self.target)
            self.old = ""
        else:
            os.unlink(self.target)

    def discard(self) -> None:
        for name in (self.tmp, self.old):
            if name:
                _discard(-1, name)


def write_set(files: Mapping[Path, Any], *, linger: bool = False,
              expect: Mapping[Path, Expected] | None = None) -> None:
    """Write every file of ``files`` (path -> bytes) or none of them.

    Args:
        files: the targets and their contents (bytes or any buffer); their
            folders must exist. A symlink is written through, as by
            :func:`posenc.cli.files.atomic_file`.
        linger: as in :func:`~posenc.cli.files.atomic_file` (the command about to exit).
        expect: what some of the files must hold (:class:`posenc.cli.proofs.Expected`);
            every file's format, by its suffix, is proved in any case.

    Raises:
        Interrupted: SIGINT or SIGTERM arrived before the renames; no file was changed.
        OSError: a write or a rename failed (ENOSPC, EFBIG, ...), naming the
            file; no file was changed. A file that does not read back is one
            (:class:`posenc.cli.files.Unproven`).
        ValueError: a suffix no proof knows (a writer's mistake), before anything is written.
    """
    check_writes()
    for p in files:
        proof_for(Path(p))
    items = [(_Aside(Path(p)), data) for p, data in files.items()]
    folders = sorted({str(a.shown.parent) for a, _ in items})
    kept = f"nothing in {', '.join(folders)} was changed"
    for a, data in items:
        _check_target(a.shown, a.target)
        _check_room(a.shown, memoryview(data).nbytes, True, a.target.parent)
    total = sum(memoryview(data).nbytes for _, data in items)
    _check_room(items[0][0].shown, total, True, items[0][0].target.parent)  # the set, where most of it goes
    current = items[0][0]
    with _Signals(linger) as signals:
        renamed: list[_Aside] = []
        try:
            def poll() -> None:
                if signals.received:
                    raise Interrupted(current.shown.parent, signals.received[0], True, kept=kept)

            for current, data in items:
                current.write(data, signals, kept)
                prove(current.tmp, current.shown, (expect or {}).get(current.shown), poll)
                hold("mid-set", lambda: bool(signals.received))
            if signals.received:
                raise Interrupted(current.shown.parent, signals.received[0], True, kept=kept)
            for current, _ in items:
                current.keep_old()
            for current, _ in items:
                os.replace(current.tmp, current.target)
                current.tmp = ""
                renamed.append(current)
            if signals.received:  # during the renames: the new set is whole, and the signal still counts
                raise Interrupted(current.shown.parent, signals.received[0], True,
                                  kept=f"all {len(items)} new files are in place")
        except Interrupted:
            raise
        except OSError as exc:
            _undo(renamed)
            kind = Unproven if isinstance(exc, Unproven) else OSError  # a proof that failed stays one
            raise kind(exc.errno or errno.EIO, f"{exc.strerror or exc}; {kept}", str(current.shown)) from exc
        except BaseException:
            _undo(renamed)
            raise
        finally:
            for a, _ in items:
                a.discard()


def _undo(renamed: list[_Aside]) -> None:
    for a in reversed(renamed):
        try:
            a.put_back()
        except OSError:  # pragma: no cover - a folder that took a rename a moment ago refuses another
            pass
