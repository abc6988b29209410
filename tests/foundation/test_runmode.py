"""The run decision and the per-test payload, as pure functions."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_specgate.contracts.hardware import HardwareRequirement, HardwareVerdict
from pytest_specgate.contracts.payload import (
    SPEC_PROPERTY,
    RecordedProperties,
    later_phase_payload,
    mismatched_hardware_runs,
    payload_of,
    spec_payload,
)
from pytest_specgate.contracts.runmode import RunAction, RunMode, RunSettings, decide_run

MISMATCH = HardwareVerdict(
    HardwareRequirement(apple="M4"),
    matched=False,
    reasons=("Apple M4 (host has no Apple chip)",),
    host_summary="Linux x86_64",
)
MATCH = HardwareVerdict(HardwareRequirement(apple="M4"), matched=True, reasons=(), host_summary="macOS")


@pytest.mark.parametrize(
    ("verdict", "required", "diagnostic", "action", "mode"),
    [
        (None, False, False, RunAction.RUN, RunMode.DEFAULT),
        (MATCH, False, False, RunAction.RUN, RunMode.DEFAULT),
        (MISMATCH, False, False, RunAction.SKIP, RunMode.DEFAULT),
        (MISMATCH, True, False, RunAction.ERROR, RunMode.REQUIRED),
        (MATCH, True, False, RunAction.RUN, RunMode.REQUIRED),
        (MISMATCH, False, True, RunAction.RUN, RunMode.DIAGNOSTIC),
        (None, False, True, RunAction.RUN, RunMode.DIAGNOSTIC),
    ],
)
def test_decisions(
    verdict: HardwareVerdict | None, required: bool, diagnostic: bool, action: RunAction, mode: RunMode
) -> None:
    decision = decide_run(verdict, required=required, diagnostic=diagnostic)
    assert (decision.action, decision.mode) == (action, mode)
    if verdict is MISMATCH:
        assert decision.message is not None and "Apple M4 (host has no Apple chip)" in decision.message


def test_required_and_diagnostic_together_is_refused() -> None:
    with pytest.raises(ValueError, match="both required and diagnostic"):
        decide_run(None, required=True, diagnostic=True)


def test_settings_label_and_require_all() -> None:
    assert RunSettings().label == "default"
    assert RunSettings(diagnostic=True).label == "diagnostic"
    assert RunSettings(required=frozenset({"AC-11", "AC-10"})).label == "require AC-10, AC-11"
    assert RunSettings(required=frozenset({"all"})).is_required(None)
    assert not RunSettings(required=frozenset({"AC-10"})).is_required("AC-11")


def test_payload_round_trip_and_mismatch_count() -> None:
    payload = spec_payload(
        "t.py::a",
        ac={"id": "AC-10"},
        verdict=MISMATCH,
        decision=decide_run(MISMATCH, required=False, diagnostic=True),
        recorded={"measurements": [], "attachments": [], "notes": {"k": 1}, "engines": []},
    )
    assert payload["mode"] == "diagnostic" and payload["notes"] == {"k": 1}
    assert payload_of([("other", {}), (SPEC_PROPERTY, payload)]) is payload
    assert payload_of([("other", {})]) is None
    reports = [
        SimpleNamespace(nodeid="t.py::a", when="call", user_properties=[(SPEC_PROPERTY, payload)]),
        SimpleNamespace(nodeid="t.py::a", when="setup", user_properties=[(SPEC_PROPERTY, payload)]),
        SimpleNamespace(nodeid="t.py::b", when="call", user_properties=[]),
    ]
    assert mismatched_hardware_runs(reports) == {"t.py::a"}


def test_a_later_phase_payload_is_the_payload_built_whole() -> None:
    """The teardown's payload takes the test's own parts from the setup's and adds what the test
    recorded since: the same payload as one built whole, with the setup's dicts, not copies."""
    decision = decide_run(MISMATCH, required=False, diagnostic=True)
    recorded: RecordedProperties = {"measurements": [{"name": "speedup", "value": 1.5}], "attachments": [],
                                    "notes": {"k": 2}, "engines": []}
    engines = [{"identity": {"name": "mock"}}]
    setup = spec_payload("t.py::a", ac={"id": "AC-10"}, verdict=MISMATCH, decision=decision)
    later = later_phase_payload(setup, recorded, engines)
    whole = spec_payload("t.py::a", ac={"id": "AC-10"}, verdict=MISMATCH, decision=decision,
                         recorded=recorded, engines=engines)
    assert later == whole and later["hardware"] is setup["hardware"] and later["ac"] is setup["ac"]
    assert (setup["measurements"], setup["notes"], setup["engines"]) == ([], {}, [])
