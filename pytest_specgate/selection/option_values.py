"""Converters of the plugin's typed options: ``addoption(type=...)`` calls them on the command
line's text, and ``settings`` on the ini value when the option is absent (pytest before 8.4
has no float ini type, and the package supports 8.2).

They raise ``argparse.ArgumentTypeError``: pytest prints its text after ``argument
--specgate-x:``, so the message names the option and the value. Values stay plain data
(numbers, tuples, JSON): xdist ships the option namespace to its workers.
"""

from __future__ import annotations

from argparse import ArgumentTypeError

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.thresholds import check_confidence_level
from pytest_specgate.contracts.validation import JsonNestingError, is_finite_positive, parse_json

__all__ = ["confidence_level", "duration_scale", "engine_option"]


def duration_scale(text: str) -> float:
    """``--specgate-duration-scale``: a finite number > 0."""
    try:
        scale = float(text)
    except ValueError:
        raise ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not is_finite_positive(scale):
        raise ArgumentTypeError(f"expected a finite number > 0, got {scale}")
    return scale


def confidence_level(text: str) -> float:
    """``--specgate-confidence-level``: a probability strictly between 0 and 1."""
    try:
        return check_confidence_level(float(text), "--specgate-confidence-level")
    except ValueError:
        raise ArgumentTypeError(f"expected a number between 0 and 1 (e.g. 0.95), got {text!r}") from None


def engine_option(text: str) -> tuple[str, object]:
    """``alpha=0.3`` -> ``("alpha", 0.3)``: VALUE read as JSON when it parses, else kept as text;
    JSON nested too deep is refused, not kept as text."""
    key, sep, value_text = text.partition("=")
    if not sep or not key.strip():
        raise ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value: object = parse_json(value_text, key.strip())
    except JsonNestingError as exc:
        raise ArgumentTypeError(str(exc)) from None
    except SpecgateInputError:
        value = value_text
    return key.strip(), value
