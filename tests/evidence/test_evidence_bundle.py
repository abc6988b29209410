from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
from evidence_testkit import (
    AC10,
    AC11,
    PLANTED_HF_TOKEN,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    ac_record,
    git,
    qualifying_bundle,
)

from pytest_specgate.evidence import (
    MANIFEST_NAME,
    NOT_QUALIFIED,
    QUALIFIED,
    RECEIPT_NAME,
    load_bundle,
    parse_pr_body,
    read_receipt,
    read_records,
    verify_bundle,
)
from pytest_specgate.evidence._jsonio import sha256_hex


def _json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_bundle_layout_manifest_and_schema(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    names = sorted(p.relative_to(written.path).as_posix() for p in written.path.rglob("*") if p.is_file())
    assert [n for n in names if not n.startswith("attachments/")] == [
        "evidence.md",
        "manifest.json",
        "receipt.json",
        "records.jsonl",
        "run.json",
        "statement.intoto.json",
    ]
    assert len([n for n in names if n.startswith("attachments/")]) == 2
    manifest = _json(written.path / MANIFEST_NAME)
    for name in names:
        if name != MANIFEST_NAME:
            data = (written.path / name).read_bytes()
            assert manifest["files"][name] == {"sha256": sha256_hex(data), "size": len(data)}
    assert set(manifest["files"]) == set(names) - {MANIFEST_NAME}
    lines = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    assert manifest["records"] == {
        "AC-10": {"sha256": sha256_hex(lines[0]), "size": len(lines[0])},
        "AC-11": {"sha256": sha256_hex(lines[1]), "size": len(lines[1])},
    }
    assert verify_bundle(load_bundle(written.path)) == []
    assert load_bundle(written.path).digest == written.digest == manifest["bundle_sha256"]
    assert not (git_repo.path / "out" / ".staging").exists()


def test_every_ac_file_validates_against_the_packaged_schema(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    schema = json.loads(resources.files("pytest_specgate").joinpath("schemas/evidence-v3.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for ac_id in ("AC-10", "AC-11"):
        jsonschema.validate(
            ac_record(written.path, ac_id), schema, cls=jsonschema.Draft202012Validator
        )


def test_ac_record_carries_the_issue_fields(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    record = ac_record(written.path, "AC-10")
    assert record["ac"] == {"id": "AC-10", "spec": "SPEC-028", "title": "16 GB M4 performance canary"}
    assert record["outcome"] == "passed" and record["qualifying"] is True
    assert [t["nodeid"] for t in record["tests"]] == [
        "acceptance/test_ac10.py::test_greedy_identity",
        "acceptance/test_ac10.py::test_speedup",
    ]
    assert all(t["outcome"] == "passed" and t["duration_s"] == 0.75 for t in record["tests"])
    assert record["measurements"][0] | {"nodeid": None} == {
        "nodeid": None,
        "name": "median_speedup",
        "value": 1.52,
        "unit": "x",
        "at_least": 1.4,
        "at_most": None,
        "passed": True,
        "decide": "point",
        "verdict": "passed",
    }
    assert {a["name"] for a in record["attachments"]} == {"server.log", "trace.bin"}
    assert record["source"] == {
        "commit": git_repo.commit,
        "dirty": False,
        "allow_dirty": False,
        "problem": None,
        "changed_files": [],
        "imported_files": [],
    }
    assert record["policy"] == "specgate.policy/1" and record["schema"] == "specgate.evidence/v3"
    assert record["completeness"]["complete"] is True
    assert set(record["versions"]) == {"python", "pytest", "specgate"}
    assert record["host"]["facts"] == {"arch": "x86_64", "memory_bytes": 24 * 1024**3, "os": "linux"}
    assert record["run"]["id"] == written.path.name and record["run"]["started_at"].endswith("Z")
    assert record["tests"][1]["notes"] == {"engine": {"name": "mock", "version": "0.1.0"}}


def test_markdown_blocks_bind_each_ac_file_and_the_bundle(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    blocks = parse_pr_body(written.markdown, "evidence.md")
    lines = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    assert [(b.ac_id, b.ac_sha256, b.bundle_sha256) for b in blocks] == [
        ("AC-10", sha256_hex(lines[0]), written.digest),
        ("AC-11", sha256_hex(lines[1]), written.digest),
    ]
    assert "**Verdict: PASSED · QUALIFYING**" in written.markdown
    assert "| median_speedup | 1.52 x | ≥ 1.4 | pass |" in written.markdown
    assert f"- Run 1 (`{written.path.name}`, 2 ACs): host linux x86_64, 24 GB, no GPU" in written.markdown
    assert written.markdown.count("- Host: that of run 1 (`") == 2
    assert (written.path / "evidence.md").read_text() == written.markdown


def test_final_receipt_and_statement(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    receipt = _json(written.path / RECEIPT_NAME)
    assert (receipt["verdict"], receipt["status"], receipt["running"], receipt["tests_finished"]) == (
        QUALIFIED,
        "finished",
        [],
        4,
    )
    statement = _json(written.path / "statement.intoto.json")
    assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert statement["subject"] == [{"name": "source", "digest": {"gitCommit": git_repo.commit}}]
    assert statement["predicate"]["result"] == "PASSED"
    assert statement["predicate"]["passedTests"] == ["AC-10", "AC-11"]


def test_interrupted_run_leaves_a_not_qualified_receipt_naming_the_running_test(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    run.start("acceptance/test_ac10.py::test_speedup", AC10)
    receipt_path = run.collector.run_dir / RECEIPT_NAME
    during = read_receipt(run.collector.run_dir)
    assert during["verdict"] == NOT_QUALIFIED and during["status"] == "running"
    assert during["running"] == [{"nodeid": "acceptance/test_ac10.py::test_speedup", "ac": "AC-10"}]
    written = run.finish(exitstatus=2)
    after = _json(receipt_path)
    assert after["verdict"] == NOT_QUALIFIED and after["status"] == "interrupted"
    assert after["running"] == during["running"]
    record = ac_record(written.path, "AC-10")
    assert record["outcome"] == "incomplete" and record["qualifying"] is False
    assert "the run was interrupted before it finished" in record["not_qualifying_reasons"]
    assert ac_record(written.path, "AC-11")["qualifying"] is False


def test_receipt_exists_from_the_first_ac_test_on(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    assert not run.collector.run_dir.exists()
    run.collector.pytest_runtest_logstart(nodeid="tests/test_plain.py::test_helper")
    assert not (run.collector.run_dir / RECEIPT_NAME).exists(), "a test without an AC writes no receipt"
    run.start("acceptance/test_ac10.py::test_speedup", AC10)
    running = _json(run.collector.run_dir / RECEIPT_NAME)["running"]
    assert {"nodeid": "acceptance/test_ac10.py::test_speedup", "ac": "AC-10"} in running
    run.start("acceptance/test_ac11.py::test_small_air", AC11)
    assert _json(run.collector.run_dir / RECEIPT_NAME)["running"] == running, "written once, then journaled"
    assert read_receipt(run.collector.run_dir)["running"] == [
        {"nodeid": "acceptance/test_ac10.py::test_speedup", "ac": "AC-10"},
        {"nodeid": "acceptance/test_ac11.py::test_small_air", "ac": "AC-11"},
    ]


def test_waiver_failure_and_skip_reach_record_and_markdown(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    waived = AC11 | {"waived_to": "PR-C", "reason": "no M1 Air in the lab yet"}
    run.run_test(
        "acceptance/test_ac11.py::test_small_air", waived, outcome="skipped", message="needs Apple M1"
    )
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.1, "x", at_least=1.4)
    run.run_test(
        "acceptance/test_ac10.py::test_speedup",
        AC10,
        outcome="failed",
        message="Failed: median_speedup = 1.1 x is below at_least=1.4",
        recorder=recorder,
    )
    written = run.finish()
    ac10, ac11 = ac_record(written.path, "AC-10"), ac_record(written.path, "AC-11")
    assert ac10["outcome"] == "failed" and ac10["measurements"][0]["passed"] is False
    assert ac11["outcome"] == "skipped" and ac11["waiver"] == {
        "to": "PR-C",
        "reason": "no M1 Air in the lab yet",
    }
    assert ac11["tests"][0]["message"] == "needs Apple M1"
    assert "- Waiver: waived → PR-C, because no M1 Air in the lab yet" in written.markdown
    assert "| median_speedup | 1.1 x | ≥ 1.4 | FAIL |" in written.markdown
    assert "**Verdict: FAILED · NOT QUALIFYING**" in written.markdown
    assert _json(written.path / RECEIPT_NAME)["verdict"] == NOT_QUALIFIED


def test_dirty_tree_and_missing_git_disqualify(git_repo: GitRepo, tmp_path: Path) -> None:
    (git_repo.path / "spec.py").write_text("SPEC = 29\n")
    dirty = qualifying_bundle(git_repo.path, TEST_ENV)
    assert (
        "working tree has uncommitted changes (--specgate-allow-dirty not given)"
        in ac_record(dirty.path, "AC-10")["not_qualifying_reasons"]
    )
    allowed = qualifying_bundle(git_repo.path, TEST_ENV, allow_dirty=True)
    assert ac_record(allowed.path, "AC-10")["qualifying"] is True
    plain = tmp_path / "plain"
    plain.mkdir()
    no_git = qualifying_bundle(plain, TEST_ENV)
    reasons = ac_record(no_git.path, "AC-10")["not_qualifying_reasons"]
    assert reasons[0].startswith("source commit unknown: no git commit for")
    assert not (no_git.path / "statement.intoto.json").exists()


def test_evidence_dir_inside_the_repo_does_not_make_it_dirty(git_repo: GitRepo) -> None:
    (git_repo.path / ".gitignore").write_text("__pycache__/\n")
    git(git_repo.path, "commit", "-qam", "stop ignoring out/")
    qualifying_bundle(git_repo.path, TEST_ENV)
    second = qualifying_bundle(git_repo.path, TEST_ENV)
    assert ac_record(second.path, "AC-10")["source"]["dirty"] is False


def test_step_summary_gets_the_same_markdown(git_repo: GitRepo, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    written = qualifying_bundle(git_repo.path, {**TEST_ENV, "GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text() == "# earlier step\n" + written.markdown


def test_planted_hf_token_never_reaches_disk(git_repo: GitRepo, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    run = SyntheticRun(
        git_repo.path,
        {**TEST_ENV, "GITHUB_STEP_SUMMARY": str(summary)},
        host_facts={"token": PLANTED_HF_TOKEN, PLANTED_HF_TOKEN: "as a key"},
    )
    nodeid = "acceptance/test_ac10.py::test_speedup"
    recorder = run.recorder(nodeid)
    recorder.note("env", {"HF_TOKEN": PLANTED_HF_TOKEN, "nested": [{"k": f"Bearer {PLANTED_HF_TOKEN}"}]})
    recorder.attach(f"log-{PLANTED_HF_TOKEN}", f"token={PLANTED_HF_TOKEN}\n")
    recorder.attach("blob.bin", b"\x00\xff" + PLANTED_HF_TOKEN.encode() + b"\xfe")
    recorder.measure(f"m {PLANTED_HF_TOKEN}", 1.0, unit=PLANTED_HF_TOKEN)
    title = AC10 | {"title": f"title {PLANTED_HF_TOKEN}"}
    run.run_test(
        nodeid, title, outcome="failed", message=f"AssertionError: {PLANTED_HF_TOKEN}", recorder=recorder
    )
    run.run_test("acceptance/test_ac11.py::test_x", AC11, outcome="skipped", message=PLANTED_HF_TOKEN)
    run.start(f"acceptance/test_ac11.py::test_y[{PLANTED_HF_TOKEN}]", AC11)
    run.finish(exitstatus=2)
    files = [p for p in (git_repo.path / "out").rglob("*") if p.is_file()] + [summary]
    assert len(files) >= 8
    leaks = [str(p) for p in files if PLANTED_HF_TOKEN.encode() in p.read_bytes()]
    assert leaks == []
    assert all(b"hf_PlantedToken" not in p.read_bytes() for p in files)


def test_read_records_returns_what_was_written(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    records = read_records(load_bundle(written.path))
    assert sorted(records) == ["AC-10", "AC-11"]
    assert records["AC-11"].document == ac_record(written.path, "AC-11")
    assert records["AC-11"].ac.title == "8 GB M1 small-air canary" and records["AC-11"].qualifying
