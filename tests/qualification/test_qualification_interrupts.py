"""What ends a run from outside - SIGKILL, pytest-timeout - still leaves the receipt naming the gate.

These run a real pytest in a subprocess with its own conftest creating the
session, so they do not depend on the plugin's fixture wiring.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONFTEST = """
from pathlib import Path

import pytest

from pytest_specgate.qualification import GateSpec, QualificationSession

GATES = (GateSpec("boot_check", 2), GateSpec("stuck_gate", 2), GateSpec("never_reached", 2))


@pytest.fixture
def session():
    return QualificationSession(Path({directory!r}), GATES)
"""

SPEC = """
import time
from pathlib import Path


def test_stuck(session):
    with session:
        with session.gate("boot_check"):
            pass
        with session.gate("stuck_gate"):
            Path({marker!r}).write_text("inside")
            time.sleep(60)
"""


def _write_project(pytester: pytest.Pytester, directory: Path, marker: Path) -> None:
    pytester.makeconftest(CONFTEST.format(directory=str(directory)))
    pytester.makepyfile(test_stuck=SPEC.format(marker=str(marker)))


def _receipt(directory: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((directory / "receipt.json").read_text())
    return loaded


def test_sigkill_of_a_subprocess_pytest_mid_gate_leaves_the_receipt_naming_the_gate(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    directory, marker = tmp_path / "qualification", tmp_path / "inside-gate"
    _write_project(pytester, directory, marker)
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_stuck.py"],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        give_up = time.monotonic() + 60
        while not marker.exists():
            assert process.poll() is None, "the subprocess pytest ended before reaching the gate"
            assert time.monotonic() < give_up, "the subprocess pytest never reached the gate"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    document = _receipt(directory)
    assert document["verdict"] == "NOT QUALIFIED"
    assert document["failing_gate"] == "stuck_gate"
    assert document["running_gate"] == "stuck_gate"
    lines = (directory / "checkpoints.jsonl").read_text().splitlines()
    assert [json.loads(line)["gate"] for line in lines] == ["boot_check"]


def test_pytest_timeout_mid_gate_leaves_the_receipt_naming_the_gate(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    directory, marker = tmp_path / "qualification", tmp_path / "inside-gate"
    _write_project(pytester, directory, marker)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--timeout=2", "--timeout-method=signal")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Timeout*"])
    document = _receipt(directory)
    assert (document["verdict"], document["failing_gate"], document["status"]) == (
        "NOT QUALIFIED",
        "stuck_gate",
        "failed",
    )
    assert "Timeout" in json.loads((directory / "stuck_gate.json").read_text())["error"]
