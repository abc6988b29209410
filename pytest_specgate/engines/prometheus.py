"""Prometheus text exposition parsing: the one parser every backend's ``/metrics`` goes through.

Each sample line is read by ``prometheus_client``'s own text parser (escaped quotes,
backslashes and newlines in label values, timestamps, ``NaN`` and ``±Inf``). It is given
one line at a time, without the ``# TYPE`` lines: that is what lets an error name the line,
and it keeps every sample under the name the server wrote (given a counter's type, the
parser renames a sample without ``_total`` to ``<name>_total``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MetricsParseError",
    "Sample",
    "metric_totals",
    "parse_prometheus_text",
]


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


def _parse_sample(line: str, line_no: int) -> Sample:
    from prometheus_client.parser import text_string_to_metric_families

    try:
        samples = [sample for family in text_string_to_metric_families(line + "\n")
                   for sample in family.samples]
    except ValueError as error:
        problem = str(error) or "not a sample"
        raise MetricsParseError(f"/metrics line {line_no}: {problem} in {line!r}") from None
    if len(samples) != 1:
        raise MetricsParseError(f"/metrics line {line_no}: expected one sample in {line!r}")
    (sample,) = samples
    return Sample(sample.name, tuple(sorted(sample.labels.items())), float(sample.value))


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
