"""SIGTERM (a batch system's timeout, `kill`) ends a command the way Ctrl-C does: by unwinding,
so that every `with` closes its workers (killed, thawed, their cgroups and directories removed)
instead of leaving them."""
from __future__ import annotations

import os
import signal
import sys
import threading

from ..core.errors import Terminated


def _terminate(signum, frame) -> None:
    raise Terminated(128 + signum)


def handle_termination() -> None:
    """SIGTERM raises `Terminated` in the main thread, and raises it again if it was dropped.

    A handler's exception raised while the interpreter runs a weakref callback or a `__del__`
    is printed ("Exception ignored in ...") and dropped: a score went on to exit 0 with the
    signal lost (seen once in CI, inside importlib's module-lock callback).  The hook for such
    exceptions sends the signal again, from a thread 10 ms later: sent from the hook itself, the
    handler would run inside the hook, where its exception is dropped for good."""
    signal.signal(signal.SIGTERM, _terminate)
    previous = sys.unraisablehook
    if getattr(previous, "redelivers_termination", False):   # installed by an earlier command
        return

    def redeliver(unraisable) -> None:
        if isinstance(unraisable.exc_value, Terminated):
            again = threading.Timer(0.01, os.kill, (os.getpid(), unraisable.exc_value.code - 128))
            again.daemon = True
            again.start()
        else:
            previous(unraisable)

    redeliver.redelivers_termination = True
    sys.unraisablehook = redeliver
