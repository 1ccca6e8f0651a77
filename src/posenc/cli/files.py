"""Files written aside and renamed: a file on disk is the old one or the whole new one, never half of it.

:func:`atomic_file` writes to a temporary file in the target's folder (same
file system, so the rename is atomic), preallocates it when the size is
known, flushes and fsyncs it, renames it over the target and fsyncs the
folder. Every way a write can end early leaves the target as it was and no
temporary behind:

- SIGINT and SIGTERM are recorded, not raised where they land: the writer
  stops at the next write (:class:`Interrupted`, exit 130 for Ctrl-C, 143 for
  SIGTERM), removes its temporary and reports once; the command then
  ignores any further signal while it exits.
- A full disk (ENOSPC) or a file-size limit (EFBIG; SIGXFSZ is ignored
  while writing so the limit arrives as that error, not as death) becomes
  one :class:`OSError` naming the target.
- A size known in advance is checked against the free space and the
  file-size limit before the first byte, so ``--length 10**12`` fails at
  once.

- Before the rename, the file is read back as its format (:mod:`posenc.cli.proofs`):
  one that does not load, or holds other than what was meant, is
  :class:`Unproven`, an ``OSError`` naming the target, which is kept.

No memory map is used for writing: on a full disk a write into a mapped
page is a bus error (SIGBUS), which no handler can turn into a clean
message.

A signal the process ignores (a background job's SIGINT, ``nohup``'s) stays
ignored while it writes, as it does everywhere else (:mod:`posenc.cli.signals`).
"""

from __future__ import annotations

import errno
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from ..support.memory import format_bytes
from .proofs import Expected, Unreadable, proof_for
from .signals import EXIT_STATUS, hold

__all__ = ["AtomicFile", "Expected", "Interrupted", "Unproven", "WritesRefused", "atomic_file", "prove",
           "refusing_writes"]

#: Set by the fault tests only: after the second write, create the file named
#: here and wait (at most a minute) for a signal, so a test can interrupt a
#: write mid-way without any timing.
HOLD_ENV = "POSENC_TEST_HOLD_WRITE"

_STOP = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A write stopped by SIGINT or SIGTERM; the target was left as it was.

    Attributes:
        path: the target.
        signum: the first signal received.
        exit_status: 130 for SIGINT (Ctrl-C), 143 for SIGTERM (128 + the signal's number).
    """

    def __init__(self, path: Path, signum: int, existed: bool, *, kept: str | None = None) -> None:
        self.path = path
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name} while writing {path}; "
                         f"{_kept(existed) if kept is None else kept}")

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS.get(self.signum, 128 + self.signum)


def _kept(existed: bool) -> str:
    return "the old file is unchanged" if existed else "no file was created"


class Unproven(OSError):
    """The file written does not read back (:mod:`posenc.cli.proofs`); it was not renamed in."""


class WritesRefused(Exception):
    """A write attempted inside :func:`refusing_writes`; nothing was touched."""


_refusing = 0


@contextmanager
def refusing_writes() -> Iterator[None]:
    """Within it, :func:`atomic_file` and :func:`~posenc.cli.file_set.write_set` raise :class:`WritesRefused` at once.

    For the command's second run that only words a message (:func:`posenc.cli.reworded`).
    """
    global _refusing
    _refusing += 1
    try:
        yield
    finally:
        _refusing -= 1


def check_writes() -> None:
    """Raise :class:`WritesRefused` inside :func:`refusing_writes`."""
    if _refusing:
        raise WritesRefused("no file is written while a message is worded")


def prove(tmp: str | os.PathLike[str], shown: Path, expect: Expected | None, poll: Any) -> None:
    """Read ``tmp``, the aside copy of ``shown``, back as ``shown``'s format; :class:`Unproven` if it does not."""
    try:
        proof_for(shown)(Path(tmp), expect, poll)
    except Unreadable as exc:
        raise Unproven(errno.EIO, f"the file written does not read back ({exc})", str(shown)) from None


class _Signals:
    """Record SIGINT/SIGTERM instead of raising them mid-statement; ignore SIGXFSZ while writing."""

    def __init__(self, linger: bool) -> None:
        self.linger = linger
        self.received: list[int] = []
        self.saved: dict[int, Any] = {}

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():  # only there can handlers be set
            wanted = [*_STOP, *([signal.SIGXFSZ] if hasattr(signal, "SIGXFSZ") else [])]
            for s in wanted:
                self.saved[s] = signal.getsignal(s)
                if self.saved[s] is not signal.SIG_IGN:  # ignored (nohup, `&`): the user asked for it
                    signal.signal(s, self._record if s in _STOP else signal.SIG_IGN)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.saved.items():
            if self.received and self.linger and s in _STOP:
                # the command is about to exit: ignore further signals, so that no Ctrl-C can raise a
                # traceback on the way out, nor kill the process once Python's finalisation restores
                # the default handlers (it leaves an ignored signal ignored)
                signal.signal(s, signal.SIG_IGN)
            else:
                signal.signal(s, handler)


class AtomicFile:
    """The open temporary file of :func:`atomic_file`; write bytes with :meth:`write`.

    Attributes:
        expect: what the file must read back as (:class:`posenc.cli.proofs.Expected`), set by
            :func:`atomic_file`'s ``expect`` or by the body (once the size checks passed).
        written: bytes written so far.
    """

    def __init__(self, fd: int, target: Path, signals: _Signals, existed: bool) -> None:
        self._fd = fd
        self._target = target
        self._signals = signals
        self._existed = existed
        self._hold = os.environ.get(HOLD_ENV)
        self._writes = 0
        self.written = 0
        self.expect: Expected | None = None

    def check(self) -> None:
        """Raise :class:`Interrupted` if SIGINT or SIGTERM arrived since the write began."""
        if self._signals.received:
            raise Interrupted(self._target, self._signals.received[0], self._existed)

    def write(self, data: Any) -> None:
        """Write all of ``data`` (bytes or any buffer); stops first if a signal arrived."""
        self.check()
        view = memoryview(data).cast("B")
        while view.nbytes:
            n = os.write(self._fd, view)
            view = view[n:]
            self.written += n
        self._writes += 1
        if self._hold and self._writes == 2:  # the first write after a header: truly mid-table
            self._wait_for_a_signal(self._hold)
        self.check()

    def _wait_for_a_signal(self, marker: str) -> None:
        Path(marker).write_text(f"{os.getpid()}\n")
        deadline = time.monotonic() + 60
        while not self._signals.received and time.monotonic() < deadline:
            time.sleep(0.005)


def _free_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def _file_size_limit() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def _through_link(path: Path) -> Path:
    """The file a write to ``path`` should replace: a symlink's target (as editors do), else ``path``.

    Replacing the link itself would turn it into a plain file and leave the
    file it pointed at stale.
    """
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _check_target(shown: Path, target: Path) -> None:
    if target.is_dir():
        raise OSError(errno.EISDIR, "it is a folder", str(shown))
    if not target.parent.is_dir():
        raise OSError(errno.ENOENT, f"no folder {target.parent}", str(shown))


def _check_room(target: Path, size: int, exact: bool, folder: Path | None = None) -> None:
    """Refuse before the first byte when the file cannot fit (``exact``: the size is known, else a lower bound)."""
    what = "the file needs" if exact else "the file needs at least"
    limit = _file_size_limit()
    if limit is not None and size > limit:
        raise OSError(errno.EFBIG, f"{what} {format_bytes(size)}, over this process's file-size limit "
                                   f"(ulimit -f) of {format_bytes(limit)}; nothing written", str(target))
    free = _free_bytes(target.parent if folder is None else folder)
    if size > free:
        raise OSError(errno.ENOSPC, f"{what} {format_bytes(size)} and {format_bytes(free)} is free there; "
                                    "nothing written", str(target))


def _mode(target: Path) -> int:
    """The new file's permissions: the old file's, else what the umask gives a new file."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


def _preallocate(fd: int, size: int) -> None:
    if size <= 0 or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise
        # EOPNOTSUPP, EINVAL, ENOSYS: the file system cannot preallocate; plain writes still report ENOSPC


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename itself is done
    finally:
        os.close(fd)


def _discard(fd: int, tmp: str) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        os.unlink(tmp)
    except OSError:
        pass


@contextmanager
def atomic_file(path: str | os.PathLike[str], *, size: int | None = None, at_least: int = 0,
                linger: bool = False, expect: Expected | None = None) -> Iterator[AtomicFile]:
    """Write ``path`` all at once: the body writes a temporary file, renamed over ``path`` at the end.

    Args:
        path: the target; its folder must exist.
        size: the exact size in bytes, when known: checked against the free
            space and the file-size limit, then preallocated.
        at_least: a lower bound on the size (text formats), checked the same way.
        linger: after an interruption, leave SIGINT and SIGTERM ignored
            (for a command about to exit); otherwise the caller's handlers
            come back.
        expect: what the file must hold, read back before the rename
            (:class:`posenc.cli.proofs.Expected`; or set ``out.expect`` in the
            body); its format, by the suffix, is proved in any case.

    Raises:
        Interrupted: SIGINT or SIGTERM arrived; the target is unchanged.
        OSError: the write failed (ENOSPC, EFBIG, ...); ``filename`` is the
            target, ``strerror`` the cause; the target is unchanged.
        Unproven: (an OSError) the file written does not read back; the target is unchanged.
        ValueError: a suffix no proof knows (a writer's mistake), before anything is written.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> with atomic_file(target, size=3) as out:  # a .txt must be UTF-8 to be renamed in
    ...     out.write(b"abc")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('abc', ['t.txt'])
    """
    shown = Path(path)
    check_writes()
    proof_for(shown)  # every writer proves what it writes: a format without a proof is refused first
    target = _through_link(shown)
    folder = target.parent
    _check_target(shown, target)
    _check_room(shown, size if size is not None else at_least, size is not None, target.parent)
    existed = target.exists()
    mode = _mode(target)
    hold("before-write")
    with _Signals(linger) as signals:
        fd, tmp = -1, ""
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".part")
            out = AtomicFile(fd, shown, signals, existed)
            out.expect = expect
            if size is not None:
                _preallocate(fd, size)
            yield out
            out.check()
            if size is not None and out.written != size:
                os.ftruncate(fd, out.written)
            os.fchmod(fd, mode)
            os.fsync(fd)
            os.close(fd)
            fd = -1
            prove(tmp, shown, out.expect, out.check)
            out.check()  # the last moment the old file can still be kept
            os.replace(tmp, target)
            tmp = ""
            _fsync_folder(folder)
        except OSError as exc:
            _discard(fd, tmp)
            if isinstance(exc, Unproven):
                raise Unproven(exc.errno, f"{exc.strerror}; {_kept(existed)}", str(shown)) from None
            if exc.filename == str(shown):
                raise
            raise OSError(exc.errno, f"{exc.strerror or exc}; {_kept(existed)}", str(shown)) from exc
        except BaseException:
            _discard(fd, tmp)
            raise
    hold("after-write")
