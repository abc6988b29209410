"""Boot helpers shared by every process backend: port, health wait, process group teardown.

An engine process is started in its own session so teardown can signal the
whole group (servers fork workers); teardown runs in ``finally`` and also after
a failure part way through boot, so a broken boot never leaves a server behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import httpx

from pytest_specgate.engines.protocol import EngineBootError

__all__ = ["LOG_TAIL_LINES", "ManagedProcess", "free_loopback_port", "wait_for_health"]

LOG_TAIL_LINES = 40
_POLL_S = 0.05


def free_loopback_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_health(
    url: str,
    deadline_s: float,
    process: ManagedProcess | None = None,
) -> None:
    """Poll ``url`` until it answers 200; raise EngineBootError on timeout or early exit.

    ``deadline_s`` is a duration in seconds from now. When ``process`` is given
    and exits first, the error says so with its exit code and log tail.
    """
    give_up = time.monotonic() + deadline_s
    last_problem = "no answer yet"
    with httpx.Client(timeout=httpx.Timeout(2.0)) as http:
        while True:
            if process is not None and process.returncode() is not None:
                raise _with_tail(
                    EngineBootError(
                        f"engine process {process.pid} exited with code {process.returncode()} "
                        f"before {url} became healthy"
                    ),
                    process,
                )
            try:
                response = http.get(url)
                if response.status_code == 200:
                    return
                last_problem = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            if time.monotonic() >= give_up:
                raise _with_tail(
                    EngineBootError(
                        f"engine at {url} not healthy within {deadline_s:.1f}s (last: {last_problem})"
                    ),
                    process,
                )
            time.sleep(_POLL_S)


def _with_tail(error: EngineBootError, process: ManagedProcess | None) -> EngineBootError:
    if process is not None:
        error.add_note(process.describe_tail())
    return error


class ManagedProcess:
    """An engine subprocess in its own process group, logging to a file."""

    def __init__(self) -> None:
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.log_path: Path | None = None
        self.argv: tuple[str, ...] = ()

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None, log_path: Path) -> ManagedProcess:
        """Start ``argv`` with stdout+stderr to ``log_path``; ``env`` None inherits."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self.argv = tuple(argv)
        self._log = log_path.open("ab")
        try:
            self._popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=None if env is None else dict(env),
                start_new_session=True,
            )
        except BaseException:
            self._close_log()
            raise
        return self

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def terminate(self, grace_s: float = 5.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace_s``; returns the exit code."""
        popen = self._popen
        if popen is None:
            return None
        try:
            if popen.poll() is None:
                _signal_group(popen.pid, signal.SIGTERM)
                try:
                    popen.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    _signal_group(popen.pid, signal.SIGKILL)
                    popen.wait(timeout=grace_s)
            _signal_group(popen.pid, signal.SIGKILL)
            return popen.returncode
        finally:
            self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, n: int = LOG_TAIL_LINES) -> list[str]:
        if self.log_path is None or not self.log_path.exists():
            return []
        with self.log_path.open("r", encoding="utf-8", errors="replace") as log:
            return [line.rstrip("\n") for line in deque(log, maxlen=n)]

    def describe_tail(self, n: int = LOG_TAIL_LINES) -> str:
        lines = self.log_tail(n)
        header = f"last {len(lines)} line(s) of {self.log_path}:"
        return "\n".join([header, *lines]) if lines else f"{self.log_path}: (empty log)"


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group led by ``pid`` (ignoring groups that are already gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
