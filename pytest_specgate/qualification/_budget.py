"""Pricing a qualification before anything boots.

A qualification that cannot finish inside the hold limit wastes the machine it
holds (a 16 GB laptop, a shared GB10), so the whole run is priced first and
refused up front. Each gate kind has a registered floor: configuration may raise
an estimate but never price a gate below what it is known to cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import is_finite_number, is_real, parse_json

__all__ = [
    "DEFAULT_HOLD_LIMIT_S",
    "ESTIMATED",
    "GATE_FLOORS",
    "MEASURED",
    "Budget",
    "BudgetError",
    "BudgetExceeded",
    "BudgetItem",
    "GateSpec",
    "measured_durations",
    "price_gates",
    "read_measured_durations",
    "register_floor",
]

DEFAULT_HOLD_LIMIT_S: Final = 85 * 60.0
ESTIMATED: Final = "ESTIMATED"
MEASURED: Final = "MEASURED"
LARGEST_ITEMS_SHOWN: Final = 3

GATE_FLOORS: dict[str, float] = {
    "custom": 1.0,
    "boot": 30.0,
    "smoke": 5.0,
    "greedy": 5.0,
    "fault": 5.0,
    "eos": 5.0,
    "measure": 60.0,
}
"""Minimum seconds a gate of each kind is priced at; see :func:`register_floor`."""


class BudgetError(SpecgateInputError):
    """A gate list that cannot be priced (unknown kind, bad number, estimate under its floor)."""


class BudgetExceeded(Exception):
    """The priced total is over the hold limit: the session refuses before booting anything."""

    def __init__(self, budget: Budget) -> None:
        super().__init__(budget.refusal())
        self.budget = budget


def register_floor(kind: str, minimum_s: float) -> None:
    """Register (or raise) the floor for a gate kind; a floor is never lowered."""
    if not kind or not isinstance(kind, str):
        raise BudgetError(f"gate kind must be a non-empty string, found {kind!r}")
    _check_seconds(f"floor for gate kind {kind!r}", minimum_s)
    current = GATE_FLOORS.get(kind)
    if current is not None and minimum_s < current:
        raise BudgetError(
            f"floor for gate kind {kind!r}: {minimum_s:g}s would lower the registered floor {current:g}s"
        )
    GATE_FLOORS[kind] = float(minimum_s)


def _check_seconds(what: str, value: object) -> float:
    if not is_finite_number(value) or value < 0:
        raise BudgetError(f"{what} must be a finite number of seconds >= 0, found {value!r}")
    return float(value)


@dataclass(frozen=True)
class GateSpec:
    """One declared gate: its name (also its evidence file name), cost estimate and kind."""

    name: str
    estimated_s: float
    kind: str = "custom"


@dataclass(frozen=True)
class BudgetItem:
    """What one gate is priced at and why (``basis`` ESTIMATED or MEASURED)."""

    gate: str
    kind: str
    estimated_s: float
    floor_s: float
    measured_s: float | None
    priced_s: float
    basis: Literal["ESTIMATED", "MEASURED"]

    def to_dict(self) -> dict[str, object]:
        return {
            "gate": self.gate,
            "kind": self.kind,
            "estimated_s": self.estimated_s,
            "floor_s": self.floor_s,
            "measured_s": self.measured_s,
            "priced_s": self.priced_s,
            "basis": self.basis,
        }


@dataclass(frozen=True)
class Budget:
    items: tuple[BudgetItem, ...]
    hold_limit_s: float

    @property
    def total_s(self) -> float:
        return sum(item.priced_s for item in self.items)

    @property
    def over_limit(self) -> bool:
        return self.total_s > self.hold_limit_s

    def largest(self, count: int = LARGEST_ITEMS_SHOWN) -> tuple[BudgetItem, ...]:
        return tuple(sorted(self.items, key=lambda item: (-item.priced_s, item.gate))[:count])

    def refusal(self) -> str:
        shown = ", ".join(f"{item.gate} {_minutes(item.priced_s)} ({item.basis})" for item in self.largest())
        return (
            f"qualification refused before boot: priced total {_minutes(self.total_s)} exceeds the hold "
            f"limit {_minutes(self.hold_limit_s)}; largest items: {shown}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "total_s": self.total_s,
            "hold_limit_s": self.hold_limit_s,
            "over_limit": self.over_limit,
            "items": [item.to_dict() for item in self.items],
        }


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f}s ({seconds / 60:.1f} min)"


def _price(gate: GateSpec, measured: Mapping[str, float]) -> BudgetItem:
    if not isinstance(gate.name, str) or not gate.name:
        raise BudgetError(f"gate name must be a non-empty string, found {gate.name!r}")
    estimated = _check_seconds(f"gate {gate.name!r}: estimated_s", gate.estimated_s)
    floor = GATE_FLOORS.get(gate.kind)
    if floor is None:
        raise BudgetError(
            f"gate {gate.name!r}: unknown gate kind {gate.kind!r}; registered kinds: {sorted(GATE_FLOORS)}"
        )
    if estimated < floor:
        raise BudgetError(
            f"gate {gate.name!r}: estimated_s={estimated:g} is below the registered floor {floor:g}s "
            f"for gate kind {gate.kind!r}; a floor cannot be lowered by configuration"
        )
    previous = measured.get(gate.name)
    if previous is not None:
        return BudgetItem(gate.name, gate.kind, estimated, floor, previous, max(previous, floor), MEASURED)
    return BudgetItem(gate.name, gate.kind, estimated, floor, None, estimated, ESTIMATED)


def price_gates(
    gates: Sequence[GateSpec],
    hold_limit_s: float = DEFAULT_HOLD_LIMIT_S,
    measured: Mapping[str, float] | None = None,
) -> Budget:
    """Price every gate; a gate measured in a previous run is priced at that duration."""
    _check_seconds("hold_limit_s", hold_limit_s)
    if not gates:
        raise BudgetError("a qualification needs at least one gate")
    names = [gate.name for gate in gates]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise BudgetError(f"gate names must be unique; declared more than once: {duplicates}")
    known = measured or {}
    return Budget(tuple(_price(gate, known) for gate in gates), float(hold_limit_s))


def measured_durations(checkpoint_lines: Iterable[str]) -> dict[str, float]:
    """Durations of gates that passed, from a previous run's ``checkpoints.jsonl`` (last one wins).

    Failed gates are ignored: a gate that died early says nothing about what it costs.
    """
    durations: dict[str, float] = {}
    for line in checkpoint_lines:
        try:
            entry = parse_json(line, "checkpoints.jsonl")
        except SpecgateInputError:
            continue
        if not isinstance(entry, dict) or entry.get("passed") is not True:
            continue
        gate, duration = entry.get("gate"), entry.get("duration_s")
        if isinstance(gate, str) and is_real(duration):
            durations[gate] = float(duration)
    return durations


def read_measured_durations(path: Path | None) -> dict[str, float]:
    if path is None or not path.is_file():
        return {}
    return measured_durations(path.read_text(encoding="utf-8", errors="replace").splitlines())
