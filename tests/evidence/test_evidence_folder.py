"""The evidence folder holds: checked before the first test, resolved, staged per run, and an
attachment that cannot be stored costs its AC's qualification, never the bundle."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import AC10, TEST_ENV, GitRepo, SyntheticRun, git, reasons_besides_this_checkout

from pytest_specgate.evidence import EvidenceRecorder, find_bundles, read_records, verify_bundle
from pytest_specgate.evidence._jsonio import replace_atomically

ONE_ATTACHMENT = """
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-028", title="attaches")
def test_attach(evidence):
    evidence.attach(NAME, "ready on 127.0.0.1\\n")
"""


def _commit(repo: Path, ignored: str = "") -> None:
    (repo / ".gitignore").write_text(f"__pycache__/\n.pytest_cache/\nout/\n{ignored}")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "specs")


def _only_record(directory: Path, ac_id: str) -> dict[str, Any]:
    bundles = find_bundles(directory)
    assert len(bundles) == 1 and verify_bundle(bundles[0]) == []
    return dict(read_records(bundles[0])[ac_id].document)


def test_an_evidence_folder_that_cannot_be_created_is_a_usage_error_naming_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_specs=ONE_ATTACHMENT.replace("NAME", "'server.log'"))
    (pytester.path / "blocker").write_text("a file, not a folder")
    result = pytester.runpytest("--specgate-evidence=blocker/out", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --specgate-evidence: the evidence folder */blocker/out cannot be written "
         "(Not a directory); expected a folder this run can create files in"]
    )
    result.stdout.no_fnmatch_line("*test_attach*")


def test_an_evidence_folder_that_is_a_symlink_loop_is_one_line_and_exit_4(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_specs=ONE_ATTACHMENT.replace("NAME", "'server.log'"))
    (pytester.path / "loop").symlink_to("loop")
    result = pytester.runpytest_subprocess("--specgate-evidence=loop", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --specgate-evidence: the evidence folder */loop cannot be resolved (*loop*); "
         "expected a folder, or a link that ends at one"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_symlinked_evidence_folder_is_resolved_and_leaves_the_tree_clean(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_specs=ONE_ATTACHMENT.replace("NAME", "'server.log'"))
    _commit(pytester.path)
    real = tmp_path / "evidence-elsewhere"
    real.mkdir()
    (pytester.path / "evidence").symlink_to(real)
    result = pytester.runpytest("--specgate-evidence=evidence", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*specgate evidence: {real}/*(QUALIFIED, 1 AC)*"])
    record = _only_record(real, "AC-1")
    assert record["source"]["dirty"] is False and record["qualifying"] is True


def test_an_attachment_name_too_long_for_the_file_system_is_shortened(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_specs=ONE_ATTACHMENT.replace("NAME", "'x' * 300 + '.log'"))
    _commit(pytester.path)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    record = _only_record(pytester.path / "out", "AC-1")
    (row,) = record["attachments"]
    assert row["name"] == "x" * 92 + ".log" and record["qualifying"] is True


def test_files_are_written_with_the_mode_the_umask_allows(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        replace_atomically(tmp_path / "group-readable.json", b"{}")
        os.umask(0o022)
        replace_atomically(tmp_path / "world-readable.json", b"{}")
    finally:
        os.umask(previous)
    assert (tmp_path / "group-readable.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "world-readable.json").stat().st_mode & 0o777 == 0o644


def test_an_attachment_that_cannot_be_staged_is_recorded_missing(git_repo: GitRepo, tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("not a folder")
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = EvidenceRecorder("acceptance/test_ac10.py::test_speedup", run.collector.redactor,
                                tmp_path / "blocked" / "staging")
    attachment = recorder.attach("server.log", "ready\n")
    assert attachment.problem == "could not be staged: Not a directory" and not attachment.staged
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    record = read_records(find_bundles(run.finish().path)[0])["AC-10"].document
    assert record["qualifying"] is False
    assert [row["stored"] for row in record["attachments"]] == [False]
    assert record["not_qualifying_reasons"] == [
        "attachment acceptance/test_ac10.py::test_speedup: server.log (could not be staged: Not a directory) "
        "is missing from the bundle"
    ]


def test_an_attachment_redaction_cannot_open_is_refused_and_recorded(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    attachment = recorder.attach("trace.zst", b"\x28\xb5\x2f\xfd" + bytes(32))
    assert attachment.sha256 is None
    assert attachment.problem == "refused: zstd-compressed content cannot be opened for redaction"
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    record = read_records(find_bundles(run.finish().path)[0])["AC-10"].document
    assert record["qualifying"] is False
    assert any("trace.zst (refused: zstd-compressed" in reason for reason in record["not_qualifying_reasons"])


def test_an_attachment_the_bundle_cannot_hold_costs_its_ac_not_the_bundle(
    git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_specgate.evidence._collector as collector_module

    def disk_full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.attach("big.log", "a large log\n")
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    monkeypatch.setattr(collector_module, "write_attachment", disk_full)
    bundle = find_bundles(run.finish().path)[0]
    assert verify_bundle(bundle) == []
    record = read_records(bundle)["AC-10"].document
    assert record["qualifying"] is False
    assert [row["stored"] for row in record["attachments"]] == [False]
    assert record["not_qualifying_reasons"] == [
        "attachment acceptance/test_ac10.py::test_speedup: big.log (could not be written: No space left on "
        "device) is missing from the bundle"
    ]


def test_a_bundle_the_disk_cannot_hold_is_one_clear_line_not_an_internal_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_specgate.evidence._writer as writer_module

    def disk_full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    pytester.makepyfile(test_specs=ONE_ATTACHMENT.replace("NAME", "'server.log'"))
    monkeypatch.setattr(writer_module, "write_unlisted", disk_full)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*specgate evidence: NOT WRITTEN: the bundle could not be written to */out/*: "
         "No space left on device*"]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


SHARED_FOLDER_SPEC = """
import os, pathlib, time
import pytest

BARRIER = pathlib.Path(os.environ["BARRIER"])

def wait_for(found, what):
    deadline = time.monotonic() + 120
    while not found():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)

@pytest.mark.ac("AC-1", spec="SPEC-028", title="shares a folder")
def test_attach(evidence):
    me, other = os.environ["RUN_NAME"], os.environ["OTHER_RUN"]
    evidence.attach("shared.log", "the same bytes in both runs\\n")
    (BARRIER / me).write_text("attached")
    wait_for((BARRIER / other).exists, other + " attaching")
    if me == "second":
        evidence = pathlib.Path(os.environ.get("EVIDENCE_DIR", "out"))
        wait_for(lambda: any(evidence.glob("*/manifest.json")), "the first bundle")
"""


def test_two_runs_sharing_one_folder_both_keep_their_attachments(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_shared=SHARED_FOLDER_SPEC)
    _commit(pytester.path)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    runs = {}
    for name, other in (("first", "second"), ("second", "first")):
        environment = {**os.environ, "BARRIER": str(barrier), "RUN_NAME": name, "OTHER_RUN": other}
        environment.pop("PYTEST_ADDOPTS", None)
        runs[name] = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--specgate-evidence=out", "-p", "no:cacheprovider", "-q"],
            cwd=pytester.path, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
    outputs = {name: process.communicate(timeout=300)[0] for name, process in runs.items()}
    assert [process.returncode for process in runs.values()] == [0, 0], outputs
    bundles = find_bundles(pytester.path / "out")
    assert len(bundles) == 2
    for bundle in bundles:
        assert verify_bundle(bundle) == []
        record = read_records(bundle)["AC-1"].document
        assert reasons_besides_this_checkout(record) == []
        (row,) = record["attachments"]
        assert (bundle.path / row["path"]).read_text() == "the same bytes in both runs\n"
    assert not (pytester.path / "out" / ".staging").exists()
    assert json.loads((bundles[0].path / "receipt.json").read_text())["status"] == "finished"
