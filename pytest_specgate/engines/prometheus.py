"""Prometheus text exposition parsing: the one parser every backend's ``/metrics`` goes through.

Label values may hold escaped quotes, backslashes and newlines, samples may
carry a timestamp, and values may be ``NaN`` or ``±Inf``; a line that is none
of that is an error quoting the line rather than a silently wrong figure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MetricsParseError",
    "Sample",
    "metric_totals",
    "parse_prometheus_text",
]

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|\})')
_ESCAPES: Final = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_SPECIAL_VALUES: Final = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}


class MetricsParseError(ValueError):
    """A ``/metrics`` line is not Prometheus text format; the message quotes it."""


@dataclass(frozen=True)
class Sample:
    """One sample line: ``name{labels} value``."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        for name, value in self.labels:
            if name == key:
                return value
        return None


def _unescape(raw: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)], raw)


def _parse_value(token: str, line_no: int, line: str) -> float:
    if token in _SPECIAL_VALUES:
        return _SPECIAL_VALUES[token]
    try:
        return float(token)
    except ValueError:
        raise MetricsParseError(
            f"/metrics line {line_no}: value {token!r} is not a number in {line!r}"
        ) from None


def _parse_labels(text: str, line_no: int, line: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """Labels from just after ``{`` up to ``}``; returns them and the rest of the line."""
    labels: list[tuple[str, str]] = []
    position = 0
    if text.lstrip().startswith("}"):
        return (), text.lstrip()[1:]
    while True:
        match = _LABEL.match(text, position)
        if match is None:
            raise MetricsParseError(f"/metrics line {line_no}: malformed labels in {line!r}")
        labels.append((match.group(1), _unescape(match.group(2))))
        position = match.end()
        if match.group(3) == "}":
            return tuple(sorted(labels)), text[position:]
        if text[position:].lstrip().startswith("}"):
            return tuple(sorted(labels)), text[position:].lstrip()[1:]


def _parse_sample(line: str, line_no: int) -> Sample:
    name_match = _METRIC_NAME.match(line)
    if name_match is None:
        raise MetricsParseError(f"/metrics line {line_no}: no metric name in {line!r}")
    rest = line[name_match.end() :]
    labels: tuple[tuple[str, str], ...] = ()
    if rest.startswith("{"):
        labels, rest = _parse_labels(rest[1:], line_no, line)
    tokens = rest.split()
    if not tokens or len(tokens) > 2:
        raise MetricsParseError(
            f"/metrics line {line_no}: expected 'value [timestamp]' after the name in {line!r}"
        )
    return Sample(name_match.group(0), labels, _parse_value(tokens[0], line_no, line))


def parse_prometheus_text(text: str) -> tuple[Sample, ...]:
    """Every sample in a Prometheus text exposition (``# HELP``/``# TYPE`` lines skipped)."""
    samples: list[Sample] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        samples.append(_parse_sample(line, line_no))
    return tuple(samples)


def metric_totals(text: str) -> dict[str, float]:
    """Each metric's samples summed over their labels: enough to read a counter or a gauge."""
    totals: dict[str, float] = {}
    for sample in parse_prometheus_text(text):
        totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals
