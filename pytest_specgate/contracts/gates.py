"""Merge-gate names and their order.

A waiver moves an AC to a later gate; the gate refuses a waiver that is due. That needs a
total order, so only two families are accepted: ``PR-<letters>`` (PR-A < PR-B < ... < PR-Z <
PR-AA, like spreadsheet columns) and ``PR-<n>`` (numeric). The families do not compare with
each other: mixing them is an error rather than a guess.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Literal

from pytest_specgate.contracts.errors import SpecgateInputError

_GATE = re.compile(r"^PR-(?:(?P<letters>[A-Z]+)|(?P<number>\d+))$", re.IGNORECASE)
GATE_FORMS = "PR-<letters> (PR-A, PR-B, ...) or PR-<n> (PR-1, PR-2, ...)"


class GateOrderError(ValueError):
    """Two gate names that cannot be put in order."""


@dataclass(frozen=True)
class GateName:
    text: str
    family: Literal["letters", "number"]
    rank: int

    def is_later_than(self, other: GateName) -> bool:
        if self.family != other.family:
            raise GateOrderError(
                f"cannot order gate {self.text!r} against {other.text!r}: "
                "PR-<letters> and PR-<n> gates do not compare"
            )
        return self.rank > other.rank


def parse_gate_name(text: str) -> GateName:
    """Parse ``PR-C`` / ``PR-12``; raise :class:`ValueError` naming the accepted forms."""
    match = _GATE.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"gate name {text!r} is not orderable: expected {GATE_FORMS}")
    letters = match.group("letters")
    if letters is not None:
        rank = 0
        for letter in letters.upper():
            rank = rank * 26 + (ord(letter) - ord("A") + 1)
        return GateName(text=f"PR-{letters.upper()}", family="letters", rank=rank)
    return GateName(text=f"PR-{int(match.group('number'))}", family="number", rank=int(match.group("number")))


class DeclaredGatesError(SpecgateInputError):
    """A ``[tool.specgate] gates`` list that does not declare an order of merge gates."""


def declared_gates(value: object, where: str) -> tuple[GateName, ...]:
    """``[tool.specgate] gates = ["PR-A", "PR-B", "PR-C"]``: the project's merge gates, in order.

    The list must be strictly ascending in one family, so the declared order and the order of
    the names never disagree.
    """
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise DeclaredGatesError(
            f"{where}: [tool.specgate] gates must be a non-empty list of gate names, found {value!r}"
        )
    try:
        gates = tuple(parse_gate_name(item) for item in value)
        for earlier, later in itertools.pairwise(gates):
            if not later.is_later_than(earlier):
                raise DeclaredGatesError(
                    f"{where}: [tool.specgate] gates must be in merge order, "
                    f"but {later.text} follows {earlier.text}"
                )
    except ValueError as error:
        if isinstance(error, DeclaredGatesError):
            raise
        raise DeclaredGatesError(f"{where}: [tool.specgate] gates: {error}") from None
    return gates


def undeclared_gate_problem(name: str, gates: tuple[GateName, ...], where: str) -> str | None:
    """Why ``name`` is not one of the declared gates (naming them and where they live), else None."""
    if any(gate.text == name for gate in gates):
        return None
    if not gates:
        return f"{name} is not a declared gate: {where} declares no [tool.specgate] gates"
    listed = ", ".join(gate.text for gate in gates)
    return f"{name} is not a declared gate; {where} declares [tool.specgate] gates = {listed}"
