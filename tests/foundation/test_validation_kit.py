"""The validation kit and its one error type: what counts as a number, and where a bad input ends up."""

from __future__ import annotations

import math

import pytest

from pytest_specgate import cli
from pytest_specgate.contracts import validation
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.gates import DeclaredGatesError
from pytest_specgate.contracts.hardware import RequirementError
from pytest_specgate.contracts.host import HostFactsError
from pytest_specgate.evidence._gate import GateInputError
from pytest_specgate.measure import FixtureFileError
from pytest_specgate.qualification import BudgetError


@pytest.mark.parametrize(
    ("value", "real", "whole", "count", "finite", "positive", "fraction"),
    [
        (True, False, False, False, False, False, False),
        (1, True, True, True, True, True, True),
        (0, True, True, False, True, False, True),
        (2.5, True, False, False, True, True, False),
        (-1.0, True, False, False, True, False, False),
        (math.nan, True, False, False, False, False, False),
        (math.inf, True, False, False, False, False, False),
        ("1", False, False, False, False, False, False),
        (None, False, False, False, False, False, False),
    ],
)
def test_one_set_of_number_predicates(
    value: object, real: bool, whole: bool, count: bool, finite: bool, positive: bool, fraction: bool
) -> None:
    assert (
        validation.is_real(value),
        validation.is_whole(value),
        validation.is_count(value),
        validation.is_finite_number(value),
        validation.is_finite_positive(value),
        validation.is_fraction(value),
    ) == (real, whole, count, finite, positive, fraction)


def test_is_count_takes_a_minimum() -> None:
    assert validation.is_count(2, 2) and not validation.is_count(1, 2) and validation.is_count(0, 0)


def test_the_validation_kit_raises_the_one_input_error() -> None:
    assert not hasattr(validation, "InputError")
    with pytest.raises(SpecgateInputError, match=r"^cfg: JSON nested deeper than 2 levels$"):
        validation.parse_json("[[[]]]", "cfg", max_depth=2)


def test_a_mismatch_names_where_what_was_expected_and_what_was_found() -> None:
    error = SpecgateInputError.mismatch("--specgate-timeout", "a number of seconds > 0", "soon")

    assert str(error) == "--specgate-timeout: expected a number of seconds > 0, found 'soon'"
    assert (error.where, error.expected) == ("--specgate-timeout", "a number of seconds > 0")
    assert error.found == "'soon'"


@pytest.mark.parametrize(
    "reader_error",
    [HostFactsError, RequirementError, BudgetError, GateInputError, DeclaredGatesError, FixtureFileError],
)
def test_every_readers_error_is_the_one_input_error(reader_error: type[Exception]) -> None:
    assert issubclass(reader_error, SpecgateInputError)


def test_the_cli_turns_an_input_error_no_command_worded_into_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(args: object) -> int:
        raise SpecgateInputError.mismatch("--pyproject", "a TOML file", "a directory")

    monkeypatch.setattr(cli, "_run_hosts", refuse)

    assert cli.main(["hosts"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "specgate hosts: --pyproject: expected a TOML file, found 'a directory'\n"
    assert captured.out == ""



def test_parse_json_refuses_depth_past_the_bound_and_reads_brackets_in_strings_as_text() -> None:
    """The walk is skipped only where the brackets cannot nest past the bound; brackets inside
    strings count towards that quick bound, never towards the depth."""
    assert validation.parse_json('[[["{[{["]]]', "cfg", max_depth=3) == [[["{[{["]]]
    with pytest.raises(validation.JsonNestingError, match="nested deeper than 3"):
        validation.parse_json('[[[["{"]]]]', "cfg", max_depth=3)
    with pytest.raises(validation.JsonNestingError, match="nested deeper than 3"):
        validation.parse_json('[[[{"a": 1}]]]', "cfg", max_depth=3)
