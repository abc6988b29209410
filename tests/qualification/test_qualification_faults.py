"""Fault gates: they pass when an engine recovers and FAIL, by evidence, when it does not."""

from __future__ import annotations

import pytest
from fake_engine import FakeEngine
from qualification_testkit import BREAKAGES, FakeInjector, FakeProbe

from pytest_specgate.engines.mock import MockEngine, MockSettings, boot_settings
from pytest_specgate.qualification import (
    FAULT_GATES,
    ClientFaultInjector,
    CounterReading,
    FaultGates,
    GreedyOutput,
    MockFaultInjector,
    RecoveryNotEvidenced,
    compare_greedy,
    fault_gate_specs,
    injector_for,
)

EXPECTED_PROBLEM = {
    "slot-leak": "slot not freed: 1 active",
    "frozen-counters": "request counter did not advance",
    "output-drift": "greedy output after the fault differs from before it",
    "dead-after-fault": "the request after the fault failed: ConnectionError",
    "not-provoked": "the fault was not provoked",
}


def fake_gates(breakage: str | None = None) -> tuple[FakeEngine, FaultGates]:
    engine = FakeEngine()
    gates = FaultGates(
        engine,
        injector=FakeInjector(engine, breakage),
        probe=FakeProbe(engine),
        settle_s=0.2,
        sleep=lambda s: None,
    )
    return engine, gates


@pytest.mark.parametrize("gate", FAULT_GATES)
def test_each_fault_gate_passes_when_the_engine_recovers(gate: str) -> None:
    _, gates = fake_gates()
    gates.greedy_reference()
    evidence = getattr(gates, gate)()
    assert evidence["recovered"] is True
    assert evidence["counters_after"]["requests_total"] > evidence["counters_before"]["requests_total"]


@pytest.mark.parametrize("breakage", BREAKAGES)
@pytest.mark.parametrize("gate", FAULT_GATES)
def test_each_fault_gate_fails_when_the_engine_does_not_recover(gate: str, breakage: str) -> None:
    _, gates = fake_gates(breakage)
    gates.greedy_reference()
    with pytest.raises(RecoveryNotEvidenced, match=f"^{gate}: .*{EXPECTED_PROBLEM[breakage]}") as failed:
        getattr(gates, gate)()
    assert failed.value.evidence["recovered"] is False
    assert failed.value.evidence["gate"] == gate


def test_a_cancel_the_engine_does_not_count_fails_the_gate() -> None:
    engine, gates = fake_gates()
    gates.greedy_reference()
    engine.counting = True
    injector = gates.injector
    assert isinstance(injector, FakeInjector)

    original = injector._fault

    def fault_without_cancel_count(kind: str):  # type: ignore[no-untyped-def]
        observation = original(kind)
        engine.cancelled_total -= 1
        return observation

    injector._fault = fault_without_cancel_count  # type: ignore[method-assign]
    with pytest.raises(RecoveryNotEvidenced, match="not counted as cancelled"):
        gates.cancel_stream()


def test_fault_gates_refuse_to_run_before_the_greedy_reference() -> None:
    _, gates = fake_gates()
    with pytest.raises(RecoveryNotEvidenced, match="run the greedy_reference gate before any fault gate"):
        gates.cancel_stream()


def test_an_engine_without_counters_cannot_evidence_recovery_unless_allowed() -> None:
    class NoCounters:
        def read(self) -> CounterReading:
            return CounterReading(None, None, None, "unavailable")

    engine = FakeEngine()
    strict = FaultGates(engine, injector=FakeInjector(engine), probe=NoCounters())
    strict.greedy_reference()
    with pytest.raises(RecoveryNotEvidenced, match="exposes no request/slot counters"):
        strict.reconnect()
    lenient = FaultGates(engine, injector=FakeInjector(engine), probe=NoCounters(), require_counters=False)
    lenient.greedy_reference()
    assert lenient.reconnect()["recovered"] is True


def test_greedy_restore_reports_n_of_n_identical_and_the_first_difference() -> None:
    engine, gates = fake_gates()
    gates.greedy_reference()
    assert gates.greedy_restore()["summary"] == "greedy 4/4 identical"
    engine.drift = True
    with pytest.raises(RecoveryNotEvidenced, match="greedy 0/4 identical; first mismatch on") as failed:
        gates.greedy_restore()
    mismatches = failed.value.evidence["mismatches"]
    assert isinstance(mismatches, list)
    mismatch = mismatches[0]
    assert mismatch["unit"] == "token"
    assert mismatch["before"] != mismatch["after"]


def test_compare_greedy_names_the_first_differing_token() -> None:
    before = GreedyOutput("p", "a b c", (1, 2, 3), "stop")
    assert compare_greedy(before, GreedyOutput("p", "a b c", (1, 2, 3), "stop")) is None
    differs = compare_greedy(before, GreedyOutput("p", "a x c", (1, 9, 3), "stop"))
    assert differs is not None
    assert (differs["first_difference"], differs["before"], differs["after"]) == (1, [1, 2, 3], [1, 9, 3])
    shorter = compare_greedy(before, GreedyOutput("p", "a b", (1, 2), "length"))
    assert shorter is not None and shorter["first_difference"] == 2
    by_text = compare_greedy(GreedyOutput("p", "abc", None, "stop"), GreedyOutput("p", "abd", None, "stop"))
    assert by_text is not None and (by_text["unit"], by_text["first_difference"]) == ("character", 2)


def test_fault_gate_specs_declare_reference_faults_then_restore_in_order() -> None:
    names = [spec.name for spec in fault_gate_specs()]
    assert names == ["greedy_reference", *FAULT_GATES, "greedy_restore"]


# -- against the real mock engine ------------------------------------------------------------


def run_all(gates: FaultGates) -> dict[str, dict[str, object]]:
    results = {"greedy_reference": gates.greedy_reference()}
    for name in FAULT_GATES:
        results[name] = getattr(gates, name)()
    results["greedy_restore"] = gates.greedy_restore()
    return results


def test_every_gate_passes_against_the_mock_with_its_fault_injection_api(mock_engine: MockEngine) -> None:
    assert isinstance(injector_for(mock_engine), MockFaultInjector)
    results = run_all(FaultGates(mock_engine))
    assert results["greedy_restore"]["summary"] == "greedy 4/4 identical"
    fired = mock_engine.status()["faults"]
    assert isinstance(fired, dict)
    assert fired["fired"] == {"stall": 2, "reset": 2, "late-reply": 1}
    assert fired["late_replies_after_disconnect"] == 1
    cancel = results["cancel_stream"]
    before, after = cancel["counters_before"], cancel["counters_after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert after["cancelled_total"] == before["cancelled_total"] + 1
    assert after["slots_active"] == 0


def test_every_gate_passes_against_the_mock_with_client_side_faults(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    slow = boot_settings(MockSettings(draft="specgate-mock-draft", target_step_ms=20, eos_one_in=0), tmp_path)
    try:
        results = run_all(FaultGates(slow, injector=ClientFaultInjector(long_tokens=64, tiny_timeout_s=0.05)))
    finally:
        slow.close()
    assert all(results[name]["recovered"] for name in FAULT_GATES)
    assert results["greedy_restore"]["summary"] == "greedy 4/4 identical"


def test_output_changing_after_a_reset_fails_the_reset_gate_and_the_restore(mock_engine: MockEngine) -> None:
    gates = FaultGates(mock_engine)
    gates.greedy_reference()
    mock_engine.set_violations("corrupt-spec")
    with pytest.raises(RecoveryNotEvidenced, match="connection_reset: greedy output after the fault differs"):
        gates.connection_reset()
    with pytest.raises(RecoveryNotEvidenced, match=r"greedy_restore: greedy [0-3]/4 identical"):
        gates.greedy_restore()


def test_a_late_reply_still_holding_its_slot_fails_the_gate(mock_engine: MockEngine) -> None:
    gates = FaultGates(mock_engine, injector=MockFaultInjector(late_s=5.0), settle_s=0.3)
    gates.greedy_reference()
    with pytest.raises(RecoveryNotEvidenced, match=r"slot not freed: 1 active after waiting 0\.3s"):
        gates.late_reply_after_cancel()


def test_an_engine_erroring_after_the_reconnect_fails_the_gate(mock_engine: MockEngine) -> None:
    class ErrorsAfterReset(MockFaultInjector):
        def reconnect(self, engine, messages):  # type: ignore[no-untyped-def]
            observation = super().reconnect(engine, messages)
            mock_engine.inject_fault("error-500", count=5)
            return observation

    gates = FaultGates(mock_engine, injector=ErrorsAfterReset())
    gates.greedy_reference()
    with pytest.raises(
        RecoveryNotEvidenced, match="reconnect: the request after the fault failed: EngineHTTPError"
    ):
        gates.reconnect()
    mock_engine.clear_faults()


def test_a_client_timeout_the_engine_answers_in_time_is_not_provoked(mock_engine: MockEngine) -> None:
    gates = FaultGates(mock_engine, injector=ClientFaultInjector(tiny_timeout_s=30.0))
    gates.greedy_reference()
    with pytest.raises(RecoveryNotEvidenced, match="client_timeout: the fault was not provoked"):
        gates.client_timeout()


def test_a_mock_leaking_cancelled_slots_fails_the_cancel_gate(mock_engine: MockEngine) -> None:
    gates = FaultGates(mock_engine, injector=MockFaultInjector(), settle_s=0.3)
    gates.greedy_reference()
    mock_engine.set_violations("slot-leak")
    try:
        with pytest.raises(RecoveryNotEvidenced, match=r"slot not freed: 1 active after waiting 0\.3s"):
            gates.cancel_stream()
    finally:
        mock_engine.set_violations()
