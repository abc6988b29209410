"""No engine outlives the process that booted it, and SIGTERM tears down like Ctrl-C.

Every run here is a real pytest in a subprocess with a real engine process
(the mock served by its own process); the spec ends that pytest the way the
trial names, and the engine's PID must be gone afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from engines_testkit import wait_until

from pytest_specgate.engines.boot import ManagedProcess, reaped_argv, run_if_orphaned
from pytest_specgate.engines.reaper import parse_arguments
from pytest_specgate.plugin.termination import install_sigterm_teardown

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")

SPEC = '''\
import json, os, pathlib, signal, time

import pytest

STOP = os.environ["REAPING_STOP"]


@pytest.mark.engine("mock", isolation="subprocess")
def test_serve(engine):
    pathlib.Path("engine.json").write_text(json.dumps({"pid": engine.pid, "port": engine.port,
                                                       "runner": os.getpid()}))
    try:
        engine.chat([{"role": "user", "content": "hello"}], max_tokens=2)
        if STOP in ("SIGKILL", "SIGTERM"):
            os.kill(os.getpid(), getattr(signal, STOP))
        time.sleep(60)
    finally:
        pathlib.Path("teardown-ran").write_text(STOP)
'''

# A server that listens but never answers: the timeout fires while boot waits for health.
BOOT_SPEC = '''\
import json, os, pathlib, sys

from pytest_specgate.engines.boot import ManagedProcess, wait_for_health

SILENT_SERVER = (
    "import socket, time\\n"
    "listener = socket.socket()\\n"
    "listener.bind(('127.0.0.1', 0))\\n"
    "listener.listen()\\n"
    "print(listener.getsockname()[1], flush=True)\\n"
    "time.sleep(60)\\n"
)


def test_boot(tmp_path):
    log = tmp_path / "mock-engine-0.log"
    process = ManagedProcess().start([sys.executable, "-c", SILENT_SERVER], None, log)
    while not log.read_text().strip():
        pass
    port = int(log.read_text().split()[0])
    pathlib.Path("engine.json").write_text(json.dumps({"pid": process.pid, "port": port,
                                                       "runner": os.getpid()}))
    wait_for_health(f"http://127.0.0.1:{port}/health", 60, process)
'''


def _alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie waits for a reaper that may not come)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _listening(port: int) -> bool:
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(f":{port:04X} " in line and line.split()[3] == "0A" for line in lines)


def _run_spec(pytester: pytest.Pytester, stop: str, *args: str) -> tuple[pytest.RunResult, dict[str, int]]:
    pytester.makepyfile(test_reaping=SPEC)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    os.environ["REAPING_STOP"] = stop
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)
    finally:
        del os.environ["REAPING_STOP"]
    engine = json.loads((pytester.path / "engine.json").read_text())
    return result, engine


def _assert_engine_reaped(pytester: pytest.Pytester, engine: dict[str, int]) -> None:
    assert engine["pid"] != engine["runner"]
    assert wait_until(lambda: not _alive(engine["pid"])), f"engine {engine['pid']} outlived its pytest"
    assert wait_until(lambda: not _listening(engine["port"])), f"port {engine['port']} still listens"
    logs = "".join(path.read_text() for path in pytester.path.rglob("mock-engine-*.log"))
    assert "the process that booted this engine is gone: stopping process group" in logs


def test_sigkill_of_pytest_takes_the_engine_down(pytester: pytest.Pytester) -> None:
    result, engine = _run_spec(pytester, "SIGKILL", "-p", "no:xdist")

    assert result.ret == -signal.SIGKILL
    assert not (pytester.path / "teardown-ran").exists(), "SIGKILL runs no finally: the reaper must act"
    _assert_engine_reaped(pytester, engine)


def test_sigkill_of_one_xdist_worker_takes_its_engine_down(pytester: pytest.Pytester) -> None:
    result, engine = _run_spec(pytester, "SIGKILL", "-n", "1")

    result.stdout.fnmatch_lines(["*worker 'gw0' crashed while running 'test_reaping.py::test_serve'*"])
    assert result.ret == 1
    _assert_engine_reaped(pytester, engine)


@pytest.mark.parametrize("where", ["test", "boot"])
def test_pytest_timeout_thread_method_takes_the_engine_down(pytester: pytest.Pytester, where: str) -> None:
    if where == "boot":
        pytester.makepyfile(test_boot=BOOT_SPEC)
        pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--timeout=3",
                                               "--timeout-method=thread", timeout=120)
        engine = json.loads((pytester.path / "engine.json").read_text())
    else:
        result, engine = _run_spec(pytester, "timeout", "-p", "no:xdist", "--timeout=3",
                                   "--timeout-method=thread")

    result.stdout.fnmatch_lines(["*+ Timeout +*"])
    assert result.ret == 1
    _assert_engine_reaped(pytester, engine)


def test_sigterm_tears_down_like_ctrl_c(pytester: pytest.Pytester) -> None:
    result, engine = _run_spec(pytester, "SIGTERM", "-p", "no:xdist")

    result.stdout.fnmatch_lines(["*received SIGTERM: tearing down as on Ctrl-C*", "*no tests ran*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert (pytester.path / "teardown-ran").read_text() == "SIGTERM"
    assert not _alive(engine["pid"]), "the session's own teardown closed the engine before exit"
    assert not _listening(engine["port"])


def test_sigterm_leaves_an_interrupted_receipt_naming_the_running_ac(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_term=(
        "import os, signal, time\n"
        "import pytest\n\n"
        "@pytest.mark.ac('AC-7')\n"
        "def test_canary(evidence):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(60)\n"
    ))

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--specgate-evidence=out", timeout=120)

    assert result.ret == pytest.ExitCode.INTERRUPTED
    receipt = json.loads(next((pytester.path / "out").glob("*/receipt.json")).read_text())
    assert receipt["status"] == "interrupted" and receipt["verdict"] == "NOT QUALIFIED"
    assert receipt["running"] == [{"ac": "AC-7", "nodeid": "test_term.py::test_canary"}]


def test_sigterm_handler_leaves_a_handler_someone_else_installed() -> None:
    def theirs(signum: int, frame: object) -> None:
        return None

    previous = signal.signal(signal.SIGTERM, theirs)
    try:
        assert install_sigterm_teardown() is None
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, previous)


def _child(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(body)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          check=False)


def test_a_second_sigterm_during_teardown_ends_the_process(tmp_path: Path) -> None:
    script = (
        "import os, signal, time\n"
        "from pytest_specgate.plugin.termination import Terminated, install_sigterm_teardown\n"
        "install_sigterm_teardown()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(30)\n"
        "except Terminated as first:\n"
        "    print(first, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(30)\n"
        "    print('teardown was not cut short', flush=True)\n"
    )
    done = _child(tmp_path, script)

    assert done.stdout == "specgate: received SIGTERM: tearing down as on Ctrl-C\n"
    assert done.returncode == -signal.SIGTERM


@pytest.mark.parametrize("dies", [True, False])
def test_orphan_clean_up_runs_only_when_the_parent_died(tmp_path: Path, dies: bool) -> None:
    marker = tmp_path / "down-ran"
    clean_up = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('down')"]
    body = (
        "import os\n"
        "from pytest_specgate.engines.boot import run_if_orphaned\n"
        f"with run_if_orphaned({clean_up!r}):\n"
        f"    {'os._exit(0)' if dies else 'pass'}\n"
    )

    assert _child(tmp_path, body).returncode == 0

    if dies:
        assert wait_until(marker.exists) and marker.read_text() == "down"
    else:
        assert not marker.exists(), "a released watcher must not run the clean-up"


# An engine that forks a worker into its process group, as vLLM does; the worker may ignore
# SIGTERM (busy in a kernel call), so only the group's SIGKILL reaches it then.
FORKING_ENGINE = """\
import os, signal, sys, time
worker = os.fork()
if worker == 0:
    if sys.argv[2] == "ignores":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(30)
    os._exit(0)
with open(sys.argv[1] + ".tmp", "w") as pids:
    pids.write(f"{os.getpid()} {worker}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(30)
"""

# Boots the forking engine under the reaper, waits for its pids, then dies without any teardown.
ORPHANING_RUNNER = """\
import os, sys, time
from pathlib import Path
from pytest_specgate.engines.boot import ManagedProcess
pids, sigterm, engine = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ManagedProcess().start([sys.executable, "-c", engine, str(pids), sigterm], None, pids.with_suffix(".log"))
while not pids.exists():
    time.sleep(0.02)
os._exit(0)
"""


@pytest.mark.parametrize("sigterm", ["honours", "ignores"])
def test_the_reaper_stops_the_workers_an_engine_forked_into_its_group(tmp_path: Path, sigterm: str) -> None:
    pids_file = tmp_path / "pids"
    runner = subprocess.run([sys.executable, "-c", ORPHANING_RUNNER, str(pids_file), sigterm, FORKING_ENGINE],
                            capture_output=True, text=True, timeout=60, check=False)
    assert runner.returncode == 0, runner.stderr
    leader, worker = (int(pid) for pid in pids_file.read_text().split())
    try:
        assert worker != leader
        assert wait_until(lambda: not _alive(leader)), f"engine {leader} outlived the process that booted it"
        assert wait_until(lambda: not _alive(worker)), f"worker {worker} of engine {leader} outlived it"
    finally:
        for pid in (pid for pid in (leader, worker) if _alive(pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    log = pids_file.with_suffix(".log").read_text()
    assert f"the process that booted this engine is gone: stopping process group {leader}" in log


def test_the_reaper_refuses_a_group_it_does_not_lead(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(reaped_argv("group", read_end, ["true"]), pass_fds=(read_end,),
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        os.close(read_end)
        os.close(write_end)

    assert done.returncode == 2
    assert "refusing to guard a process group this process does not lead" in done.stderr


def test_a_missing_engine_program_fails_in_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-engine-program"):
        ManagedProcess().start(["no-such-engine-program"], None, tmp_path / "engine.log")


def test_run_if_orphaned_is_released_by_an_exception(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(RuntimeError, match="boot failed"), \
            run_if_orphaned([sys.executable, "-c", f"open({str(marker)!r}, 'w')"]):
        raise RuntimeError("boot failed")
    assert not marker.exists()


def test_the_reaper_passes_the_engine_command_on_untouched() -> None:
    arguments = parse_arguments(["group", "--lifeline=7", "--", "vllm", "serve", "--", "-x", "--port=1"])

    assert (arguments.mode, arguments.lifeline, arguments.argv) == (
        "group", 7, ["vllm", "serve", "--", "-x", "--port=1"])
