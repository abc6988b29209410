"""Qualifying an engine pair: smoke floor, fault recovery and EOS, as one ordered, priced session.

Run against any backend with ``--specgate-engine``; CI runs it on the mock. The
session is priced before anything boots, its receipt names the gate running at
every moment, and it says QUALIFIED only when every gate passed and its
evidence file is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from pytest_specgate.engines import Engine
from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.qualification import (
    BudgetExceeded,
    EosPath,
    FaultGates,
    GateSpec,
    QualificationFactory,
    RecoveryNotEvidenced,
    eos_gate,
    fault_gate_specs,
)
from pytest_specgate.smoke import smoke

MODEL_CONFIG: dict[str, object] = {"capabilities": []}
"""The tiny pair declares no optional capabilities: the smoke floor is chat and streaming."""
EOS_PROMPT: list[dict[str, object]] = [{"role": "user", "content": "Say OK."}]
GATES = (
    GateSpec("smoke", 10, kind="smoke"),
    *fault_gate_specs(estimated_s=10),
    GateSpec("eos", 10, kind="eos"),
)

pytestmark = pytest.mark.engine(target="tiny:target", draft="tiny:draft", num_draft_tokens=3)

Boot = Callable[..., Engine]


def _pair(boot_engine: Boot) -> Callable[[], tuple[Engine, Engine]]:
    """Boot the speculative engine and its draft-less baseline (only after pricing)."""
    return lambda: (boot_engine(), boot_engine(draft=None))


@pytest.mark.ac("FR-6.1", spec="SPECGATE-6", title="an engine pair qualifies through ordered, priced gates")
def test_engine_pair_qualifies(
    qualification: QualificationFactory, boot_engine: Boot, evidence: EvidenceRecorder
) -> None:
    with qualification(GATES, boot=_pair(boot_engine)) as session:
        speculative, baseline = session.booted
        with session.gate("smoke") as gate:
            result = smoke(speculative, MODEL_CONFIG, evidence=evidence)
            gate.record(result.to_dict())
            assert not result.failed, result.summary()
            assert result.partial and result.status_of("tool-call") == "unsmoked"
        faults = FaultGates(speculative)
        for spec in fault_gate_specs():
            session.run(spec.name, getattr(faults, spec.name))
        session.run(
            "eos",
            lambda: eos_gate(
                [EosPath("speculative", speculative, speculative=True), EosPath("baseline", baseline)],
                EOS_PROMPT,
            ),
        )
    receipt = json.loads(session.receipt_path.read_text())
    assert (receipt["verdict"], receipt["failing_gate"]) == ("QUALIFIED", None)
    restore = json.loads((session.directory / "greedy_restore.json").read_text())
    assert restore["record"]["summary"] == "greedy 4/4 identical"


@pytest.mark.ac(
    "FR-6.2", spec="SPECGATE-6", title="a qualification over the hold limit is refused before boot"
)
def test_over_budget_qualification_is_refused_before_any_engine_boots(
    qualification: QualificationFactory, boot_engine: Boot
) -> None:
    boots: list[str] = []

    def counted_boot() -> Engine:
        boots.append("boot")
        return boot_engine()

    soak = (*GATES, GateSpec("sustained_soak", 90 * 60, kind="measure"))
    refused = r"exceeds the hold limit 5100s .*largest items: sustained_soak"
    with pytest.raises(BudgetExceeded, match=refused), qualification(soak, boot=counted_boot):
        pytest.fail("an over-budget session must not open")
    assert boots == []


@pytest.mark.ac(
    "FR-6.3", spec="SPECGATE-6", title="an engine that does not recover from a reset does not qualify"
)
@pytest.mark.engine("mock", target="tiny:target", draft="tiny:draft", num_draft_tokens=3)
def test_engine_changing_output_after_a_reset_is_not_qualified(
    qualification: QualificationFactory, boot_engine: Boot
) -> None:
    session = qualification(fault_gate_specs(), boot=boot_engine)
    not_recovered = "connection_reset: greedy output after the fault differs"
    with pytest.raises(RecoveryNotEvidenced, match=not_recovered), session:
        mock = session.booted
        assert isinstance(mock, MockEngine)
        faults = FaultGates(mock)
        session.run("greedy_reference", faults.greedy_reference)
        session.run("cancel_stream", faults.cancel_stream)
        mock.set_violations("corrupt-spec")
        session.run("connection_reset", faults.connection_reset)
    receipt = json.loads(session.receipt_path.read_text())
    assert (receipt["verdict"], receipt["failing_gate"]) == ("NOT QUALIFIED", "connection_reset")
    assert [gate["state"] for gate in receipt["gates"]][:3] == ["passed", "passed", "failed"]
