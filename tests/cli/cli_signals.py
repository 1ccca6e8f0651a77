"""Children a test signals, started with the signal dispositions the test needs, whatever shell ran pytest.

A job started with ``&`` from a non-interactive shell inherits SIGINT (and
SIGQUIT) as ignored, and a child inherits that in turn: ``posenc`` then keeps
ignoring SIGINT, as it should (``posenc.cli.signals``), and a test that expects
exit 130 after a Ctrl-C got 0. So every child a test signals starts from
:func:`popen`, which sets SIGINT, SIGTERM and SIGPIPE to their defaults in
the child before it runs (what a foreground shell gives), or to what the
test asks.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: The dispositions a foreground shell gives a command.
DEFAULTS: dict[int, Any] = {signal.SIGINT: signal.SIG_DFL, signal.SIGTERM: signal.SIG_DFL,
                            signal.SIGPIPE: signal.SIG_DFL}


def popen(argv: Sequence[str], *, dispositions: Mapping[int, Any] | None = None,
          then: Callable[[], None] | None = None, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **kwargs)`` whose child starts with :data:`DEFAULTS`, updated by ``dispositions``.

    ``then`` runs in the child after them (a file-size limit, say).
    """
    wanted = {**DEFAULTS, **(dispositions or {})}

    def child() -> None:
        for signum, handler in wanted.items():
            signal.signal(signum, handler)
        if then is not None:
            then()

    return subprocess.Popen(list(argv), preexec_fn=child, **kwargs)
