from __future__ import annotations

from typing import Any

import pytest

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.evidence import (
    AC_MARKER_LINE,
    AcceptanceCriterion,
    GateOrderError,
    ac_from_marker,
    parse_gate_name,
)

NODE = "acceptance/test_ac10.py::test_speedup"


def test_full_marker_becomes_a_frozen_criterion() -> None:
    ac = ac_from_marker(
        ("AC-10",), {"spec": "SPEC-028", "title": "canary", "waived_to": "pr-c", "reason": "no M4 yet"}, NODE
    )
    assert ac == AcceptanceCriterion("AC-10", "SPEC-028", "canary", "PR-C", "no M4 yet")
    assert ac.to_dict()["waived_to"] == "PR-C"
    with pytest.raises(AttributeError):
        ac.id = "AC-11"  # type: ignore[misc]


@pytest.mark.parametrize("ac_id", ["AC-10", "AC-9a", "FR-3", "FR-2.1"])
def test_accepted_ids(ac_id: str) -> None:
    assert ac_from_marker((ac_id,), {}, NODE).id == ac_id


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((), {}, "exactly one positional AC id, found 0"),
        (("AC-10", "AC-11"), {}, "found 2"),
        (("AC10",), {}, "AC id 'AC10' must look like AC-<n>[a-z] or FR-<n>[.<n>]"),
        (("ac-10",), {}, "AC id 'ac-10'"),
        (("AC-10A",), {}, "AC id 'AC-10A'"),
        ((10,), {}, "AC id 10"),
        (("AC-10",), {"owner": "me"}, "unknown keyword owner="),
        (("AC-10",), {"waived_to": "PR-C"}, "waived_to='PR-C' needs reason="),
        (("AC-10",), {"reason": "later"}, "reason= is only meaningful together with waived_to="),
        (("AC-10",), {"waived_to": "release-2", "reason": "x"}, "gate name 'release-2' is not orderable"),
        (("AC-10",), {"spec": 28}, "spec= must be a non-empty string, found 28"),
        (("AC-10",), {"title": "  "}, "title= must be a non-empty string"),
    ],
)
def test_bad_marker_arguments_name_test_marker_and_argument(
    args: tuple[Any, ...], kwargs: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SpecgateInputError) as raised:
        ac_from_marker(args, kwargs, NODE)
    assert str(raised.value).startswith(f"{NODE}: @pytest.mark.ac: ")
    assert expected in str(raised.value)


def test_marker_line_documents_the_signature() -> None:
    assert AC_MARKER_LINE.startswith("ac(id, *, spec=None, title=None, waived_to=None, reason=None): ")


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("PR-A", "PR-B"),
        ("PR-B", "pr-c"),
        ("PR-Z", "PR-AA"),
        ("PR-AZ", "PR-BA"),
        ("PR-2", "PR-10"),
        ("PR-9", "PR-10"),
    ],
)
def test_gate_order(earlier: str, later: str) -> None:
    assert parse_gate_name(later).is_later_than(parse_gate_name(earlier))
    assert not parse_gate_name(earlier).is_later_than(parse_gate_name(later))
    assert not parse_gate_name(later).is_later_than(parse_gate_name(later))


def test_letter_and_number_gates_do_not_compare() -> None:
    with pytest.raises(GateOrderError, match="cannot order gate 'PR-3' against 'PR-C'"):
        parse_gate_name("PR-3").is_later_than(parse_gate_name("PR-C"))


@pytest.mark.parametrize("name", ["PR", "PR-", "PR-C1", "release-2", "PR-c-2", ""])
def test_unorderable_gate_names(name: str) -> None:
    with pytest.raises(ValueError, match="is not orderable"):
        parse_gate_name(name)
