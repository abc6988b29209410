from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, gate, qualifying_bundle

from pytest_specgate.evidence import WrittenBundle, load_bundle

OTHER_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def pr_body(tmp_path: Path, markdown: str, name: str = "PR.md") -> Path:
    path = tmp_path / name
    path.write_text("## Summary\n\nSpeculative decoding for SPEC-028.\n\n" + markdown)
    return path


def _args(body: Path, evidence: Path, *extra: str) -> list[str]:
    return [
        "--pr-body",
        str(body),
        "--evidence",
        str(evidence),
        "--require",
        "AC-10",
        "--require",
        "AC-11",
        *extra,
    ]


@pytest.fixture
def bundle(git_repo: GitRepo) -> WrittenBundle:
    return qualifying_bundle(git_repo.path, TEST_ENV)


def test_correct_pr_body_is_accepted(
    bundle: WrittenBundle, git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = pr_body(tmp_path, bundle.markdown)
    code, out, _ = gate(
        capsys, *_args(body, git_repo.path / "out", "--commit", git_repo.commit, "--gate", "PR-B")
    )
    assert (code, out) == (0, ["specgate gate: accepted AC-10, AC-11"])
    short = gate(capsys, *_args(body, bundle.path, "--commit", git_repo.commit[:10].upper()))
    assert short[0] == 0


def test_missing_block_is_rejected(
    bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only_ac10 = bundle.markdown.split("## AC-11 evidence")[0]
    code, out, _ = gate(capsys, *_args(pr_body(tmp_path, only_ac10), bundle.path))
    assert (code, out) == (1, ["AC-11: no '## AC-11 evidence' block in the PR body"])


def test_changed_byte_in_any_bundle_file_is_rejected(
    bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = pr_body(tmp_path, bundle.markdown)
    names = sorted(name for name in load_bundle(bundle.path).files)
    assert len(names) == 7  # every file but manifest.json, which has its own test
    for name in names:
        copy = tmp_path / f"copy-{names.index(name)}"
        shutil.copytree(bundle.path, copy)
        data = bytearray((copy / name).read_bytes())
        data[len(data) // 2] ^= 0x01
        (copy / name).write_bytes(bytes(data))
        code, out, _ = gate(capsys, *_args(body, copy))
        assert code == 1, name
        assert out and all(line.startswith(("AC-10: bundle ", "AC-11: bundle ")) for line in out), out
        assert any(f"{name}: sha256 " in line for line in out), (name, out)


def test_changed_manifest_is_rejected(
    bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = pr_body(tmp_path, bundle.markdown)
    manifest_path = bundle.path / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    stated = manifest["bundle_sha256"]
    manifest["bundle_sha256"] = ("0" if stated[0] != "0" else "1") + stated[1:]
    manifest_path.write_text(json.dumps(manifest))
    code, out, _ = gate(capsys, *_args(body, bundle.path))
    assert code == 1 and "AC-10: bundle " in out[0] and "manifest.json: " in out[0]
    entry = manifest["files"]["AC-10.json"]
    entry["size"] += 1
    manifest_path.write_text(json.dumps(manifest))
    code, out, _ = gate(capsys, *_args(body, bundle.path))
    assert code == 1 and all("matches no --evidence bundle" in line for line in out) and len(out) == 2
    assert all(f"found {bundle.path.name} (" in line for line in out), "the bundles searched are named"


def test_extra_file_in_bundle_is_rejected(
    bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (bundle.path / "attachments" / "smuggled.txt").write_text("not listed")
    code, out, _ = gate(capsys, *_args(pr_body(tmp_path, bundle.markdown), bundle.path))
    assert code == 1 and "attachments/smuggled.txt: present but not listed in the manifest" in out[0]


@pytest.mark.parametrize("field", ["bundle-sha256=", "ac-sha256="])
def test_changed_digest_in_pr_body_is_rejected(
    field: str, bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = bundle.markdown.index(field) + len(field)
    digit = bundle.markdown[start]
    changed = bundle.markdown[:start] + ("1" if digit != "1" else "2") + bundle.markdown[start + 1 :]
    code, out, _ = gate(capsys, *_args(pr_body(tmp_path, changed), bundle.path))
    assert code == 1 and len(out) == 1 and out[0].startswith("AC-10: ")
    expected = "matches no --evidence bundle" if field == "bundle-sha256=" else "does not match AC-10.json"
    assert expected in out[0]


def test_other_commit_is_rejected(
    bundle: WrittenBundle, git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = gate(
        capsys, *_args(pr_body(tmp_path, bundle.markdown), bundle.path, "--commit", OTHER_COMMIT)
    )
    assert code == 1
    assert out == [
        f"{ac}: evidence is for commit {git_repo.commit}, not {OTHER_COMMIT}" for ac in ("AC-10", "AC-11")
    ]


def test_diagnostic_run_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV, diagnostic=True)
    code, out, _ = gate(capsys, *_args(pr_body(tmp_path, written.markdown), written.path))
    assert code == 1
    assert "AC-10: diagnostic run: --specgate-diagnostic evidence never qualifies" in out
    assert any(line.startswith("AC-11: not qualifying: diagnostic run") for line in out)


def test_failed_threshold_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.1, "x", at_least=1.4)
    run.run_test(
        "acceptance/test_ac10.py::test_speedup", AC10, outcome="failed", message="below", recorder=recorder
    )
    written = run.finish()
    body = pr_body(tmp_path, written.markdown)
    code, out, _ = gate(capsys, "--pr-body", str(body), "--evidence", str(written.path), "--require", "AC-10")
    assert code == 1
    assert "AC-10: threshold missed: median_speedup = 1.1 is below at_least=1.4" in out
    assert "AC-10: outcome is failed, not passed" in out


def _waived_bundle(repo: Path, target: str) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV)
    waived = AC10 | {"waived_to": target, "reason": "no 16 GB M4 in CI"}
    run.run_test("acceptance/test_ac10.py::test_speedup", waived, outcome="skipped", message="needs Apple M4")
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


def test_expired_waiver_is_rejected_and_a_live_one_accepted(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _waived_bundle(git_repo.path, "PR-B")
    body = pr_body(tmp_path, written.markdown)
    code, out, _ = gate(capsys, *_args(body, written.path, "--gate", "PR-C"))
    assert code == 1
    assert out[0] == "AC-10: waiver to PR-B expired: this is gate PR-C, the AC must now pass on its own"
    assert "AC-10: outcome is skipped, not passed" in out
    assert gate(capsys, *_args(body, written.path, "--gate", "PR-B"))[0] == 1
    assert gate(capsys, *_args(body, written.path, "--gate", "PR-A"))[:2] == (
        0,
        ["specgate gate: accepted AC-10, AC-11"],
    )
    code, out, _ = gate(capsys, *_args(body, written.path))
    assert (
        code == 1 and out[0] == "AC-10: waived → PR-B, but no --gate was given to honour the waiver against"
    )


def test_numeric_gates_order_numerically(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _waived_bundle(git_repo.path, "PR-10")
    body = pr_body(tmp_path, written.markdown)
    assert gate(capsys, *_args(body, written.path, "--gate", "PR-9"))[0] == 0
    assert gate(capsys, *_args(body, written.path, "--gate", "PR-10"))[0] == 1
    code, _, err = gate(capsys, *_args(body, written.path, "--gate", "PR-C"))
    assert code == 2 and "cannot order gate 'PR-10' against 'PR-C'" in err
    assert f"{written.path / 'AC-10.json'}: waiver to 'PR-10'" in err, "the error names the record's file"


def test_duplicate_blocks_are_rejected(
    bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = gate(
        capsys, *_args(pr_body(tmp_path, bundle.markdown + "\n" + bundle.markdown), bundle.path)
    )
    assert code == 1 and out[0].startswith("AC-10: 2 evidence blocks in the PR body (lines ")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        ("missing-body", "PR body not found"),
        ("malformed-digest", "malformed digest line"),
        ("no-digest", "has no 'specgate-evidence AC-10 ac-sha256=… bundle-sha256=…' line"),
        ("empty-evidence", "no evidence bundle (no manifest.json here or one level below)"),
        ("manifest-not-json", "manifest.json: not valid JSON"),
        ("bad-require", "--require 'AC10': an AC id looks like AC-<n>[a-z] or FR-<n>[.<n>]"),
        ("bad-gate", "--gate: gate name 'release-1' is not orderable"),
        ("bad-commit", "--commit 'xyz': expected 7 to 64 hex digits"),
    ],
)
def test_bad_input_exits_2_naming_file_and_problem(
    mutate: str, expected: str, bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = pr_body(tmp_path, bundle.markdown)
    evidence = bundle.path
    extra: list[str] = []
    if mutate == "missing-body":
        body = tmp_path / "absent.md"
    elif mutate == "malformed-digest":
        body.write_text(body.read_text().replace("bundle-sha256=", "bundle-sha256=zz", 1))
    elif mutate == "no-digest":
        body.write_text(body.read_text().replace("`specgate-evidence AC-10", "`AC-10", 1))
    elif mutate == "empty-evidence":
        evidence = tmp_path / "empty"
        evidence.mkdir()
    elif mutate == "manifest-not-json":
        (bundle.path / "manifest.json").write_text("{not json")
    elif mutate == "bad-require":
        extra = ["--require", "AC10"]
    elif mutate == "bad-gate":
        extra = ["--gate", "release-1"]
    elif mutate == "bad-commit":
        extra = ["--commit", "xyz"]
    code, out, err = gate(capsys, *_args(body, evidence, *extra))
    assert (code, out) == (2, [])
    assert err.startswith("specgate gate: error: ") and expected in err and err.count("\n") == 1
    if mutate in ("missing-body", "malformed-digest", "no-digest"):
        assert str(body) in err
