"""Boot helpers shared by every process backend: port, health wait, process group teardown.

An engine process is started in its own session so teardown can signal the
whole group (servers fork workers); teardown runs in ``finally`` and also after
a failure part way through boot, so a broken boot never leaves a server behind.
When no ``finally`` runs at all (SIGKILL, ``os._exit``), the reaper watchdog in
the engine's group (``engines/reaper.py``) stops it once its lifeline closes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, final

import httpx

from pytest_specgate.contracts.engine import EngineBootError
from pytest_specgate.engines.reaper import RELEASE

__all__ = [
    "LOG_TAIL_LINES",
    "ManagedProcess",
    "ServerProcess",
    "boot_error",
    "free_loopback_port",
    "reaped_argv",
    "run_if_orphaned",
    "start_server",
    "wait_for_health",
]

LOG_TAIL_LINES = 40
REAPER_GRACE_S = 3.0
_POLL_S = 0.05
_REAPER = Path(__file__).with_name("reaper.py")


def reaped_argv(mode: str, lifeline: int, argv: Sequence[str], *, python: str = sys.executable) -> list[str]:
    """``argv`` run under the reaper watchdog (see ``engines/reaper.py``), watching ``lifeline``."""
    return [python, "-I", "-S", str(_REAPER), mode, f"--lifeline={lifeline}",
            f"--grace={REAPER_GRACE_S}", "--", *argv]


@contextlib.contextmanager
def run_if_orphaned(argv: Sequence[str]) -> Iterator[None]:
    """Run ``argv`` (a clean-up such as ``docker compose down``) if this process dies in the block.

    Leaving the block normally, or by an exception, releases the watcher without
    running anything: the caller's own ``finally`` cleans up then.
    """
    lifeline, held = os.pipe()
    try:
        watcher = subprocess.Popen(reaped_argv("command", lifeline, argv), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, pass_fds=(lifeline,), start_new_session=True)
    except BaseException:
        os.close(held)
        raise
    finally:
        os.close(lifeline)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.write(held, RELEASE)
        os.close(held)
        watcher.wait()


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
    *,
    final_statuses: Mapping[int, str] | None = None,
) -> None:
    """Poll ``url`` until it answers 200; raise EngineBootError on timeout or early exit.

    ``deadline_s`` is a duration in seconds from now. When ``process`` is given
    and exits first, the error says so with its exit code and log tail.
    ``final_statuses`` maps a status the server never recovers from to what it
    means; waiting out the deadline would only hide the cause, which is in the log.
    """
    give_up = time.monotonic() + deadline_s
    last_problem = "no answer yet"
    final = final_statuses or {}
    with httpx.Client(timeout=httpx.Timeout(2.0)) as http:
        while True:
            code = None if process is None else process.returncode()
            if process is not None and code is not None:
                raise boot_error(
                    f"engine process {process.pid} exited with code {code} before {url} became healthy",
                    process,
                )
            try:
                status: int | None = http.get(url).status_code
            except httpx.HTTPError as exc:
                status, last_problem = None, f"{type(exc).__name__}: {exc}"
            if status == 200:
                return
            if status is not None:
                if status in final:
                    raise boot_error(f"engine at {url} answers {status}: {final[status]}", process)
                last_problem = f"HTTP {status}"
            if time.monotonic() >= give_up:
                raise boot_error(
                    f"engine at {url} not healthy within {deadline_s:.1f}s (last: {last_problem})",
                    process,
                )
            time.sleep(_POLL_S)


def boot_error(message: str, process: ManagedProcess | None) -> EngineBootError:
    """An EngineBootError carrying the engine log's tail as a note (when there is a process)."""
    error = EngineBootError(message)
    if process is not None:
        error.add_note(process.describe_tail())
    return error


class ManagedProcess:
    """An engine subprocess in its own process group, logging to a file.

    The group also holds a reaper watchdog reading the lifeline this object keeps
    open, so the engine stops once this process is gone, even if it never closes it.
    """

    def __init__(self) -> None:
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._lifeline: int | None = None
        self.log_path: Path | None = None
        self.argv: tuple[str, ...] = ()

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None, log_path: Path) -> ManagedProcess:
        """Start ``argv`` with stdout+stderr to ``log_path``; ``env`` None inherits.

        ``argv[0]`` must exist (FileNotFoundError here, as Popen raises it), because
        the engine is exec'd by the reaper, where a missing program only exits 127.
        """
        if shutil.which(argv[0], path=None if env is None else env.get("PATH")) is None:
            raise FileNotFoundError(errno.ENOENT, "no such program", argv[0])
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self.argv = tuple(argv)
        self._log = log_path.open("ab")
        lifeline, self._lifeline = os.pipe()
        try:
            self._popen = subprocess.Popen(
                reaped_argv("group", lifeline, argv),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=None if env is None else dict(env),
                pass_fds=(lifeline,),
                start_new_session=True,
            )
        except BaseException:
            self._close_log()
            raise
        finally:
            os.close(lifeline)
        return self

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def terminate(self, grace_s: float = 5.0, settle_s: float = 10.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace_s``; returns the exit code.

        Servers fork workers into the group, and the leader exiting does not mean
        they have; so this also waits (at most ``settle_s``) until no live member
        is left, because a spec checks the PIDs right after close.
        """
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
            give_up = time.monotonic() + settle_s
            while time.monotonic() < give_up and _group_has_live_members(popen.pid):
                time.sleep(_POLL_S)
            return popen.returncode
        finally:
            self._close_log()

    def _close_log(self) -> None:
        """Close the log and the lifeline (the group is gone or never started by then)."""
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None

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


def _group_has_live_members(pgid: int) -> bool:
    """Any non-zombie process in the group (zombies wait on a reaper, they hold nothing)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError):
            continue
        if int(group) == pgid and state not in {"Z", "X"}:
            return True
    return False


@final
class ServerProcess:
    """A backend's server, started by :func:`start_server` under the built-in engines' reaper.

    It is an ``EngineProcess`` capability (``pid``, ``returncode()``); ``log`` is the file its
    stdout and stderr go to; ``close()`` stops its whole process group and may be called
    more than once.
    """

    def __init__(self, process: ManagedProcess, port: int) -> None:
        self._process = process
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        assert process.log_path is not None
        self.log: Path = process.log_path

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def returncode(self) -> int | None:
        return self._process.returncode()

    def log_tail(self, n: int = LOG_TAIL_LINES) -> list[str]:
        return self._process.log_tail(n)

    def close(self) -> None:
        self._process.terminate()


def start_server(
    command: Callable[[int], Sequence[str]],
    workdir: Path,
    *,
    health_path: str = "/health",
    boot_timeout_s: float = 60.0,
    env: Mapping[str, str] | None = None,
    log_name: str = "server.log",
) -> ServerProcess:
    """Start a backend's server on a free 127.0.0.1 port and wait until ``health_path`` answers 200.

    ``command(port)`` is the argv to run. The server runs in its own process group with the
    reaper that stops the built-in engines: teardown on ``close()``, on any failure here
    (the EngineBootError carries the log's last lines), and when the process that started
    it is gone however it ended (``kill -9`` of pytest included).
    """
    port = free_loopback_port()
    process = ManagedProcess()
    argv = list(command(port))
    try:
        process.start(argv, env, workdir / log_name)
    except FileNotFoundError as exc:
        raise EngineBootError(f"cannot start {argv[0]!r}: {exc.strerror}") from None
    try:
        wait_for_health(f"http://127.0.0.1:{port}{health_path}", boot_timeout_s, process)
    except BaseException:
        process.terminate()
        raise
    return ServerProcess(process, port)
