"""The reaper's parts called in this process: the lifeline, liveness and the group it stops.

``test_engine_reaping.py`` runs the reaper as the script it is, under a pytest that dies; these
call its functions directly, so each decision is checked on its own (and mutation testing, which
sees only this process, can tell whether a test would notice it changed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from engines_testkit import wait_until

from pytest_specgate.engines import reaper

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")

# A group leader that forks a worker; each may ignore SIGTERM. Prints "leader worker" when ready.
GROUP = """\
import os, signal, sys, time
leader_ignores, worker_ignores = sys.argv[1] == "ignores", sys.argv[2] == "ignores"
worker = os.fork()
if worker == 0:
    if worker_ignores:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(30)
    os._exit(0)
if leader_ignores:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(os.getpid(), worker, flush=True)
time.sleep(30)
"""


def _pipe_holding(data: bytes, *, close: bool) -> int:
    """The read end of a pipe that holds ``data``; its write end closed (the parent gone) or kept open."""
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    if close:
        os.close(write_end)
    return read_end


def test_a_release_byte_means_the_parent_let_go() -> None:
    read_end = _pipe_holding(reaper.RELEASE, close=False)
    try:
        assert reaper.wait_for_parent(read_end) is False
    finally:
        os.close(read_end)


def test_a_release_byte_after_other_bytes_still_lets_go() -> None:
    """The lifeline is read a byte at a time: only the release byte counts, wherever it comes."""
    read_end = _pipe_holding(b"x" + reaper.RELEASE, close=True)
    try:
        assert reaper.wait_for_parent(read_end) is False
    finally:
        os.close(read_end)


@pytest.mark.parametrize("data", [b"", b"x", b"xy"])
def test_end_of_file_means_the_parent_is_gone_whatever_came_before(data: bytes) -> None:
    read_end = _pipe_holding(data, close=True)
    try:
        assert reaper.wait_for_parent(read_end) is True
    finally:
        os.close(read_end)


def test_an_unreadable_lifeline_counts_as_a_parent_gone() -> None:
    read_end = _pipe_holding(b"", close=True)
    os.close(read_end)
    assert reaper.wait_for_parent(read_end) is True


def test_alive_tells_a_running_process_from_a_zombie_and_from_none(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert reaper._alive(os.getpid())
    assert wait_until(lambda: not reaper._alive(child.pid)), "an exited child not yet waited for is a zombie"
    assert Path(f"/proc/{child.pid}").is_dir(), "the zombie is still listed"
    child.wait()
    assert not reaper._alive(child.pid)


@contextlib.contextmanager
def _group(leader: str, worker: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A new process group: its leader (a child of this process) and the worker it forked."""
    process = subprocess.Popen([sys.executable, "-c", GROUP, leader, worker], stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        assert process.stdout is not None
        leader_pid, worker_pid = (int(pid) for pid in process.stdout.readline().split())
        assert leader_pid == process.pid == os.getpgid(worker_pid)
        yield process, worker_pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.parametrize(("leader", "worker"), [("honours", "honours"), ("honours", "ignores"),
                                                ("ignores", "ignores")])
def test_reaping_a_group_stops_its_leader_and_every_worker(leader: str, worker: str,
                                                           capfd: pytest.CaptureFixture[str]) -> None:
    with _group(leader, worker) as (process, worker_pid):
        started = time.monotonic()
        reaper._reap_group(process.pid, grace_s=0.5)
        took = time.monotonic() - started

        assert process.wait(timeout=10) in (-signal.SIGTERM, -signal.SIGKILL)
        assert wait_until(lambda: not reaper._alive(worker_pid)), f"worker {worker_pid} outlived its group"
    if leader == "ignores":
        assert process.returncode == -signal.SIGKILL and took >= 0.5, "SIGKILL only after the grace"
    else:
        assert process.returncode == -signal.SIGTERM and took < 0.5, "no wait once the leader is gone"
    assert f"stopping process group {process.pid}" in capfd.readouterr().err


def test_reaping_a_group_that_is_already_gone_is_quiet() -> None:
    with _group("honours", "honours") as (process, _):
        pass
    reaper._reap_group(process.pid, grace_s=0.1)


@pytest.mark.parametrize("released", [True, False])
def test_the_command_mode_runs_its_command_only_for_a_parent_gone(tmp_path: Path, released: bool) -> None:
    marker = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w'); raise SystemExit(3)"]
    read_end = _pipe_holding(reaper.RELEASE if released else b"", close=True)
    try:
        code = reaper.main(["command", f"--lifeline={read_end}", "--", *command])
    finally:
        os.close(read_end)

    assert (code, marker.exists()) == ((0, False) if released else (3, True))


def test_the_command_mode_names_a_program_it_cannot_run(capfd: pytest.CaptureFixture[str]) -> None:
    read_end = _pipe_holding(b"", close=True)
    try:
        code = reaper.main(["command", f"--lifeline={read_end}", "--", "no-such-clean-up-program"])
    finally:
        os.close(read_end)

    assert code == 127
    assert "cannot run 'no-such-clean-up-program'" in capfd.readouterr().err


@pytest.mark.parametrize("argv", [["command", "--lifeline=3"], ["command", "--lifeline=3", "--"]])
def test_the_command_after_the_separator_is_required(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        reaper.parse_arguments(argv)
    assert refused.value.code == 2


def test_the_grace_defaults_to_three_seconds() -> None:
    assert reaper.parse_arguments(["group", "--lifeline=3", "--", "x"]).grace == 3.0
