"""Budget priced before start: floors, MEASURED estimates, refusal before any engine boots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_specgate.evidence import Redactor
from pytest_specgate.qualification import (
    ESTIMATED,
    GATE_FLOORS,
    MEASURED,
    BudgetError,
    BudgetExceeded,
    GateSpec,
    QualificationSession,
    measured_durations,
    price_gates,
    register_floor,
)

OVER_LIMIT = (
    GateSpec("boot_target", 600, kind="boot"),
    GateSpec("sustained_ten_minutes", 3600, kind="measure"),
    GateSpec("acceptance_rate", 900, kind="measure"),
    GateSpec("smoke", 300, kind="smoke"),
    GateSpec("eos", 60, kind="eos"),
)


class CountingBoot:
    """A boot function that counts its calls: the proof that refusal happens before boot."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return "engine"


def test_budget_over_the_hold_limit_refuses_before_boot(tmp_path: Path) -> None:
    boot = CountingBoot()
    qualification = QualificationSession(tmp_path, OVER_LIMIT, boot=boot, redactor=Redactor(rules=()))
    with pytest.raises(BudgetExceeded) as refused, qualification:
        pytest.fail("the body must not run when the budget is refused")
    assert boot.calls == 0
    message = str(refused.value)
    assert "priced total 5460s (91.0 min) exceeds the hold limit 5100s (85.0 min)" in message
    assert (
        "largest items: sustained_ten_minutes 3600s (60.0 min) (ESTIMATED), acceptance_rate 900s (15.0 min) "
        "(ESTIMATED), boot_target 600s (10.0 min) (ESTIMATED)"
    ) in message
    document = json.loads((tmp_path / "receipt.json").read_text())
    assert (document["verdict"], document["status"], document["failing_gate"]) == (
        "NOT QUALIFIED",
        "refused",
        "boot_target",
    )
    assert document["budget"]["over_limit"] is True


def test_budget_within_the_limit_boots_once_after_pricing(tmp_path: Path) -> None:
    boot = CountingBoot()
    with QualificationSession(
        tmp_path, OVER_LIMIT[:2], boot=boot, redactor=Redactor(rules=())
    ) as qualification:
        assert boot.calls == 1
        assert qualification.booted == "engine"
        assert qualification.budget.total_s == 4200
        for spec in OVER_LIMIT[:2]:
            qualification.run(spec.name, lambda: None)
    assert boot.calls == 1


def test_the_hold_limit_is_configurable(tmp_path: Path) -> None:
    boot = CountingBoot()
    session = QualificationSession(tmp_path, OVER_LIMIT[:2], boot=boot, hold_limit_s=3000)
    with pytest.raises(BudgetExceeded, match="hold limit 3000s"), session:
        pass
    assert boot.calls == 0


def test_estimate_below_the_registered_floor_is_an_error_naming_gate_value_and_floor() -> None:
    expected = "gate 'boot_target': estimated_s=5 is below the registered floor 30s for gate kind 'boot'"
    with pytest.raises(BudgetError, match=expected):
        price_gates([GateSpec("boot_target", 5, kind="boot")])


def test_floors_cannot_be_lowered_by_registration() -> None:
    with pytest.raises(BudgetError, match="would lower the registered floor 30s"):
        register_floor("boot", 1.0)
    assert GATE_FLOORS["boot"] == 30.0


def test_registering_a_new_kind_makes_it_priceable() -> None:
    register_floor("warm_swap", 20.0)
    try:
        with pytest.raises(BudgetError, match="below the registered floor 20s"):
            price_gates([GateSpec("swap", 10, kind="warm_swap")])
        assert price_gates([GateSpec("swap", 25, kind="warm_swap")]).total_s == 25
    finally:
        GATE_FLOORS.pop("warm_swap")


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        ([GateSpec("x", 5, kind="nonsense")], "unknown gate kind 'nonsense'"),
        ([GateSpec("x", -1)], "estimated_s must be a finite number"),
        ([GateSpec("x", float("nan"))], "estimated_s must be a finite number"),
        ([GateSpec("x", 5), GateSpec("x", 5)], "declared more than once: \\['x'\\]"),
        ([], "at least one gate"),
    ],
)
def test_unpriceable_gate_lists_are_errors(gates: list[GateSpec], message: str) -> None:
    with pytest.raises(BudgetError, match=message):
        price_gates(gates)


def test_previous_run_durations_price_gates_as_measured() -> None:
    lines = [
        json.dumps({"gate": "smoke", "passed": True, "duration_s": 42.5}),
        json.dumps({"gate": "eos", "passed": False, "duration_s": 1.0}),
        "not json",
    ]
    durations = measured_durations(lines)
    assert durations == {"smoke": 42.5}
    budget = price_gates(
        [GateSpec("smoke", 10, kind="smoke"), GateSpec("eos", 8, kind="eos")], 600, durations
    )
    assert [(item.gate, item.basis, item.priced_s) for item in budget.items] == [
        ("smoke", MEASURED, 42.5),
        ("eos", ESTIMATED, 8.0),
    ]


def test_a_measured_duration_below_the_floor_is_priced_at_the_floor() -> None:
    budget = price_gates([GateSpec("boot", 60, kind="boot")], 600, {"boot": 2.0})
    assert (budget.items[0].basis, budget.items[0].priced_s) == (MEASURED, 30.0)


def test_receipt_marks_each_item_estimated_or_measured_from_the_previous_run(tmp_path: Path) -> None:
    gates = (GateSpec("first", 5), GateSpec("second", 5))
    first_run: QualificationSession[None] = QualificationSession(tmp_path / "run1", gates)
    with first_run:
        first_run.run("first", lambda: None)
        first_run.run("second", lambda: None)
    history = tmp_path / "run1" / "checkpoints.jsonl"
    second_run: QualificationSession[None] = QualificationSession(
        tmp_path / "run2", (gates[0], GateSpec("third", 5)), history_path=history
    )
    with second_run:
        second_run.run("first", lambda: None)
        second_run.run("third", lambda: None)
    items = json.loads((tmp_path / "run2" / "receipt.json").read_text())["budget"]["items"]
    assert [(item["gate"], item["basis"]) for item in items] == [("first", MEASURED), ("third", ESTIMATED)]
    gates_in_receipt = json.loads((tmp_path / "run2" / "receipt.json").read_text())["gates"]
    assert [entry["basis"] for entry in gates_in_receipt] == [MEASURED, ESTIMATED]
