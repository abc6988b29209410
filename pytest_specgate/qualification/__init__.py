"""Qualification sessions: ordered gates priced before start, fault gates and the EOS gate.

A serving team qualifies an engine+model pair by running an ordered list of
gates inside one spec; the receipt names the failing gate at every moment and
only says QUALIFIED once every gate passed and its evidence is unchanged.
"""

from __future__ import annotations

from pytest_specgate.qualification._budget import (
    DEFAULT_HOLD_LIMIT_S,
    ESTIMATED,
    GATE_FLOORS,
    MEASURED,
    Budget,
    BudgetError,
    BudgetExceeded,
    BudgetItem,
    GateSpec,
    measured_durations,
    price_gates,
    register_floor,
)
from pytest_specgate.qualification._eos import EosNotRespected, EosPath, eos_gate
from pytest_specgate.qualification._faults import (
    FAULT_GATES,
    GREEDY_PROMPTS,
    ClientFaultInjector,
    CounterProbe,
    CounterReading,
    FaultGates,
    FaultInjector,
    FaultObservation,
    GreedyOutput,
    HttpCounterProbe,
    MockFaultInjector,
    RecoveryNotEvidenced,
    compare_greedy,
    fault_gate_specs,
    injector_for,
)
from pytest_specgate.qualification._fixtures import (
    QUALIFICATION_DIR_NAME,
    QualificationFactory,
    qualification_directories,
    qualification_factory,
)
from pytest_specgate.qualification._session import (
    CHECKPOINTS_NAME,
    RECEIPT_NAME,
    GateRecorder,
    NoteTaker,
    NotQualified,
    QualificationError,
    QualificationSession,
    QualificationVerdict,
)

__all__ = [
    "CHECKPOINTS_NAME",
    "DEFAULT_HOLD_LIMIT_S",
    "ESTIMATED",
    "FAULT_GATES",
    "GATE_FLOORS",
    "GREEDY_PROMPTS",
    "MEASURED",
    "QUALIFICATION_DIR_NAME",
    "RECEIPT_NAME",
    "Budget",
    "BudgetError",
    "BudgetExceeded",
    "BudgetItem",
    "ClientFaultInjector",
    "CounterProbe",
    "CounterReading",
    "EosNotRespected",
    "EosPath",
    "FaultGates",
    "FaultInjector",
    "FaultObservation",
    "GateRecorder",
    "GateSpec",
    "GreedyOutput",
    "HttpCounterProbe",
    "MockFaultInjector",
    "NotQualified",
    "NoteTaker",
    "QualificationError",
    "QualificationFactory",
    "QualificationSession",
    "QualificationVerdict",
    "RecoveryNotEvidenced",
    "compare_greedy",
    "eos_gate",
    "fault_gate_specs",
    "injector_for",
    "measured_durations",
    "price_gates",
    "qualification_directories",
    "qualification_factory",
    "register_floor",
]
