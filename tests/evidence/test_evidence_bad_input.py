"""Bad files in front of ``specgate render``/``gate``: one line naming the file, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evidence_testkit import TEST_ENV, GitRepo, qualifying_bundle

from pytest_specgate.cli import main
from pytest_specgate.evidence._bundle import FileEntry, file_entry, manifest_document
from pytest_specgate.evidence._jsonio import pretty_json

DEEP = 5_000


def _deep_json(depth: int) -> str:
    return '{"nested": ' + "[" * depth + "]" * depth + "}"


def _run(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    code = main(list(arguments))
    return code, capsys.readouterr().err


def test_a_deeply_nested_manifest_is_one_line_not_a_recursion_error(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    (bundle / "manifest.json").write_text(_deep_json(DEEP))

    code, err = _run(capsys, "render", str(bundle))

    assert code == 2
    assert err == (f"specgate render: error: {bundle / 'manifest.json'}: JSON nested deeper than 100 "
                   "levels\n")


def test_a_deeply_nested_record_is_one_line_naming_it(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    record = _deep_json(DEEP).encode() + b"\n"
    lines = (bundle / "records.jsonl").read_bytes().splitlines(keepends=True)
    (bundle / "records.jsonl").write_bytes(record + lines[1])
    old = json.loads((bundle / "manifest.json").read_text())
    files = {name: FileEntry(**entry) for name, entry in old["files"].items()}
    files["records.jsonl"] = file_entry(record + lines[1])
    records = {ac_id: FileEntry(**entry) for ac_id, entry in old["records"].items()}
    records["AC-10"] = file_entry(record)
    manifest = manifest_document(old["run_id"], files, old["specgate"], records)
    (bundle / "manifest.json").write_text(pretty_json(manifest))

    code, err = _run(capsys, "render", str(bundle))

    assert code == 2
    assert f"{bundle / 'records.jsonl'}#AC-10: JSON nested deeper than 100 levels" in err
    assert len(err.splitlines()) == 1


def test_a_manifest_that_is_not_utf8_names_the_byte(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    (bundle / "manifest.json").write_bytes(b'{"files": "caf\xe9"}')

    code, err = _run(capsys, "render", str(bundle))

    assert code == 2
    assert err == (f"specgate render: error: {bundle / 'manifest.json'}: expected UTF-8 text, "
                   "found byte 0xe9 at offset 14\n")


def test_render_into_a_missing_folder_is_one_line(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    target = tmp_path / "missing" / "PR.md"

    code, err = _run(capsys, "render", str(bundle), f"--out={target}")

    assert code == 2
    assert err == f"specgate render: error: --out={target}: cannot write: No such file or directory\n"
    assert not target.parent.exists()


def test_merge_into_a_folder_that_cannot_be_created_is_one_line(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")

    code, err = _run(capsys, "merge", str(bundle), f"--out={blocker / 'merged'}")

    assert code == 2
    assert err == (f"specgate merge: error: --out={blocker / 'merged'}: cannot write the merged bundle: "
                   "Not a directory\n")
