"""``specgate compare`` of a bundle and a byte-identical copy of it reads, checks, types and judges
its records once; anything that differs from the first bundle is still read on its own.

The shortcut rests on the recomputed bundle digest: a bundle whose every file matches its manifest
and whose manifest gives the first bundle's digest holds the first bundle's records byte for byte.
Each test compares the command with the shortcut against the command without it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, cli, reseal_bundle

from pytest_specgate.evidence import _compare, cli_commands
from pytest_specgate.evidence._bundle import RECORDS_NAME
from pytest_specgate.evidence.cli_commands import configure_compare_parser, run_compare


def _bundle(repo: Path) -> Path:
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11, outcome="failed", message="assert 1 == 2")
    return run.finish().path


def _bundle_and_copy(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    bundle = _bundle(repo)
    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    return bundle, copy


def _counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[object]:
    """Every call of ``module.name`` from here on, by its first argument."""
    calls: list[object] = []
    original = getattr(module, name)

    def counted(first: Any, *rest: Any) -> Any:
        calls.append(first)
        return original(first, *rest)

    monkeypatch.setattr(module, name, counted)
    return calls


def _compared(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *arguments: str,
              shortcut: bool = True) -> tuple[int, str, str, int]:
    """Exit code, stdout, stderr and how many bundles were read, with or without the shortcut."""
    with monkeypatch.context() as patched:
        if not shortcut:
            original = cli_commands._verified_records
            patched.setattr(cli_commands, "_verified_records", lambda bundle, read=None: original(bundle))
        reads = _counted(patched, cli_commands, "read_records")
        code, out, err = cli(capsys, configure_compare_parser, run_compare, *arguments)
    return code, out, err, len(reads)


@pytest.mark.parametrize("as_json", [False, True], ids=["markdown", "json"])
def test_a_bundle_and_its_copy_are_read_and_judged_once_and_compare_as_before(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    as_json: bool,
) -> None:
    bundle, copy = _bundle_and_copy(git_repo.path, tmp_path)
    arguments = [str(bundle), str(copy), *(["--json"] if as_json else [])]
    judged = _counted(monkeypatch, _compare, "judge")
    code, out, err, reads = _compared(capsys, monkeypatch, *arguments)
    assert (code, reads, len(judged)) == (0, 1, 2)
    judged.clear()
    assert _compared(capsys, monkeypatch, *arguments, shortcut=False) == (code, out, err, 2)
    assert len(judged) == 4
    assert "median_speedup" in out and "1.52" in out


def test_a_copy_changed_after_sealing_is_refused_not_taken_for_the_bundle_it_was(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle, copy = _bundle_and_copy(git_repo.path, tmp_path)
    lines = (copy / RECORDS_NAME).read_bytes()
    (copy / RECORDS_NAME).write_bytes(lines.replace(b"1.52", b"1.02", 1))
    for arguments in ([str(bundle), str(copy)], [str(copy), str(bundle)]):
        code, out, err, _ = _compared(capsys, monkeypatch, *arguments)
        assert code == 2 and "does not match its manifest" in err, (out, err)


def test_a_copy_resealed_with_a_change_is_read_on_its_own(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same run id, same path names, another digest: both are read, and the change is shown."""
    bundle, copy = _bundle_and_copy(git_repo.path, tmp_path)

    def slower(record: dict[str, Any]) -> None:
        record["measurements"][0]["value"] = 1.02

    reseal_bundle(copy, {"AC-10": slower})
    code, out, err, reads = _compared(capsys, monkeypatch, str(bundle), str(copy), "--json")
    assert reads == 2
    assert (code, out, err) == _compared(capsys, monkeypatch, str(bundle), str(copy), "--json",
                                         shortcut=False)[:3]
    [row] = [row for row in json.loads(out)["measurements"] if row["ac"] == "AC-10"]
    assert (row["base"], row["new"]) == (1.52, 1.02)
    assert code == 1 and json.loads(out)["verdict_changes"][0]["ac"] == "AC-10"
