from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import (
    AC10,
    AC11,
    M4_HOST_FACTS,
    M4_MATCHED,
    REAL_ENGINE,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    ac_record,
    gate,
    qualifying_bundle,
    reseal_bundle,
)
from hypothesis import given
from hypothesis import strategies as st

from pytest_specgate.evidence import BundleError, WrittenBundle, load_bundle, read_records, verify_bundle
from pytest_specgate.evidence._gate import CommitChoice, GateInputError, resolve_commit
from pytest_specgate.evidence.cli_commands import configure_gate_parser, run_gate

OTHER_COMMIT = "0123456789abcdef0123456789abcdef01234567"
def declared_gates(tmp_path: Path, *names: str) -> str:
    """A pyproject declaring ``names`` as the project's merge gates; returns its --trusted-config option."""
    pyproject = tmp_path / "gates-pyproject.toml"
    pyproject.write_text("[tool.specgate]\ngates = [" + ", ".join(f'"{n}"' for n in names) + "]\n"
                         '[tool.specgate.acs."AC-10"]\n[tool.specgate.acs."AC-11"]\n')
    return f"--trusted-config={pyproject}"


def pr_body(tmp_path: Path, markdown: str, name: str = "PR.md") -> Path:
    path = tmp_path / name
    path.write_text("## Summary\n\nSpeculative decoding for SPEC-028.\n\n" + markdown)
    return path


def _args(body: Path, evidence: Path, *extra: str, commit: str | None = None) -> list[str]:
    """Gate arguments; ``--commit`` is the bundle's own commit unless ``extra`` names one."""
    if commit is None and not any(arg.startswith("--commit") for arg in extra):
        manifest = next(evidence.glob("**/manifest.json"), None)
        try:
            records = {} if manifest is None else read_records(load_bundle(manifest.parent))
        except BundleError:
            records = {}
        commit = next((record.source.commit for record in records.values()), None) or OTHER_COMMIT
    return [
        *([f"--commit={commit}"] if commit is not None else []),
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
    gates = declared_gates(tmp_path, "PR-A", "PR-B", "PR-C")
    code, out, _ = gate(
        capsys, *_args(body, git_repo.path / "out", "--commit", git_repo.commit.upper(), "--gate=PR-B", gates)
    )
    assert (code, out) == (0, ["specgate gate: accepted AC-10, AC-11"])


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
    commit = ac_record(bundle.path, "AC-10")["source"]["commit"]
    for name in names:
        copy = tmp_path / f"copy-{names.index(name)}"
        shutil.copytree(bundle.path, copy)
        data = bytearray((copy / name).read_bytes())
        data[len(data) // 2] ^= 0x01
        (copy / name).write_bytes(bytes(data))
        code, out, _ = gate(capsys, *_args(body, copy, commit=commit))
        assert code == 1, name
        assert out and all(line.startswith("AC-10, AC-11: bundle ") for line in out), out
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
    assert code == 1 and "AC-10, AC-11: bundle " in out[0] and "manifest.json: " in out[0]
    entry = manifest["records"]["AC-10"]
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
    expected = (
        "matches no --evidence bundle" if field == "bundle-sha256=" else "does not match records.jsonl#AC-10"
    )
    assert expected in out[0]


def test_other_commit_is_rejected(
    bundle: WrittenBundle, git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = gate(
        capsys, *_args(pr_body(tmp_path, bundle.markdown), bundle.path, "--commit", OTHER_COMMIT)
    )
    assert code == 1
    assert out == [f"AC-10, AC-11: evidence is for commit {git_repo.commit}, not {OTHER_COMMIT}"], (
        "a problem several ACs share is one line naming them"
    )


def test_diagnostic_run_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV, diagnostic=True)
    code, out, _ = gate(capsys, *_args(pr_body(tmp_path, written.markdown), written.path))
    assert code == 1
    assert out == [
        "AC-10, AC-11: not qualifying under specgate.policy/1: diagnostic run: evidence from "
        "--specgate-diagnostic never qualifies"
    ]


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
    code, out, _ = gate(
        capsys,
        f"--commit={git_repo.commit}",
        f"--pr-body={body}",
        f"--evidence={written.path}",
        "--require=AC-10",
    )
    assert code == 1
    assert out == [
        "AC-10: outcome is failed, not passed",
        # One line per reason (not one long joined line).
        "AC-10: not qualifying under specgate.policy/1: failed: below "
        "(test acceptance/test_ac10.py::test_speedup)",
        "AC-10: not qualifying under specgate.policy/1: median_speedup = 1.1 x is below at_least=1.4 "
        "(test acceptance/test_ac10.py::test_speedup)",
    ]


def _waived_bundle(repo: Path, target: str, *, on_helper_too: bool = True) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV)
    waived = AC10 | {"waived_to": target, "reason": "no 16 GB M4 in CI"}
    run.run_test("acceptance/test_ac10.py::test_speedup", waived, outcome="skipped", message="needs Apple M4")
    run.run_test("acceptance/test_ac10.py::test_helper", waived if on_helper_too else AC10)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


def test_expired_waiver_is_rejected_and_a_live_one_accepted(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _waived_bundle(git_repo.path, "PR-B")
    body = pr_body(tmp_path, written.markdown)
    gates = declared_gates(tmp_path, "PR-A", "PR-B", "PR-C")
    code, out, _ = gate(capsys, *_args(body, written.path, "--gate=PR-C", gates))
    assert code == 1
    assert out[0] == "AC-10: waiver to PR-B expired: this is gate PR-C, the AC must now pass on its own"
    assert "AC-10: outcome is skipped, not passed" in out
    assert gate(capsys, *_args(body, written.path, "--gate=PR-B", gates))[0] == 1
    assert gate(capsys, *_args(body, written.path, "--gate=PR-A", gates))[:2] == (
        0,
        ["specgate gate: accepted AC-10, AC-11"],
    )
    code, out, _ = gate(capsys, *_args(body, written.path))
    assert (
        code == 1 and out[0] == "AC-10: waived → PR-B, but no --gate was given to honour the waiver against"
    )


def test_a_waiver_on_one_helper_test_does_not_waive_the_ac(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _waived_bundle(git_repo.path, "PR-C", on_helper_too=False)
    body = pr_body(tmp_path, written.markdown)
    code, out, _ = gate(
        capsys, *_args(body, written.path, "--gate=PR-A", declared_gates(tmp_path, "PR-A", "PR-C"))
    )
    assert code == 1
    assert out[0] == "AC-10: outcome is skipped, not passed"
    assert out[1].startswith(
        "AC-10: not qualifying under specgate.policy/1: waiver does not count: every test of AC-10 must "
        "state the same waiver, not stated by acceptance/test_ac10.py::test_helper"
    )


def test_a_waiver_to_an_undeclared_gate_is_not_honoured(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _waived_bundle(git_repo.path, "PR-ZZZ")
    body = pr_body(tmp_path, written.markdown)
    code, out, _ = gate(
        capsys, *_args(body, written.path, "--gate=PR-A", declared_gates(tmp_path, "PR-A", "PR-B"))
    )
    assert code == 1
    assert out[0] == (
        f"AC-10: waiver does not count: PR-ZZZ is not a declared gate; {tmp_path / 'gates-pyproject.toml'} "
        "declares [tool.specgate] gates = PR-A, PR-B"
    )


def test_numeric_gates_order_numerically(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _waived_bundle(git_repo.path, "PR-10")
    body = pr_body(tmp_path, written.markdown)
    gates = declared_gates(tmp_path, "PR-9", "PR-10", "PR-11")
    assert gate(capsys, *_args(body, written.path, "--gate=PR-9", gates))[0] == 0
    assert gate(capsys, *_args(body, written.path, "--gate=PR-10", gates))[0] == 1
    code, _, err = gate(capsys, *_args(body, written.path, "--gate=PR-C", gates))
    assert code == 2
    assert err == (
        f"specgate gate: error: --gate: PR-C is not a declared gate; {tmp_path / 'gates-pyproject.toml'} "
        "declares [tool.specgate] gates = PR-9, PR-10, PR-11\n"
    )


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
        ("bad-commit", "--commit 'xyz': expected the full 40-hex commit"),
        ("short-commit", "--commit 'abcdef1': expected the full 40-hex commit; a prefix could match another"),
        (
            "no-commit",
            "no commit to check the evidence against: pass --commit=<40-hex sha> (or set $GITHUB_SHA; "
            "outside GitHub Actions the gate takes HEAD of a git checkout in the current directory)",
        ),
        ("undeclared-gate", "absent.toml: the trusted config not found"),
        ("old-manifest", "not a specgate manifest (specgate.manifest/v3 or specgate.manifest/v2 or"),
    ],
)
def test_bad_input_exits_2_naming_file_and_problem(
    mutate: str,
    expected: str,
    bundle: WrittenBundle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
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
    elif mutate == "short-commit":
        extra = ["--commit", "abcdef1"]
    elif mutate == "undeclared-gate":
        extra = ["--gate=PR-B", f"--trusted-config={tmp_path / 'absent.toml'}"]
    elif mutate == "old-manifest":
        manifest = json.loads((bundle.path / "manifest.json").read_text())
        (bundle.path / "manifest.json").write_text(json.dumps({**manifest, "schema": "specgate.manifest/v0"}))
    if mutate == "no-commit":
        # Inside Actions HEAD may be GitHub's merge commit: the gate never guesses it there.
        monkeypatch.delenv("GITHUB_SHA", raising=False)
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        code, out, err = gate(capsys, f"--pr-body={body}", f"--evidence={evidence}")
    else:
        code, out, err = gate(capsys, *_args(body, evidence, *extra))
    assert (code, out) == (2, [])
    assert err.startswith("specgate gate: error: ") and expected in err and err.count("\n") == 1
    if mutate in ("missing-body", "malformed-digest", "no-digest"):
        assert str(body) in err


def _honest_real_engine_bundle(repo: Path, environ: dict[str, str] | None = None) -> WrittenBundle:
    """A run whose every fact is the honest one: the probe's host, a real backend's engine fact
    recorded through ``note_engine`` (the plugin's own path), a matched hardware marker."""
    run = SyntheticRun(repo, environ if environ is not None else TEST_ENV, host_facts=M4_HOST_FACTS)
    nodeid = "acceptance/test_ac10.py::test_speedup"
    recorder = run.recorder(nodeid)
    recorder.note_engine(REAL_ENGINE)
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test(nodeid, AC10, recorder=recorder, hardware=M4_MATCHED, mode="required")
    return run.finish()


def test_an_honest_run_on_a_real_engine_is_accepted_with_json_and_step_summary(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _honest_real_engine_bundle(git_repo.path)
    assert "**Verdict: PASSED · QUALIFYING**" in written.markdown
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_SHA", git_repo.commit)
    body = pr_body(tmp_path, written.markdown)
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    code = run_gate(parser.parse_args([f"--pr-body={body}", f"--evidence={written.path}", "--json"]))
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert result == {
        "schema": "specgate.gate-result/2",
        "policy": "specgate.policy/1",
        "commit": git_repo.commit,
        "commit_source": "$GITHUB_SHA",
        "gate": None,
        "trusted_config": "the defaults (no --trusted-config)",
        "base_commit": None,
        "signatures": "not checked: no trust policy in the defaults (no --trusted-config)",
        "accepted": True,
        "problems": [],
        "acs": [
            {
                "ac": "AC-10",
                "accepted": True,
                "waived": False,
                "outcome": "passed",
                "qualifying": True,
                "reasons": [],
                "problems": [],
                "harness_changed": None,
                "sut_changed": [],
            }
        ],
    }
    table = summary.read_text()
    assert f"Policy specgate.policy/1; commit {git_repo.commit} (from $GITHUB_SHA); gate none" in table
    assert "| AC-10 | PASSED · QUALIFYING | accepted | — |" in table


def test_a_bundle_from_another_commit_is_rejected_against_github_sha(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _honest_real_engine_bundle(git_repo.path)
    monkeypatch.setenv("GITHUB_SHA", OTHER_COMMIT)
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    body = pr_body(tmp_path, written.markdown)
    code = run_gate(parser.parse_args([f"--pr-body={body}", f"--evidence={written.path}"]))
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        f"specgate gate: policy specgate.policy/1; commit {OTHER_COMMIT} (from $GITHUB_SHA)",
        f"AC-10: evidence is for commit {git_repo.commit}, not {OTHER_COMMIT}",
    ]


def test_a_record_edited_to_qualify_and_resealed_is_rejected_by_the_recomputation(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "mock", "model": "specgate-mock-target"})
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    written = run.finish()

    def claim_qualifying(record: dict[str, Any]) -> None:
        record.update(qualifying=True, not_qualifying_reasons=[])

    markdown = reseal_bundle(written.path, {"AC-10": claim_qualifying})
    assert verify_bundle(load_bundle(written.path)) == [], "the forgery is self-consistent"
    only_ac10 = [f"--evidence={written.path}", "--require=AC-10", f"--commit={git_repo.commit}"]
    code, out, _ = gate(capsys, f"--pr-body={pr_body(tmp_path, markdown)}", *only_ac10)
    mock = (
        "ran on the built-in mock engine (specgate-mock-target), a simulation: only a real engine's evidence "
        "qualifies (test acceptance/test_ac10.py::test_speedup)"
    )
    assert (code, out) == (
        1,
        [
            "AC-10: records.jsonl#AC-10 claims 'PASSED · QUALIFYING' but specgate.policy/1 recomputes "
            "'PASSED · NOT QUALIFYING' from its facts",
            f"AC-10: not qualifying under specgate.policy/1: {mock}",
        ],
    )
    forged_verdict = markdown.replace("PASSED · NOT QUALIFYING", "PASSED · QUALIFYING")
    code, out, _ = gate(capsys, f"--pr-body={pr_body(tmp_path, forged_verdict)}", *only_ac10)
    # The PR body opens with four lines of prose before the pasted evidence.md.
    line = 4 + forged_verdict.splitlines().index("**Verdict: PASSED · QUALIFYING**") + 1
    assert code == 1 and out[0].startswith(
        f"AC-10: the block does not show what was judged: PR body line {line}: expected "
        "'**Verdict: PASSED · NOT QUALIFYING**', found '**Verdict: PASSED · QUALIFYING**'"
    )


def test_an_evidence_md_edited_and_resealed_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV, diagnostic=True)

    def claim_qualifying(record: dict[str, Any]) -> None:
        record.update(qualifying=True, not_qualifying_reasons=[], mode="default")

    markdown = reseal_bundle(written.path, {"AC-10": claim_qualifying}, rerender=False)
    forged = markdown.replace("PASSED · NOT QUALIFYING", "PASSED · QUALIFYING")
    (written.path / "evidence.md").write_text(forged)
    reseal_bundle(written.path, {}, rerender=False)
    code, out, _ = gate(capsys, *_args(pr_body(tmp_path, forged), written.path))
    problem = "evidence.md is not what its records render (edited after writing)"
    assert (code, out) == (1, [f"AC-10, AC-11: bundle {written.path.name}: {problem}"])


def _event(tmp_path: Path, payload: object) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return path


def test_on_pull_request_events_the_commit_is_the_heads_not_the_merge_commit(tmp_path: Path) -> None:
    head = "b" * 40
    environ = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_SHA": OTHER_COMMIT,
        "GITHUB_EVENT_PATH": str(_event(tmp_path, {"pull_request": {"head": {"sha": head}}})),
    }
    choice = resolve_commit(None, environ)
    assert choice == CommitChoice(
        head,
        "pull_request.head.sha in $GITHUB_EVENT_PATH (pull_request event; $GITHUB_SHA is the merge commit)",
    )
    assert resolve_commit(OTHER_COMMIT, environ).source == "--commit"
    push = resolve_commit(None, {"GITHUB_EVENT_NAME": "push", "GITHUB_SHA": OTHER_COMMIT})
    assert push == CommitChoice(OTHER_COMMIT, "$GITHUB_SHA, the pushed commit")


@pytest.mark.parametrize("payload", [{"pull_request": {"head": {}}}, {"action": "opened"}, "not an object"])
def test_a_pull_request_event_without_a_head_sha_is_one_line_never_the_merge_commit(
    tmp_path: Path, payload: object
) -> None:
    environ = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_SHA": OTHER_COMMIT,
               "GITHUB_EVENT_PATH": str(_event(tmp_path, payload))}
    with pytest.raises(GateInputError) as raised:
        resolve_commit(None, environ)
    assert str(raised.value) == (
        f"{tmp_path / 'event.json'}: no pull_request.head.sha in the pull_request event payload: "
        "pass --commit=<the PR head sha>"
    )


def test_not_qualifying_reasons_print_one_per_line_grouped_as_the_block_groups_them() -> None:
    from pytest_specgate.evidence._gate import AcJudgement, not_qualifying_lines
    from pytest_specgate.evidence._policy import PolicyVerdict

    mock = "ran on the built-in mock engine (m), a simulation: only a real engine's evidence qualifies"
    reasons = ("diagnostic run: evidence from --specgate-diagnostic never qualifies",
               *(f"t.py::test_{n}: {mock}" for n in "abc"), "t.py::test_a: failed: below")
    grouped = (("diagnostic run: evidence from --specgate-diagnostic never qualifies", ()),
               (mock, ("t.py::test_a", "t.py::test_b", "t.py::test_c")),
               ("failed: below", ("t.py::test_a",)))
    verdict = PolicyVerdict(qualifying=False, reasons=reasons, outcome="failed", mode="diagnostic",
                            waiver=None)
    judgement = AcJudgement("AC-10", verdict, ("x",), not_qualifying=grouped)
    prefix = "not qualifying under specgate.policy/1: "
    assert not_qualifying_lines(judgement) == [
        f"{prefix}diagnostic run: evidence from --specgate-diagnostic never qualifies",
        f"{prefix}{mock} (3 tests: t.py::test_a, t.py::test_b, t.py::test_c)",
        f"{prefix}failed: below (test t.py::test_a)",
    ]
    assert judgement.not_qualifying_problem == f"not qualifying under specgate.policy/1: {'; '.join(reasons)}"


def test_a_problem_several_acs_share_is_one_line_naming_them_in_the_order_met() -> None:
    """A line is worded from records alone (and may skip the output's line pass) only where every
    AC it names has the problem so: one AC's problem worded from elsewhere keeps the line's pass."""
    from pytest_specgate.evidence.cli_commands import lines_naming_acs

    problems = [("AC-10", "diagnostic run", True), ("AC-10", "outcome is failed, not passed", True),
                ("AC-11", "diagnostic run", True), ("AC-12", "diagnostic run", False),
                ("AC-12", "outcome is failed, not passed", True),
                ("AC-11", "not qualifying under specgate.policy/1: t.py::test_a: failed: below", True)]
    assert lines_naming_acs(problems) == [
        ("AC-10, AC-11, AC-12: diagnostic run", False),
        ("AC-10, AC-12: outcome is failed, not passed", True),
        ("AC-11: not qualifying under specgate.policy/1: t.py::test_a: failed: below", True),
    ]


@pytest.mark.parametrize("line_break", ["\n", "\r", "\u2028", "\x85"], ids=["LF", "CR", "LS", "NEL"])
def test_a_forged_node_id_cannot_print_a_line_of_its_own_in_the_gates_output_or_step_summary(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    line_break: str,
) -> None:
    """The gate prints node ids a record's author wrote; a line break in one must not start a
    line that reads as the gate accepting, as a runner's command or as a row of the summary."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "mock", "model": "specgate-mock-target"})
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    written = run.finish()
    injected = f"{line_break}specgate gate: accepted AC-10{line_break}::notice::looks fine"

    def forge_node_id(record: dict[str, Any]) -> None:
        record["tests"][0]["nodeid"] += injected

    markdown = reseal_bundle(written.path, {"AC-10": forge_node_id})
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = gate(capsys, f"--pr-body={pr_body(tmp_path, markdown)}", f"--evidence={written.path}",
                        "--require=AC-10", f"--commit={git_repo.commit}")
    printed = "\n".join(out)
    assert code == 1 and repr(line_break)[1:-1] in printed
    assert all(line.startswith("AC-10") for line in printed.splitlines()), printed
    table = summary.read_text().splitlines()[summary.read_text().splitlines().index("|---|---|---|---|") + 1:]
    assert [row.startswith("| AC-10 |") for row in table if row] == [True], table


@given(st.lists(st.text(alphabet=st.sampled_from("a- \t\u00a0\u2003\u3000\x1c\x0b\x85|"), max_size=6)))
def test_lines_equal_as_pasted_are_equal_once_whitespace_is_collapsed(lines: list[str]) -> None:
    """``block_difference`` accepts a block whose non-blank lines equal the rendering's as they
    are, without normalising them: a line is blank to ``strip()`` exactly when ``split()`` finds
    no word in it (every Unicode space, ``\\x1c`` and ``\\x85`` too), so both sides drop the same."""
    from pytest_specgate.evidence._gate import _normalised

    as_pasted = [line for line in lines if line.strip()]
    assert [line for line in map(_normalised, lines) if line] == list(map(_normalised, as_pasted))
