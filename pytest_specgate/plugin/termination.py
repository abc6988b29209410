"""SIGTERM ends a run the way Ctrl-C does: every ``finally`` and fixture teardown runs.

CI cancellation and ``timeout`` send SIGTERM, whose default action ends the
process on the spot: engines stay up and the evidence receipt is never
written. Raising a KeyboardInterrupt subclass from the handler instead walks
pytest's own interrupt path (engines closed, receipts written, exit code 2,
"interrupted"). A second SIGTERM while that teardown runs ends the process
with the default action, as an impatient sender expects; the engines' reaper
watchdogs stop them then.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

__all__ = ["Terminated", "install_sigterm_teardown"]


class Terminated(KeyboardInterrupt):
    """The run received SIGTERM; raised where the main thread was, like Ctrl-C."""


def _on_sigterm(signum: int, _frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, _terminate_now)
    raise Terminated(f"specgate: received {signal.Signals(signum).name}: tearing down as on Ctrl-C")


def _terminate_now(signum: int, _frame: FrameType | None) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_sigterm_teardown() -> Callable[[], None] | None:
    """Install the handler; returns what restores the previous one, or None if not installed.

    Only on the main thread (where Python runs handlers) and only over the default
    action: a handler someone else installed is theirs to keep.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None
    signal.signal(signal.SIGTERM, _on_sigterm)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) in (_on_sigterm, _terminate_now):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore
