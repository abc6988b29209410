"""End to end through the real plugin: ``pytest --specgate-evidence DIR`` writes the bundle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import ac_record, git

from pytest_specgate.evidence import (
    find_bundles,
    load_bundle,
    read_receipt,
    read_records,
    schema_problems,
    verify_bundle,
)

SPECS = """
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-028", title="passes")
def test_pass(evidence):
    evidence.measure("speedup", 1.5, "x", at_least=1.4)
    evidence.attach("server.log", "ready on 127.0.0.1\\n")
    evidence.note("engine", "mock")

@pytest.mark.ac("AC-2", spec="SPEC-028")
def test_fail(evidence):
    evidence.measure("speedup", 1.1, "x", at_least=1.4)

@pytest.mark.ac("AC-3")
def test_skip():
    pytest.skip("needs Apple M4")

@pytest.mark.ac("AC-4", waived_to="PR-C", reason="no M1 Air yet")
def test_waived():
    pass

@pytest.mark.ac("AC-1")
@pytest.mark.parametrize("n", [1, 2])
def test_pass_too(n):
    assert n

def test_not_evidence():
    pass
"""
RUNS_UNTIL_KILLED = """
import pathlib, time
import pytest

@pytest.mark.ac("AC-1")
def test_quick():
    pass

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_long_canary():
    pathlib.Path("started").write_text("yes")
    for _ in range(600):
        time.sleep(0.1)
"""
GATES = '[tool.specgate]\ngates = ["PR-A", "PR-B", "PR-C"]\n'
VOLATILE = ("started_at", "finished_at", "updated_at", "duration_s", "run_id")
MASKED_PAIRS = {("run", "id"), ("digest", "sha256")}


def _commit_all(pytester: pytest.Pytester) -> str:
    pytester.makepyprojecttoml(GATES)
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    return git(pytester.path, "rev-parse", "HEAD")


def _only_bundle(directory: Path) -> Path:
    bundles = find_bundles(directory)
    assert len(bundles) == 1, bundles
    assert verify_bundle(bundles[0]) == []
    return bundles[0].path


def _record(bundle: Path, ac_id: str) -> dict[str, Any]:
    record: dict[str, Any] = ac_record(bundle, ac_id)
    assert schema_problems(record) == []
    return record


def beyond_host(record: dict[str, Any]) -> list[str]:
    """Reasons other than the host's provenance, which these runs leave to the plugin's probe."""
    return [reason for reason in record["not_qualifying_reasons"] if not reason.startswith("host ")]


def test_bundle_for_passing_failing_skipped_and_waived_acs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_specs=SPECS)
    commit = _commit_all(pytester)
    result = pytester.runpytest("--specgate-evidence", "out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*specgate evidence: *out* (NOT QUALIFIED, 4 AC)*"])
    bundle = _only_bundle(pytester.path / "out")
    assert sorted(p.name for p in bundle.glob("*.json*")) == [
        "manifest.json",
        "receipt.json",
        "records.jsonl",
        "run.json",
        "statement.intoto.json",
    ]
    passing = _record(bundle, "AC-1")
    assert (passing["outcome"], beyond_host(passing), passing["source"]["commit"]) == ("passed", [], commit)
    assert [t["nodeid"] for t in passing["tests"]] == [
        "test_specs.py::test_pass",
        "test_specs.py::test_pass_too[1]",
        "test_specs.py::test_pass_too[2]",
    ]
    assert passing["measurements"][0]["passed"] is True and passing["attachments"][0]["name"] == "server.log"
    assert (bundle / passing["attachments"][0]["path"]).read_text() == "ready on 127.0.0.1\n"
    failing = _record(bundle, "AC-2")
    assert failing["outcome"] == "failed" and failing["measurements"][0]["passed"] is False
    assert "speedup = 1.1 x is below at_least=1.4" in failing["tests"][0]["message"]
    skipped = _record(bundle, "AC-3")
    assert skipped["outcome"] == "skipped" and skipped["tests"][0]["message"] == "needs Apple M4"
    assert "test_specs.py::test_skip: skipped: needs Apple M4" in skipped["not_qualifying_reasons"]
    waived = _record(bundle, "AC-4")
    assert waived["waiver"] == {"to": "PR-C", "reason": "no M1 Air yet"} and beyond_host(waived) == []
    markdown = (bundle / "evidence.md").read_text()
    assert [line for line in markdown.splitlines() if line.startswith("## ")] == [
        "## specgate summary",
        "## AC-1 evidence",
        "## AC-2 evidence",
        "## AC-3 evidence",
        "## AC-4 evidence",
    ]
    assert "- Waiver: waived → PR-C, because no M1 Air yet" in markdown


def test_diagnostic_run_never_qualifies(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_specs=SPECS)
    _commit_all(pytester)
    pytester.runpytest("--specgate-evidence", "out", "--specgate-diagnostic", "-p", "no:cacheprovider")
    bundle = _only_bundle(pytester.path / "out")
    for ac_id in ("AC-1", "AC-2", "AC-3", "AC-4"):
        record = _record(bundle, ac_id)
        assert record["qualifying"] is False and record["mode"] == "diagnostic"
        assert record["not_qualifying_reasons"][0].startswith("diagnostic run")


def test_hardware_mismatch_is_recorded_and_disqualifies(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_hw="""
        import pytest

        @pytest.mark.ac("AC-10")
        @pytest.mark.hardware(apple="M4", min_memory_gb=16)
        def test_canary():
            pass
        """
    )
    _commit_all(pytester)
    result = pytester.runpytest("--specgate-evidence", "out", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    record = _record(_only_bundle(pytester.path / "out"), "AC-10")
    hardware = record["tests"][0]["hardware"]
    assert hardware["matched"] is False and hardware["reasons"]
    assert any("hardware requirement not met" in reason for reason in record["not_qualifying_reasons"])
    assert record["host"]["summary"] == hardware["host_summary"]


def test_uncommitted_changes_disqualify_unless_allowed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_specs=SPECS)
    _commit_all(pytester)
    (pytester.path / "NOTES.md").write_text("not imported by any test\n")
    pytester.runpytest("--specgate-evidence", "dirty", "-p", "no:cacheprovider")
    dirty = _record(_only_bundle(pytester.path / "dirty"), "AC-1")
    assert beyond_host(dirty) == ["working tree has uncommitted changes (--specgate-allow-dirty not given)"]
    assert dirty["source"]["changed_files"] == []
    pytester.runpytest("--specgate-evidence", "allowed", "--specgate-allow-dirty", "-p", "no:cacheprovider")
    assert beyond_host(_record(_only_bundle(pytester.path / "allowed"), "AC-1")) == []


def test_an_imported_uncommitted_file_disqualifies_with_allow_dirty(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_specs=SPECS)
    _commit_all(pytester)
    pytester.makepyfile(test_new="def test_new():\n    pass\n")
    pytester.runpytest("--specgate-evidence", "allowed", "--specgate-allow-dirty", "-p", "no:cacheprovider")
    record = _record(_only_bundle(pytester.path / "allowed"), "AC-1")
    assert "test_new.py" in record["source"]["changed_files"]
    assert beyond_host(record)[0].startswith("files the run imported are not those of commit ")


def test_bad_ac_marker_is_a_usage_error_naming_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad='import pytest\n\n@pytest.mark.ac("AC10")\ndef test_x():\n    pass\n')
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_bad.py::test_x: @pytest.mark.ac: AC id 'AC10' must look like*"])


def _normalized(value: Any, parent: str = "") -> Any:
    """Timestamps, durations and the run id masked (and the statement's digests of the AC files
    that hold them); everything else must match exactly."""
    if isinstance(value, dict):
        return {
            key: "<volatile>" if key in VOLATILE or (parent, key) in MASKED_PAIRS else _normalized(item, key)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_normalized(item, parent) for item in value]
    return value


def _content(bundle: Path) -> dict[str, Any]:
    """Every file of a bundle with timestamps, durations and run ids masked, by path."""
    content: dict[str, Any] = {}
    for path in sorted(bundle.rglob("*")):
        relative = path.relative_to(bundle).as_posix()
        if relative in ("manifest.json", "evidence.md", "run.json") or not path.is_file():
            continue  # the run's facts are compared joined into each record
        if relative == "records.jsonl":
            records = read_records(load_bundle(bundle))
            content[relative] = {ac: _normalized(dict(record.document)) for ac, record in records.items()}
            continue
        content[relative] = (
            _normalized(json.loads(path.read_text()))
            if path.suffix == ".json" and not relative.startswith("attachments/")
            else path.read_bytes()
        )
    return content


def test_xdist_bundle_has_the_same_content_as_a_serial_one(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_specs=SPECS)
    _commit_all(pytester)
    (pytester.path / ".git" / "info" / "exclude").write_text("serial/\nparallel/\n")
    serial = pytester.runpytest_subprocess("--specgate-evidence", "serial", "-p", "no:cacheprovider")
    parallel = pytester.runpytest_subprocess(
        "--specgate-evidence", "parallel", "-n", "2", "-p", "no:cacheprovider"
    )
    serial.assert_outcomes(passed=5, failed=1, skipped=1)
    parallel.assert_outcomes(passed=5, failed=1, skipped=1)
    serial_content = _content(_only_bundle(pytester.path / "serial"))
    parallel_content = _content(_only_bundle(pytester.path / "parallel"))
    assert sorted(serial_content) == sorted(parallel_content)
    assert len(serial_content) == 4  # the records, receipt, statement, one attachment
    assert serial_content == parallel_content


def _spawn(pytester: pytest.Pytester) -> subprocess.Popen[bytes]:
    pytester.makepyfile(test_long=RUNS_UNTIL_KILLED)
    _commit_all(pytester)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--specgate-evidence",
            "out",
            "-p",
            "no:cacheprovider",
            "test_long.py",
        ],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert process.poll() is None, process.communicate()[0].decode()
        assert time.monotonic() < deadline, "the spec never started"
        time.sleep(0.05)


def _receipt(evidence: Path) -> dict[str, Any]:
    """The receipt as readers see it: a killed run's journal folded in."""
    receipts = list(evidence.glob("*/receipt.json"))
    assert len(receipts) == 1
    return read_receipt(receipts[0].parent)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_run_killed_mid_spec_leaves_a_not_qualified_receipt(
    pytester: pytest.Pytester, sig: signal.Signals
) -> None:
    process = _spawn(pytester)
    try:
        _wait_for(pytester.path / "started", process)
        os.kill(process.pid, sig)
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    receipt = _receipt(pytester.path / "out")
    assert receipt["verdict"] == "NOT QUALIFIED"
    assert receipt["running"] == [{"nodeid": "test_long.py::test_long_canary", "ac": "AC-10"}]
    assert receipt["status"] == ("interrupted" if sig == signal.SIGINT else "running")
    # SIGKILL leaves the journal the receipt was folded from; an ending run removes it.
    journals = list((pytester.path / "out").glob("*/journal.jsonl"))
    assert len(journals) == (0 if sig == signal.SIGINT else 1)
    if sig == signal.SIGINT:
        record = _record(_only_bundle(pytester.path / "out"), "AC-10")
        assert record["outcome"] == "incomplete" and record["qualifying"] is False


def test_planted_hf_token_never_reaches_disk(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "hf_e2eTokenThatMustNeverLeak0123456789ab"
    monkeypatch.setenv("HF_TOKEN", token)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(
        test_leak="""
        import os
        import pytest

        @pytest.mark.ac("AC-1", title="leaky " + os.environ["HF_TOKEN"])
        def test_leak(evidence):
            token = os.environ["HF_TOKEN"]
            evidence.note("token", token)
            evidence.attach("log", "Authorization: Bearer " + token)
            evidence.attach("blob", b"\\x00" + token.encode() + b"\\xff")
            assert token == "", token
        """
    )
    _commit_all(pytester)
    result = pytester.runpytest("--specgate-evidence", "out", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)  # the token went through note, attach and the failure message
    files = [path for path in (pytester.path / "out").rglob("*") if path.is_file()] + [summary]
    assert len(files) >= 7
    assert [str(path) for path in files if token.encode() in path.read_bytes()] == []


def test_a_secret_planted_wherever_text_enters_is_redacted_in_every_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "hf_EveryEntryTokenMustNeverLeak0123456789"
    monkeypatch.setenv("HF_TOKEN", token)
    pytester.makepyfile(
        test_entries="""
        import os
        import pytest

        TOKEN = os.environ["HF_TOKEN"]

        @pytest.mark.ac("AC-1")
        @pytest.mark.parametrize("case", ["x"], ids=["id-" + TOKEN])
        def test_entries(evidence, case):
            evidence.measure("latency-" + TOKEN, 1.0, "ms", at_most=2.0)
            evidence.note("key-" + TOKEN, "value-" + TOKEN)
            evidence.attach("name-" + TOKEN + ".log", "ok\\n")
            assert False, "message-" + TOKEN
        """
    )
    _commit_all(pytester)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    bundle = _only_bundle(pytester.path / "out")  # verified against its manifest
    files = [path for path in (pytester.path / "out").rglob("*") if path.is_file()]
    assert len(files) >= 6
    assert [str(path) for path in files if token.encode() in path.read_bytes()] == []
    record = json.dumps(_record(bundle, "AC-1"))
    for entry in ("[id-<SECRET>]", "latency-<SECRET>", "key-<SECRET>", "value-<SECRET>", "message-<SECRET>"):
        assert entry in record, entry
    assert '"name": "name-_SECRET_.log"' in record  # attachment names also become file names
