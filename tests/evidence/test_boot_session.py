"""The host's boot session at the start and the end of a run: a reboot disqualifies every AC."""

from __future__ import annotations

import platform

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, ac_record

from pytest_specgate.evidence import AcRecord, judge
from pytest_specgate.selection.boot_session import boot_session_id


def test_boot_session_is_read_per_system_and_unknown_elsewhere() -> None:
    readers = {"Linux": lambda: "a-b-c", "Darwin": lambda: "{ sec = 1764748800, usec = 0 }"}
    assert boot_session_id("Linux", readers) == "a-b-c"
    assert boot_session_id("Darwin", readers).startswith("{ sec")  # type: ignore[union-attr]
    assert boot_session_id("Windows", readers) is None


@pytest.mark.skipif(platform.system() != "Linux", reason="reads /proc on Linux")
def test_this_linux_host_names_its_boot() -> None:
    first = boot_session_id()
    assert first is not None and len(first) == 36 and first == boot_session_id()


def test_a_reboot_during_the_run_disqualifies_every_ac(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("t.py::a", AC10)
    run.run_test("t.py::b", AC11)
    path = run.finish().path
    for ac in ("AC-10", "AC-11"):
        record = ac_record(path, ac)
        session = record["run"]["boot_session"]
        assert session["start"] == session["end"]
        assert not any("rebooted" in reason for reason in judge(AcRecord.from_json(record, ac)).reasons)
        record["run"]["boot_session"]["end"] = "another-boot"
        reasons = judge(AcRecord.from_json(record, ac)).reasons
        assert f"the host rebooted during the run (boot session {session['start']} at the start, " \
               "another-boot at the end)" in reasons
