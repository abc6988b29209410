from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import CLEAN_RUN_PROVENANCE, PROBED_HOST

from pytest_specgate.contracts.census import Census
from pytest_specgate.evidence import LocalIdentity, build_redactor, schema_problems
from pytest_specgate.evidence._nodeids import NodeIdRedactor
from pytest_specgate.evidence._policy import ac_outcome
from pytest_specgate.evidence._records import (
    ExecutedOutcome,
    ExecutedTest,
    PhaseResult,
    RunFacts,
    SelectionFacts,
    SourceState,
    build_ac_record,
    fold_outcome,
    longrepr_message,
)
from pytest_specgate.evidence._writer import redacted_record

COMMIT = "a" * 40


def _phase(when: str, outcome: str, message: str | None = None, wasxfail: bool = False) -> PhaseResult:
    return PhaseResult(when=when, outcome=outcome, duration=0.1, message=message, wasxfail=wasxfail)


def _phases(*phases: PhaseResult) -> dict[str, PhaseResult]:
    return {phase.when: phase for phase in phases}


@pytest.mark.parametrize(
    ("phases", "finished", "expected"),
    [
        ((_phase("setup", "passed"), _phase("call", "passed"), _phase("teardown", "passed")), True, "passed"),
        ((_phase("setup", "failed", "boom"), _phase("teardown", "passed")), True, "error"),
        ((_phase("setup", "skipped", "needs M4"), _phase("teardown", "passed")), True, "skipped"),
        (
            (_phase("setup", "passed"), _phase("call", "failed", "assert"), _phase("teardown", "passed")),
            True,
            "failed",
        ),
        ((_phase("setup", "passed"), _phase("call", "skipped", wasxfail=True)), True, "xfailed"),
        ((_phase("setup", "passed"), _phase("call", "passed", wasxfail=True)), True, "xpassed"),
        (
            (_phase("setup", "passed"), _phase("call", "passed"), _phase("teardown", "failed", "leak")),
            True,
            "error",
        ),
        ((_phase("setup", "passed"),), False, "interrupted"),
    ],
)
def test_phases_fold_into_one_outcome(phases: tuple[PhaseResult, ...], finished: bool, expected: str) -> None:
    assert fold_outcome(_phases(*phases), finished)[0] == expected


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        (["passed", "passed"], "passed"),
        (["passed", "skipped"], "skipped"),
        (["passed", "xfailed"], "skipped"),
        (["skipped", "failed"], "failed"),
        (["passed", "error"], "failed"),
        (["passed", "interrupted"], "incomplete"),
        (["xpassed"], "failed"),
    ],
)
def test_an_ac_passes_only_when_all_its_tests_pass(outcomes: list[str], expected: str) -> None:
    assert ac_outcome(outcomes) == expected


def test_skip_reason_loses_pytest_prefix() -> None:
    assert longrepr_message(("t.py", 3, "Skipped: needs M4"), "skipped") == "needs M4"


def _run(**changes: Any) -> RunFacts:
    base: dict[str, Any] = {
        "run_id": "r1",
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:01:00Z",
        "diagnostic": False,
        "allow_dirty": False,
        "interrupted": False,
        "source": SourceState(commit=COMMIT, dirty=False, problem=None, changed_files=()),
        "host_facts": {"os": "linux"},
        "host_provenance": PROBED_HOST,
        "host_summary": "linux x86_64",
        "versions": {"python": "3.11", "pytest": "9", "specgate": "0.1.0"},
        "census": Census(("tests",), {"t.py::a": "AC-10"}),
        "run_provenance": CLEAN_RUN_PROVENANCE,
    }
    base.update(changes)
    return RunFacts(**base)


def _test(nodeid: str = "t.py::a", outcome: ExecutedOutcome = "passed", **properties: Any) -> ExecutedTest:
    payload: dict[str, Any] = {
        "ac": {"id": "AC-10", "spec": "SPEC-028", "title": "t", "waived_to": None, "reason": None},
        "hardware": None,
        "mode": "default",
        "measurements": [],
        "attachments": [],
        "notes": {},
        "engines": [],
    }
    payload.update(properties)
    return ExecutedTest(
        nodeid=nodeid,
        outcome=outcome,
        message=None,
        duration=0.2,
        phases=(_phase("setup", "passed"),),
        properties=payload,
    )


def test_clean_passing_ac_qualifies_and_matches_the_schema() -> None:
    record = build_ac_record("AC-10", [_test()], _run())
    assert record["qualifying"] is True and record["not_qualifying_reasons"] == []
    assert record["outcome"] == "passed" and record["mode"] == "default"
    assert schema_problems(record) == []


@pytest.mark.parametrize(
    ("run", "test", "reason"),
    [
        (_run(diagnostic=True), _test(), "diagnostic run"),
        (_run(), _test(mode="diagnostic"), "diagnostic run"),
        (_run(interrupted=True), _test(), "interrupted"),
        (
            _run(source=SourceState(None, None, "not a git repository")),
            _test(),
            "source commit unknown: not a git",
        ),
        (
            _run(source=SourceState(COMMIT, True, None, ("spec.py",))),
            _test(),
            f"files the run imported are not those of commit {COMMIT[:12]}",
        ),
        (_run(duration_scale=0.02), _test(), "--specgate-duration-scale 0.02 is not 1"),
        (_run(), _test(outcome="skipped"), "t.py::a: skipped"),
        (
            _run(),
            _test(
                hardware={"matched": False, "reasons": ["needs Apple M4", "needs 16 GB"], "host_summary": "x"}
            ),
            "t.py::a: hardware requirement not met: needs Apple M4; needs 16 GB",
        ),
        (
            _run(),
            _test(
                measurements=[
                    {"name": "speedup", "value": 1.2, "unit": "x", "at_least": 1.4, "at_most": None}
                ]
            ),
            "t.py::a: speedup = 1.2 x is below at_least=1.4",
        ),
    ],
)
def test_every_disqualifier_is_named(run: RunFacts, test: ExecutedTest, reason: str) -> None:
    record = build_ac_record("AC-10", [test], run)
    assert record["qualifying"] is False
    assert any(reason in why for why in record["not_qualifying_reasons"]), record["not_qualifying_reasons"]
    assert schema_problems(record) == []


def test_dirty_tree_qualifies_with_allow_dirty() -> None:
    record = build_ac_record(
        "AC-10", [_test()], _run(source=SourceState(COMMIT, True, None, ()), allow_dirty=True)
    )
    assert record["qualifying"] is True and record["source"]["dirty"] is True


def test_tests_are_ordered_by_nodeid_and_a_waiver_on_one_test_does_not_count() -> None:
    waived = {"id": "AC-10", "spec": "SPEC-028", "title": "t", "waived_to": "PR-C", "reason": "later"}
    record = build_ac_record("AC-10", [_test("t.py::b", ac=waived), _test("t.py::a")], _run())
    assert [test["nodeid"] for test in record["tests"]] == ["t.py::a", "t.py::b"]
    assert record["waiver"] is None and record["tests"][1]["waiver"] == {"to": "PR-C", "reason": "later"}
    assert (
        "waiver does not count: every test of AC-10 must state the same waiver, not stated by t.py::a"
        in record["not_qualifying_reasons"]
    )


def test_a_deselected_or_unreached_test_makes_the_ac_incomplete() -> None:
    selection = SelectionFacts(
        args=("tests",),
        keyword="speed",
        selected={"t.py::a": "AC-10", "t.py::late": "AC-10", "t.py::other": "AC-11"},
        deselected={"t.py::slow": "AC-10", "t.py::x": "AC-11"},
    )
    record = build_ac_record("AC-10", [_test()], _run(selection=selection))
    assert record["outcome"] == "incomplete" and record["qualifying"] is False
    assert record["completeness"] == {
        "complete": False,
        "deselected": ["t.py::slow"],
        "not_reached": ["t.py::late"],
        "not_collected": [],
        "skipped": [],
        "selection": {"args": ["tests"], "keyword": "speed", "markexpr": None},
        "collection": {"testpaths": ["tests"], "tests": ["t.py::a"], "errors": [], "problem": None},
    }
    assert record["not_qualifying_reasons"] == [
        "incomplete: 1 test(s) of AC-10 deselected: t.py::slow (selection: args tests; -k 'speed')",
        "incomplete: 1 test(s) of AC-10 not reached: t.py::late (selection: args tests; -k 'speed')",
    ]


def test_schema_rejects_a_record_missing_a_field() -> None:
    record = build_ac_record("AC-10", [_test()], _run())
    del record["qualifying"]
    assert any("'qualifying' is a required property" in problem for problem in schema_problems(record))


PLANTED_TOKEN = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"
IDENTITY = LocalIdentity(
    user_names=("alice-ops",), host_names=("buildbox-7",), home_dirs=("/home/alice-ops",)
)


def _schema_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every record the schema is asked about from now on, by AC id."""
    import pytest_specgate.evidence._acrecord as acrecord_module

    checked: list[str] = []
    real = acrecord_module.schema_problems

    def counted(record: Any) -> list[str]:
        checked.append(record["ac"]["id"])
        return real(record)

    monkeypatch.setattr(acrecord_module, "schema_problems", counted)
    return checked


def test_a_merged_record_that_redaction_leaves_alone_is_kept_without_a_schema_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    redactor = build_redactor(Path("/srv/repo"), (), {}, IDENTITY)
    checked = _schema_checks(monkeypatch)
    record = build_ac_record("AC-10", [_test()], _run())
    kept = redacted_record("AC-10.json", redactor, record)
    assert checked == []
    assert kept == record and schema_problems(kept) == []


def test_a_merged_record_that_redaction_changes_is_validated_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    redactor = build_redactor(Path("/srv/repo"), (), {}, IDENTITY)
    source = SourceState(commit=None, dirty=None, problem=f"git refused {PLANTED_TOKEN}")
    record = build_ac_record("AC-10", [_test()], _run(source=source))
    checked = _schema_checks(monkeypatch)
    kept = redacted_record("AC-10.json", redactor, record)
    assert checked == ["AC-10"]
    assert PLANTED_TOKEN not in json.dumps(kept)
    assert kept["source"]["problem"] != source.problem


def test_run_facts_are_redacted_where_they_enter_and_completeness_still_matches() -> None:
    from pytest_specgate.evidence._collector import redacted_run_facts

    redactor = build_redactor(Path("/srv/repo"), (), {}, IDENTITY)
    ran, skipped_by_k = f"t.py::a[{PLANTED_TOKEN}]", f"t.py::b[{PLANTED_TOKEN}]"
    run = _run(
        source=SourceState(commit=None, dirty=None, problem=f"no git for {PLANTED_TOKEN}"),
        host_facts={"os": "linux", "hostname": f"box {PLANTED_TOKEN}"},
        selection=SelectionFacts(args=(f"--token={PLANTED_TOKEN}",), keyword=PLANTED_TOKEN,
                                 selected={ran: "AC-10"}, deselected={skipped_by_k: "AC-10"}),
    )
    redacted = redacted_run_facts(run, NodeIdRedactor(redactor))
    test = dataclasses.replace(_test(), nodeid=redactor.text(ran))
    record = build_ac_record("AC-10", [test], redacted)
    assert PLANTED_TOKEN not in json.dumps(record)
    assert record["completeness"]["not_reached"] == []
    assert record["completeness"]["deselected"] == [redactor.text(skipped_by_k)] != [skipped_by_k]
    assert redactor.value(record) == record


def _judged_scenarios() -> list[tuple[list[ExecutedTest], RunFacts]]:
    waived = {"id": "AC-10", "spec": "SPEC-028", "title": "t", "waived_to": "PR-C", "reason": "later"}
    return [
        ([_test()], _run()),
        ([_test(outcome="failed")], _run()),
        ([_test()], _run(diagnostic=True)),
        ([_test(ac=waived)], _run()),
        ([_test("t.py::a"), _test("t.py::b")], _run(census=Census(("tests",), {"t.py::a": "AC-10",
                                                                             "t.py::c": "AC-10"}))),
        ([_test(measurements=[{"nodeid": "t.py::a", "name": "median_speedup", "value": 1.2, "unit": "x",
                               "at_least": 1.4, "at_most": None}])], _run()),
    ]


@pytest.mark.parametrize("scenario", range(len(_judged_scenarios())))
def test_a_record_judged_once_carries_what_the_gate_recomputes(scenario: int) -> None:
    """The writer takes the collector's verdict as it is: it must be the one ``judge`` gives the
    written document, and the typed view the one the document reads back as."""
    from pytest_specgate.evidence._acrecord import AcRecord
    from pytest_specgate.evidence._policy import judge
    from pytest_specgate.evidence._records import judged_ac_record

    tests, run = _judged_scenarios()[scenario]
    judged = judged_ac_record("AC-10", tests, run)
    assert judge(AcRecord.built(judged.document)) == judged.verdict
    assert AcRecord.built(judged.document) == judged.record
    assert judged.document == build_ac_record("AC-10", tests, run)
    assert (judged.document["qualifying"], judged.document["outcome"]) == (
        judged.verdict.qualifying, judged.verdict.outcome)


def test_the_writer_writes_the_same_bundle_from_judged_records_as_from_documents(tmp_path: Path) -> None:
    """Judged once by the collector or judged by the writer (``merge``'s records): byte for byte
    the same files."""
    from pytest_specgate.evidence._records import judged_ac_record
    from pytest_specgate.evidence._writer import write_bundle

    redactor = build_redactor(Path("/srv/repo"), ())
    judged = [judged_ac_record(f"AC-{n}", [_test(f"t.py::t{n}")], _run()) for n in (1, 2, 3)]
    judged += [judged_ac_record("AC-4", [_test("t.py::t4", outcome="failed")], _run(diagnostic=True))]
    written = {}
    for name, records in (("judged", judged), ("documents", [item.document for item in judged])):
        folder = tmp_path / name
        folder.mkdir()
        bundle = write_bundle(folder, redactor, "r1", records, {}, None, COMMIT, "0.1.0")
        written[name] = (bundle.verdict, {path.name: path.read_bytes() for path in folder.iterdir()})
    assert written["judged"] == written["documents"]
    assert written["judged"][0] == "NOT QUALIFIED"


def test_a_run_judges_each_ac_once_and_its_bundle_holds_the_verdicts_the_gate_recomputes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three ACs, one failing: ``judge`` runs three times in the whole write (twice each before
    records were judged once), and the written lines read back to the same verdicts."""
    from evidence_testkit import AC10, TEST_ENV, SyntheticRun, make_git_repo

    from pytest_specgate.evidence import _policy, load_bundle, read_records
    from pytest_specgate.evidence._acrecord import AcRecord

    calls: list[str] = []
    judge = _policy.judge

    def counted(record: AcRecord) -> Any:
        calls.append(record.ac.id)
        return judge(record)

    from pytest_specgate.evidence import _writer

    for module in (_policy, _writer):
        monkeypatch.setattr(module, "judge", counted)
    repo = make_git_repo(tmp_path).path
    run = SyntheticRun(repo, TEST_ENV)
    for number in (10, 11, 12):
        run.run_test(f"tests/test_ac.py::test_{number}", {**AC10, "id": f"AC-{number}"},
                     outcome="failed" if number == 11 else "passed")
    bundle = run.finish()
    assert sorted(calls) == ["AC-10", "AC-11", "AC-12"]
    written = read_records(load_bundle(bundle.path))
    assert sorted(written) == ["AC-10", "AC-11", "AC-12"]
    for record in written.values():
        verdict = judge(record)
        assert (record.outcome, record.qualifying, record.reasons) == (
            verdict.outcome, verdict.qualifying, verdict.reasons)
    assert written["AC-11"].outcome == "failed"
