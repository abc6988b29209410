"""The verdict of one measurement against its ``at_least`` / ``at_most`` bounds: passed, failed
or inconclusive.

A figure with a confidence interval is judged on the interval (``decide="interval"``): for
``at_least`` it passes when the interval's low end clears the bound, fails when its high end is
below it, and is inconclusive otherwise (mirrored for ``at_most``). A spec may choose the point
value instead (``decide="point"``), and a plain number has nothing else. The recorder judges a
measurement with :func:`three_way_verdict` while the test runs; the collector and the gate judge
the recorded row again with the same function, so the record must carry the interval and rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

__all__ = [
    "DECIDE_RULES",
    "DEFAULT_CONFIDENCE_LEVEL",
    "INCONCLUSIVE_FAILURE_PREFIX",
    "Decide",
    "IntervalEstimate",
    "Threshold",
    "ThresholdVerdict",
    "Verdict",
    "check_confidence_level",
    "is_inconclusive_failure",
    "three_way_verdict",
    "threshold_verdict",
]

DEFAULT_CONFIDENCE_LEVEL = 0.95
"""The confidence level of every interval the toolkit computes unless ``--specgate-confidence-level``
(ini ``specgate_confidence_level``) says otherwise; the one place the default is spelled."""

Decide = Literal["interval", "point"]
DECIDE_RULES: tuple[Decide, ...] = get_args(Decide)
Verdict = Literal["passed", "failed", "inconclusive"]
INCONCLUSIVE_FAILURE_PREFIX = "inconclusive: "
"""How the failure of a test whose only soft-check misses are inconclusive measurements begins,
so the policy can tell "not shown either way" from "shown to miss"."""


def is_inconclusive_failure(message: str | None) -> bool:
    """Whether a test's failure message is that of inconclusive measurements only (pytest puts
    ``Failed: `` in front of the message ``pytest.fail`` was given)."""
    text = (message or "").removeprefix("Failed: ")
    return text.startswith(INCONCLUSIVE_FAILURE_PREFIX)


class IntervalEstimate(Protocol):
    """What ``evidence.measure`` accepts besides a number: a point value with its interval."""

    @property
    def point(self) -> float: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def confidence_level(self) -> float: ...


def check_confidence_level(level: float, where: str) -> float:
    """``level`` when it is a probability strictly between 0 and 1; else a one-line error."""
    if not (isinstance(level, int | float) and 0 < level < 1):
        raise ValueError(f"{where}: confidence level must be a number in (0, 1), found {level!r}")
    return float(level)


@dataclass(frozen=True)
class ThresholdVerdict:
    """``verdict`` and, unless passed, why (``reason`` names the value, interval and bound)."""

    verdict: Verdict
    reason: str | None

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"


@dataclass(frozen=True)
class Threshold:
    """Bounds on one figure, as a value: what ``run_paired(until=...)`` runs until it decides."""

    at_least: float | None = None
    at_most: float | None = None

    def __post_init__(self) -> None:
        if self.at_least is None and self.at_most is None:
            raise ValueError("threshold: give at_least, at_most or both")

    def judge(self, point: float, ci_low: float | None, ci_high: float | None) -> ThresholdVerdict:
        return three_way_verdict(point, self.at_least, self.at_most, ci_low, ci_high, "interval")

    def describe(self) -> str:
        parts = [f"at_least={self.at_least:g}"] if self.at_least is not None else []
        parts += [f"at_most={self.at_most:g}"] if self.at_most is not None else []
        return ", ".join(parts)


_PASSED = ThresholdVerdict("passed", None)


def _interval_text(ci_low: float | None, ci_high: float | None) -> str:
    low = "-inf" if ci_low is None else f"{ci_low:g}"
    high = "+inf" if ci_high is None else f"{ci_high:g}"
    return f"[{low}, {high}]"


def three_way_verdict(
    value: float,
    at_least: float | None,
    at_most: float | None,
    ci_low: float | None = None,
    ci_high: float | None = None,
    decide: Decide = "point",
) -> ThresholdVerdict:
    """Judge ``value`` (``decide="point"``) or its interval (``decide="interval"``) against the bounds.

    A missing end of an interval is unbounded on that side (no evidence either way there); a NaN
    anywhere meets no bound. Failed outranks inconclusive when two bounds disagree.
    """
    if at_least is None and at_most is None:
        return _PASSED
    if math.isnan(value):
        return ThresholdVerdict("failed", "is not a number")
    if decide == "point":
        missed = threshold_verdict(value, at_least, at_most)
        return _PASSED if missed is None else ThresholdVerdict("failed", missed)
    low = -math.inf if ci_low is None else ci_low
    high = math.inf if ci_high is None else ci_high
    if math.isnan(low) or math.isnan(high):
        return ThresholdVerdict("failed", "has an interval that is not a number")
    interval = _interval_text(ci_low, ci_high)
    failures: list[str] = []
    unsure: list[str] = []
    if at_least is not None:
        if high < at_least:
            failures.append(f"has its whole interval {interval} below at_least={at_least:g}")
        elif not low >= at_least:
            unsure.append(f"has an interval {interval} that straddles at_least={at_least:g}")
    if at_most is not None:
        if low > at_most:
            failures.append(f"has its whole interval {interval} above at_most={at_most:g}")
        elif not high <= at_most:
            unsure.append(f"has an interval {interval} that straddles at_most={at_most:g}")
    if failures:
        return ThresholdVerdict("failed", "; ".join(failures))
    if unsure:
        return ThresholdVerdict("inconclusive", "; ".join(unsure))
    return _PASSED


def threshold_verdict(value: float, at_least: float | None, at_most: float | None) -> str | None:
    """Why ``value`` misses its bounds, or None when it meets them (NaN meets no bound)."""
    if at_least is None and at_most is None:
        return None
    if math.isnan(value):
        return "is not a number"
    if at_least is not None and not value >= at_least:
        return f"is below at_least={at_least:g}"
    if at_most is not None and not value <= at_most:
        return f"is above at_most={at_most:g}"
    return None
