"""The watchdog that takes an engine down once the process that booted it is gone.

pytest can end without running a single ``finally``: SIGKILL, the OOM killer
taking one xdist worker, pytest-timeout's ``thread`` method (``os._exit``). The
engine runs in its own session, so nothing would stop it. Whoever boots an
engine therefore holds the write end of a pipe, the *lifeline*; the kernel
closes it when that process ends, however it ends, and a reader of the other
end sees end-of-file at once. That holds on Linux and macOS alike and, unlike
``PR_SET_PDEATHSIG``, does not fire when the *thread* that started the engine
exits, nor miss the workers an engine forks into its process group.

This file runs as a script (``python -I -S reaper.py ...``, standard library
only, so it starts in milliseconds) in one of two modes:

``group``
    Started as a session leader; forks a watchdog into its own process group,
    then execs the engine, which keeps the PID its parent knows. The watchdog
    blocks reading the lifeline; on end-of-file it sends SIGTERM to the group,
    waits up to ``--grace`` seconds for the engine to exit, then SIGKILLs the
    group (itself last). Ordinary teardown kills the group, watchdog included.
``command``
    Waits on the lifeline and runs the command when the parent is gone (for
    ``docker compose down``); a byte written on the lifeline releases it
    without running anything.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

__all__ = ["RELEASE", "parse_arguments", "wait_for_parent"]

RELEASE = b"r"
_POLL_S = 0.05


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """``MODE --lifeline=FD [--grace=S] -- COMMAND...``; COMMAND is passed on untouched."""
    parser = argparse.ArgumentParser(prog="reaper.py", description="stop an engine when its parent is gone")
    parser.add_argument("mode", choices=("group", "command"))
    parser.add_argument("--lifeline", type=int, required=True, help="read end of the parent's pipe")
    parser.add_argument("--grace", type=float, default=3.0, help="seconds between SIGTERM and SIGKILL")
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("expected -- and the command to run after the options")
    split = list(argv).index("--")
    arguments = parser.parse_args(argv[:split])
    arguments.argv = list(argv[split + 1:])
    return arguments


def wait_for_parent(lifeline: int) -> bool:
    """Block until the lifeline ends; True when the parent is gone, False when it released us."""
    while True:
        try:
            data = os.read(lifeline, 1)
        except OSError:
            return True
        if data == RELEASE:
            return False
        if data == b"":
            return True


def _say(message: str) -> None:
    with contextlib.suppress(OSError):
        print(f"specgate reaper (pid {os.getpid()}): {message}", file=sys.stderr, flush=True)


def _alive(pid: int) -> bool:
    """Running, not a zombie: an orphaned zombie waits for a reaper that may never come."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        if os.path.isdir("/proc"):
            return False
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_group(pgid: int, grace_s: float) -> None:
    """SIGTERM the group, give its leader ``grace_s`` to exit, then SIGKILL everyone left."""
    _say(f"the process that booted this engine is gone: stopping process group {pgid}")
    try:
        os.killpg(pgid, signal.SIGTERM)
        give_up = time.monotonic() + grace_s
        while time.monotonic() < give_up and _alive(pgid):
            time.sleep(_POLL_S)
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _start_watchdog(lifeline: int, grace_s: float) -> None:
    """Double-fork a watchdog into this process group; return in the original process only."""
    pgid = os.getpgrp()
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        return
    try:
        if os.fork():
            os._exit(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.chdir("/")
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        if wait_for_parent(lifeline):
            _reap_group(pgid, grace_s)
    finally:
        os._exit(0)


def _run_group(arguments: argparse.Namespace) -> int:
    if os.getpgrp() != os.getpid():
        _say("refusing to guard a process group this process does not lead (start it in a new session)")
        return 2
    _start_watchdog(arguments.lifeline, arguments.grace)
    os.close(arguments.lifeline)
    try:
        os.execvp(arguments.argv[0], arguments.argv)
    except OSError as error:
        _say(f"cannot start {arguments.argv[0]!r}: {error}")
    return 127


def _run_command(arguments: argparse.Namespace) -> int:
    if not wait_for_parent(arguments.lifeline):
        return 0
    _say(f"the process that started this engine is gone: running {' '.join(arguments.argv)}")
    try:
        return subprocess.run(arguments.argv, stdin=subprocess.DEVNULL, check=False).returncode
    except OSError as error:
        _say(f"cannot run {arguments.argv[0]!r}: {error}")
        return 127


def main(argv: Sequence[str]) -> int:
    arguments = parse_arguments(argv)
    return _run_group(arguments) if arguments.mode == "group" else _run_command(arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
