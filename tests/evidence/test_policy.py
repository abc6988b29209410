"""The verdict policy judges facts only: each rule, the fail-closed defaults, and what it ignores."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from evidence_testkit import CLEAN_RUN_PROVENANCE, M4_HOST_FACTS, M4_MATCHED, PROBED_HOST, REAL_ENGINE

from pytest_specgate.contracts.census import Census
from pytest_specgate.evidence import POLICY_VERSION, AcRecord, RecordError, judge
from pytest_specgate.evidence._acrecord import Waiver
from pytest_specgate.evidence._records import (
    ExecutedTest,
    PhaseResult,
    RunFacts,
    SourceState,
    build_ac_record,
)

COMMIT = "b" * 40
HARDWARE_MATCHED = dict(M4_MATCHED)


def _honest_record(engines: list[Any] | None = None, hardware: Any = None) -> dict[str, Any]:
    test = ExecutedTest(
        nodeid="t.py::canary",
        outcome="passed",
        message=None,
        duration=1.0,
        phases=(PhaseResult("call", "passed", 1.0, None, False),),
        properties={
            "ac": {"id": "AC-10", "spec": "SPEC-028", "title": "canary", "waived_to": None, "reason": None},
            "hardware": copy.deepcopy(hardware),
            "mode": "required",
            "measurements": [
                {"name": "speedup", "value": 1.5, "unit": "x", "at_least": 1.4, "at_most": None}
            ],
            "attachments": [],
            "notes": {},
            "engines": [dict(REAL_ENGINE)] if engines is None else engines,
        },
    )
    run = RunFacts(
        run_id="r",
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z",
        diagnostic=False,
        allow_dirty=False,
        interrupted=False,
        source=SourceState(commit=COMMIT, dirty=False, problem=None, changed_files=()),
        host_facts=M4_HOST_FACTS,
        host_summary="Apple M4, 16 GB",
        versions={"python": "3.11", "pytest": "9", "specgate": "0.1.0"},
        host_provenance=PROBED_HOST,
        census=Census(("tests",), {test.nodeid: "AC-10"}),
        run_provenance=CLEAN_RUN_PROVENANCE,
    )
    return build_ac_record("AC-10", [test], run)


def _judged(record: dict[str, Any]) -> tuple[bool, tuple[str, ...]]:
    verdict = judge(AcRecord.from_json(record, "AC-10.json"))
    return verdict.qualifying, verdict.reasons


def test_an_honest_record_with_a_real_engine_on_a_matched_host_qualifies() -> None:
    record = _honest_record(hardware=HARDWARE_MATCHED)
    assert record["policy"] == POLICY_VERSION == "specgate.policy/1"
    assert (record["outcome"], record["qualifying"], record["not_qualifying_reasons"]) == ("passed", True, [])
    assert judge(AcRecord.from_json(record, "AC-10.json")).label == "PASSED · QUALIFYING"


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = record
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_set("host/provenance", None), "host provenance unknown"),
        (
            _set(
                "host/provenance", {**PROBED_HOST, "origin": "file", "simulated": True, "detail": "gb10.json"}
            ),
            "host facts simulated from gb10.json: only the unedited probe qualifies",
        ),
        (_set("host/provenance/origin", "hook"), "host facts simulated by pytest_specgate_host_facts"),
        (
            _set(
                "host/provenance/tools",
                [{"name": "nvidia-smi", "path": "/tmp/bin/nvidia-smi", "system_location": False}],
            ),
            "host probe asked nvidia-smi at /tmp/bin/nvidia-smi, outside the system's tool locations",
        ),
        (_set("tests/0/engines", None), "t.py::canary: engines unknown"),
        (
            _set("tests/0/engines", [{"backend": "mock", "model": "specgate-mock-target"}]),
            "t.py::canary: ran on the built-in mock engine (specgate-mock-target)",
        ),
        (
            _set("tests/0/engines", [{**REAL_ENGINE, "backend": "endpoint", "simulated": True}]),
            "t.py::canary: ran on the built-in mock engine (tiny-target)",
        ),
        (
            _set("tests/0/engines", [{"backend": "vllm", "model": "m"}]),
            "t.py::canary: vllm engine m: the record does not say whether it is simulated",
        ),
        (
            _set("tests/0/engines", [{**REAL_ENGINE, "version_known": False}]),
            "t.py::canary: the version of the vllm engine at an unknown address could not be read",
        ),
        (
            _set("tests/0/engines", [{**REAL_ENGINE, "backend": "endpoint", "loopback": False}]),
            "the endpoint engine at an unknown address is not on this host (not a loopback address)",
        ),
        (
            _set("tests/0/hardware", {**HARDWARE_MATCHED, "matched": False, "reasons": ["needs Apple M4"]}),
            "t.py::canary: hardware requirement not met: needs Apple M4",
        ),
        (
            _set("host/facts/memory_bytes", 8 * 1024**3),
            "t.py::canary: hardware requirement not met by the recorded host facts: memory ≥ 16 GB",
        ),
        (_set("host/facts/apple_chip", "M1"), "by the recorded host facts: Apple M4 (host has Apple M1)"),
        (lambda record: record["tests"][0]["hardware"].pop("requirement"), "requirement not recorded"),
        (
            _set("tests/0/hardware/requirement", {"apple": "M9 Turbo"}),
            "t.py::canary: hardware verdict cannot be recomputed: apple must look like 'M4'",
        ),
        (_set("host/facts", {"os": "plan9"}), "hardware verdict cannot be recomputed: recorded host facts: "),
        (_set("measurements/0/value", 1.1), "t.py::canary: speedup = 1.1 x is below at_least=1.4"),
        (_set("measurements/0/value", "fast"), "t.py::canary: speedup = fast x is not a number"),
        (_set("tests/0/outcome", "failed"), "t.py::canary: failed"),
        (_set("tests/0/mode", "diagnostic"), "diagnostic run"),
        (_set("run/duration_scale", None), "duration scale unknown"),
        (_set("run/interrupted", True), "the run was interrupted before it finished"),
        (_set("source/changed_files", None), "source state unknown"),
        (
            _set("source/changed_files", ["conftest.py"]),
            f"files the run imported are not those of commit {COMMIT[:12]}",
        ),
        (_set("source/commit", None), "source commit unknown"),
        (
            _set("completeness/deselected", ["t.py::slow"]),
            "incomplete: 1 test(s) of AC-10 deselected: t.py::slow",
        ),
    ],
)
def test_each_fact_that_disqualifies_is_named(edit: Callable[[dict[str, Any]], None], reason: str) -> None:
    record = _honest_record(hardware=HARDWARE_MATCHED)
    edit(record)
    qualifying, reasons = _judged(record)
    assert not qualifying
    assert any(reason in why for why in reasons), reasons


def test_flags_the_record_states_are_ignored() -> None:
    record = _honest_record()
    record["measurements"][0]["value"] = 1.0
    record["measurements"][0]["passed"] = True
    record["qualifying"], record["not_qualifying_reasons"], record["outcome"] = True, [], "passed"
    verdict = judge(AcRecord.from_json(record, "AC-10.json"))
    assert verdict.reasons == ("t.py::canary: speedup = 1.0 x is below at_least=1.4",)
    # The test says it passed, but the figure it recorded misses its bound: recomputed, it failed.
    assert verdict.label == "FAILED · NOT QUALIFYING"
    record["tests"][0]["outcome"] = "skipped"
    assert judge(AcRecord.from_json(record, "AC-10.json")).outcome == "skipped"


def test_a_waiver_counts_only_when_every_test_of_the_ac_ran_and_states_it() -> None:
    record = _honest_record()
    record["tests"][0]["waiver"] = {"to": "PR-C", "reason": "no M4 in CI"}
    assert judge(AcRecord.from_json(record, "AC-10.json")).waiver == Waiver("PR-C", "no M4 in CI")
    record["completeness"]["not_reached"] = ["t.py::later"]
    verdict = judge(AcRecord.from_json(record, "AC-10.json"))
    assert verdict.waiver is None
    unknown = "waiver does not count: 1 test(s) of AC-10 did not run, so whether they state it is unknown"
    assert f"{unknown}: t.py::later" in verdict.reasons


def test_a_real_engine_off_loopback_is_fine_without_a_hardware_marker() -> None:
    record = _honest_record(engines=[{**REAL_ENGINE, "backend": "endpoint", "loopback": False}])
    assert _judged(record) == (True, ())


def test_old_and_malformed_records_are_refused_with_a_named_cause() -> None:
    record = _honest_record()
    old = copy.deepcopy(record) | {"schema": "specgate.evidence/v1"}
    with pytest.raises(
        RecordError, match=r"AC-10.json: written as specgate.evidence/v1 by an older specgate"
    ):
        AcRecord.from_json(old, "AC-10.json")
    del record["completeness"]
    with pytest.raises(RecordError, match=r"not a valid specgate.evidence/v3 record: .*'completeness'"):
        AcRecord.from_json(record, "AC-10.json")


def test_a_run_provenance_shared_by_many_records_is_judged_once_and_another_run_on_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every record of a run holds the run's one provenance mapping: its reasons are worked out
    once, also while another run's records are judged in turn, and a record of another run (its
    own mapping, here one naming a foreign module) still gets its own reasons, never the other
    run's."""
    from pytest_specgate.evidence import _run_provenance

    judged: list[object] = []
    real = _run_provenance.run_provenance_reasons

    def counted(provenance: Any) -> list[str]:
        judged.append(provenance)
        return real(provenance)

    monkeypatch.setattr(_run_provenance, "run_provenance_reasons", counted)
    record = _honest_record(hardware=HARDWARE_MATCHED)
    shared = record["run_provenance"] = copy.deepcopy(record["run_provenance"])
    for ac in ("AC-10", "AC-11", "AC-12"):
        assert judge(AcRecord.built({**record, "ac": {**record["ac"], "id": ac}})).qualifying
    assert judged == [shared]
    foreign = copy.deepcopy(shared)
    foreign["foreign_modules"] = {"evil_plugin": {"path": "/tmp/evil_plugin.py", "distribution": None}}
    other_run = judge(AcRecord.built({**record, "run_provenance": foreign}))
    assert not other_run.qualifying
    assert judged == [shared, foreign]
    assert judge(AcRecord.built(record)).qualifying
    # Two runs' records judged in turn (compare: base, new, base...) judge each run once.
    for _ in range(3):
        assert judge(AcRecord.built(record)).qualifying
        assert not judge(AcRecord.built({**record, "run_provenance": foreign})).qualifying
    assert judged == [shared, foreign]


def test_a_hardware_requirement_is_recomputed_once_per_requirement_and_host_facts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run's ACs hold the run's host facts and share a few requirements: each pair of values is
    matched again once. Facts that differ, even only by a value's type (``1`` and ``True`` are
    equal in Python), are matched on their own."""
    from pytest_specgate.evidence import _policy
    from pytest_specgate.selection import hardware

    recomputed: list[object] = []
    real = hardware.evaluate_requirement

    def counted(*args: Any) -> Any:
        recomputed.append(args[1])
        return real(*args)

    monkeypatch.setattr(hardware, "evaluate_requirement", counted)
    monkeypatch.setattr(_policy, "_RECOMPUTED", _policy._Recomputed())
    record = _honest_record(hardware=HARDWARE_MATCHED)
    for ac in ("AC-10", "AC-11", "AC-12"):
        assert judge(AcRecord.built({**record, "ac": {**record["ac"], "id": ac}})).qualifying
    assert len(recomputed) == 1
    one_byte = copy.deepcopy(record)
    one_byte["host"]["facts"]["memory_bytes"] = 1
    assert _judged(one_byte)[1] == (
        "t.py::canary: hardware requirement not met by the recorded host facts: memory ≥ 16 GB "
        "(host has 0.0 GB)",
    )
    flagged = copy.deepcopy(record)
    flagged["host"]["facts"]["memory_bytes"] = True
    assert one_byte["host"]["facts"] == flagged["host"]["facts"]
    assert _judged(flagged)[1] == (
        "t.py::canary: hardware verdict cannot be recomputed: recorded host facts: field 'memory_bytes' "
        "must be a number, got True",
    )
    assert len(recomputed) == 2
