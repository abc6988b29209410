"""Source binding end to end: no git trick hides a change in a file the run imported."""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import ac_record, git
from provenance_testkit import commit_project, gate_rejection, only_record, run_passing

from pytest_specgate.evidence._source import tree_changes

EDITED_SPEC = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    evidence.measure("median_speedup", 9.9, "x", at_least=1.4)
"""


def imported_file_reason(files: str) -> str:
    return f"(compared by git blob hash; --specgate-allow-dirty cannot excuse them): {files}"


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_hidden_index_flag_cannot_hide_an_edited_spec(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    commit = commit_project(pytester)
    git(pytester.path, "update-index", flag, "test_spec.py")
    (pytester.path / "test_spec.py").write_text(EDITED_SPEC)
    assert git(pytester.path, "status", "--porcelain") == ""  # git itself sees nothing
    pytester.runpytest("--specgate-evidence=out", "--specgate-allow-dirty", "-p", "no:cacheprovider"
                       ).assert_outcomes(passed=1)
    bundle, record = only_record(pytester.path / "out")
    assert record["source"]["changed_files"] == ["test_spec.py"] and record["source"]["dirty"] is True
    assert any(reason.endswith(imported_file_reason("test_spec.py"))
               for reason in record["not_qualifying_reasons"])
    assert gate_rejection(bundle, commit, capsys).startswith(
        f"AC-10: not qualifying: files the run imported are not those of commit {commit[:12]} ")


def test_git_ignored_conftest_counts_as_changed(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester)
    (pytester.path / ".git" / "info" / "exclude").write_text("conftest.py\nhelpers/\n")
    (pytester.path / "helpers").mkdir()
    (pytester.path / "helpers" / "speed.py").write_text("FACTOR = 9.9\n")
    (pytester.path / "conftest.py").write_text("import sys\nsys.path.insert(0, 'helpers')\nimport speed\n")
    assert git(pytester.path, "status", "--porcelain") == ""
    bundle, record = run_passing(pytester)
    assert record["source"]["changed_files"] == ["conftest.py", "helpers/speed.py"]
    assert any(reason.endswith(imported_file_reason("conftest.py, helpers/speed.py"))
               for reason in record["not_qualifying_reasons"])
    rejection = gate_rejection(bundle, commit, capsys)
    assert rejection.endswith(imported_file_reason("conftest.py, helpers/speed.py"))


def test_evidence_folder_at_the_root_hides_no_change(pytester: pytest.Pytester) -> None:
    commit_project(pytester, **{"README.md": "specs\n"})
    for _ in range(2):  # the second run finds the first run's bundle in the tree: not a change
        pytester.runpytest("--specgate-evidence=.", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    records = [ac_record(path.parent, "AC-10") for path in sorted(pytester.path.glob("*/records.jsonl"))]
    assert len(records) == 2
    assert [record["not_qualifying_reasons"] for record in records] == [[], []]
    before = set(pytester.path.glob("*/records.jsonl"))
    (pytester.path / "README.md").write_text("edited\n")
    pytester.runpytest("--specgate-evidence=.", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    [newest] = set(pytester.path.glob("*/records.jsonl")) - before
    record = ac_record(newest.parent, "AC-10")
    assert record["source"]["dirty"] is True and record["source"]["changed_files"] == []
    assert record["not_qualifying_reasons"] == [
        "working tree has uncommitted changes (--specgate-allow-dirty not given)"]


def test_rootdir_at_a_clean_clone_binds_the_files_actually_imported(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_project(pytester)
    clean = pytester.path.parent / "clean-clone"
    git(pytester.path.parent, "clone", "-q", str(pytester.path), str(clean))
    commit = git(clean, "rev-parse", "HEAD")
    (pytester.path / "test_spec.py").write_text(EDITED_SPEC)
    pytester.runpytest(f"--rootdir={clean}", "--specgate-evidence=out", "-p", "no:cacheprovider",
                       str(pytester.path / "test_spec.py")).assert_outcomes(passed=1)
    bundle, record = only_record(pytester.path / "out")
    assert record["source"]["commit"] == commit
    outside = f"../{pytester.path.name}/test_spec.py"
    assert record["source"]["changed_files"] == [outside]
    assert any(reason.endswith(imported_file_reason(outside)) for reason in record["not_qualifying_reasons"])
    assert outside in gate_rejection(bundle, commit, capsys)


def test_tree_changes_leave_out_only_the_writers_own_bundles(tmp_path: Path) -> None:
    porcelain = "\0".join([
        "?? 20261203T083024Z-ba6ef8/AC-10.json",
        "?? .staging/abc",
        "?? notes/new.py",
        " M README.md",
        "R  new.py", "old.py",
        "",
    ])
    assert tree_changes(porcelain, tmp_path, tmp_path) == ["notes/new.py", "README.md", "new.py"]
    assert tree_changes(porcelain, tmp_path, tmp_path / "out") == [
        "20261203T083024Z-ba6ef8/AC-10.json", ".staging/abc", "notes/new.py", "README.md", "new.py"]


def test_under_xdist_the_workers_imports_are_bound(pytester: pytest.Pytester) -> None:
    commit_project(pytester)
    (pytester.path / ".git" / "info" / "exclude").write_text("test_extra.py\n")
    (pytester.path / "test_extra.py").write_text("def test_only_a_worker_imports_me():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    _, record = only_record(pytester.path / "out")
    assert record["source"]["changed_files"] == ["test_extra.py"]
