"""``specgate compare BASE NEW``: a PR's figures against the base branch's, per AC and measurement.

pytest-benchmark has ``--benchmark-compare`` and asv has ``compare``; a release manager needs the
same for evidence: did this PR make the speedup worse, or is the difference noise? A change counts
only where it lies outside the measurement's confidence interval (the base run's, else the new
run's); where neither record states one, a change counts when it exceeds the tolerance. Its
direction comes from the measurement's bound: ``at_least`` means higher is better, ``at_most``
lower; a figure with no bound (or both) can change but never regress. A regression larger than
the tolerance makes the command exit 1.

An interval is read from the record, never computed here: the measurement's own (recorded with
``evidence.measure`` of an estimate), else measurements ``NAME_ci95_low`` and ``NAME_ci95_high``
of the same test, or a note ``NAME_estimate`` (or ``NAME``) holding ``ci_low`` and ``ci_high``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import AcRecord, Measurement

COMPARE_SCHEMA_ID = "specgate.compare/1"
DEFAULT_TOLERANCE = 0.05
"""A relative change (5%): what counts where no interval is recorded, and the size a regression
must exceed to fail the command."""
_CI_SUFFIXES = ("_ci95_low", "_ci95_high")
_ESTIMATE_SUFFIX = "_estimate"

Better = Literal["higher", "lower"]
IntervalFrom = Literal["base", "new"]


class Change(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    CHANGED = "changed"
    """Outside the interval (or the tolerance), but the figure has no direction (no single bound)."""
    NO_CHANGE = "no change"
    ONLY_IN_BASE = "only in base"
    ONLY_IN_NEW = "only in new"
    NOT_A_NUMBER = "not a number"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    of: IntervalFrom
    source: str

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class BundleSide:
    """Which bundle a side of the comparison is: printed so a reader can tell base from new."""

    run_id: str
    bundle_sha256: str
    commits: tuple[str, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {"run_id": self.run_id, "bundle_sha256": self.bundle_sha256, "commits": list(self.commits)}


@dataclass(frozen=True)
class MeasurementChange:
    ac_id: str
    nodeid: str
    name: str
    unit: str | None
    base: float | str | None
    new: float | str | None
    better: Better | None
    interval: Interval | None
    change: Change
    relative: float | None
    """``new / base - 1``; None when either is missing or not a number, or base is 0."""
    beyond_tolerance: bool

    @property
    def ratio(self) -> float | None:
        return None if self.relative is None else self.relative + 1

    @property
    def fails(self) -> bool:
        return self.change is Change.REGRESSION and self.beyond_tolerance


@dataclass(frozen=True)
class Comparison:
    base: BundleSide
    new: BundleSide
    tolerance: float
    changes: tuple[MeasurementChange, ...]

    @property
    def failing(self) -> tuple[MeasurementChange, ...]:
        return tuple(change for change in self.changes if change.fails)

    def count(self, kind: Change) -> int:
        return sum(1 for change in self.changes if change.change is kind)


def _number(value: float | str | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _better(row: Measurement) -> Better | None:
    if (row.at_least is None) == (row.at_most is None):
        return None
    return "higher" if row.at_least is not None else "lower"


def _interval_bounds(record: AcRecord, row: Measurement) -> tuple[float, float, str] | None:
    if row.ci_low is not None and row.ci_high is not None:
        level = "" if row.confidence_level is None else f" ({row.confidence_level:.0%})"
        return row.ci_low, row.ci_high, f"the measurement's interval{level}"
    siblings = {
        other.name: _number(other.value) for other in record.measurements if other.nodeid == row.nodeid
    }
    low, high = (siblings.get(row.name + suffix) for suffix in _CI_SUFFIXES)
    if low is not None and high is not None:
        return low, high, f"measurements {row.name}{_CI_SUFFIXES[0]}/{_CI_SUFFIXES[1][1:]}"
    test = next((test for test in record.tests if test.nodeid == row.nodeid), None)
    notes = (test.notes if test is not None else None) or {}
    for key in (row.name + _ESTIMATE_SUFFIX, row.name):
        note = notes.get(key)
        if isinstance(note, Mapping):
            low, high = _number(note.get("ci_low")), _number(note.get("ci_high"))
            if low is not None and high is not None:
                return low, high, f"note {key}"
    return None


def _interval(base: AcRecord | None, base_row: Measurement | None,
              new: AcRecord | None, new_row: Measurement | None) -> Interval | None:
    """The base run's interval where it states one (the reference), else the new run's."""
    sides: tuple[tuple[IntervalFrom, AcRecord | None, Measurement | None], ...] = (
        ("base", base, base_row), ("new", new, new_row)
    )
    for side, record, row in sides:
        found = None if record is None or row is None else _interval_bounds(record, row)
        if found is not None:
            low, high, source = found
            return Interval(min(low, high), max(low, high), side, source)
    return None


def _classify(base: float, new: float, better: Better | None, interval: Interval | None,
              tolerance: float) -> tuple[Change, float | None, bool]:
    relative = None if base == 0 else new / base - 1
    beyond = (new != base) if relative is None else abs(relative) > tolerance
    # The base run's interval is the reference: the new figure must leave it (or, with only the new
    # run's interval, the base figure must lie outside that).
    reference = new if interval is not None and interval.of == "base" else base
    outside = beyond if interval is None else not interval.contains(reference)
    if not outside or new == base:
        return Change.NO_CHANGE, relative, beyond
    if better is None:
        return Change.CHANGED, relative, beyond
    worse = new < base if better == "higher" else new > base
    return (Change.REGRESSION if worse else Change.IMPROVEMENT), relative, beyond


def _interval_names(record: AcRecord) -> set[tuple[str, str]]:
    """Measurements that are another measurement's interval bound: shown as its interval instead."""
    names = {(row.nodeid, row.name) for row in record.measurements}
    return {
        (nodeid, name + suffix)
        for nodeid, name in names
        for suffix in _CI_SUFFIXES
        if (nodeid, name + _CI_SUFFIXES[0]) in names and (nodeid, name + _CI_SUFFIXES[1]) in names
    }


def _rows(record: AcRecord | None) -> dict[tuple[str, str], Measurement]:
    if record is None:
        return {}
    skip = _interval_names(record)
    rows: dict[tuple[str, str], Measurement] = {}
    for row in record.measurements:
        if (row.nodeid, row.name) not in skip:
            rows.setdefault((row.nodeid, row.name), row)
    return rows


def _compare_ac(ac_id: str, base: AcRecord | None, new: AcRecord | None,
                tolerance: float) -> list[MeasurementChange]:
    base_rows, new_rows = _rows(base), _rows(new)
    changes = []
    for key in [*base_rows, *(key for key in new_rows if key not in base_rows)]:
        base_row, new_row = base_rows.get(key), new_rows.get(key)
        shown = new_row if new_row is not None else base_rows[key]
        better = _better(shown)
        interval = _interval(base, base_row, new, new_row)
        base_value = None if base_row is None else base_row.value
        new_value = None if new_row is None else new_row.value
        relative: float | None = None
        beyond = False
        if base_row is None:
            change = Change.ONLY_IN_NEW
        elif new_row is None:
            change = Change.ONLY_IN_BASE
        else:
            base_number, new_number = _number(base_row.value), _number(new_row.value)
            if base_number is None or new_number is None:
                change = Change.NO_CHANGE if base_row.value == new_row.value else Change.NOT_A_NUMBER
            else:
                change, relative, beyond = _classify(base_number, new_number, better, interval, tolerance)
        changes.append(MeasurementChange(
            ac_id=ac_id, nodeid=key[0], name=key[1], unit=shown.unit, base=base_value, new=new_value,
            better=better, interval=interval, change=change, relative=relative, beyond_tolerance=beyond,
        ))
    return changes


def compare_records(base: Mapping[str, AcRecord], new: Mapping[str, AcRecord], base_side: BundleSide,
                    new_side: BundleSide, tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    """Every measurement of every AC in either bundle, ACs and tests in a stable order."""
    changes = [
        change
        for ac_id in sorted(set(base) | set(new))
        for change in _compare_ac(ac_id, base.get(ac_id), new.get(ac_id), tolerance)
    ]
    return Comparison(base=base_side, new=new_side, tolerance=tolerance, changes=tuple(changes))


def bundle_side(run_id: str, bundle_sha256: str, records: Mapping[str, AcRecord]) -> BundleSide:
    commits = sorted({record.source.commit for record in records.values() if record.source.commit})
    return BundleSide(run_id=run_id, bundle_sha256=bundle_sha256, commits=tuple(commits))


def comparison_json(comparison: Comparison) -> dict[str, JsonValue]:
    """``specgate compare --json``: the versioned shape documented in docs/gate.md."""
    return {
        "schema": COMPARE_SCHEMA_ID,
        "base": comparison.base.to_json(),
        "new": comparison.new.to_json(),
        "tolerance": comparison.tolerance,
        "regressions_beyond_tolerance": len(comparison.failing),
        "counts": {kind.value: comparison.count(kind) for kind in Change},
        "measurements": [
            {
                "ac": change.ac_id,
                "test": change.nodeid,
                "measurement": change.name,
                "unit": change.unit,
                "base": change.base,
                "new": change.new,
                "ratio": change.ratio,
                "better": change.better,
                "interval": None if change.interval is None else {
                    "low": change.interval.low,
                    "high": change.interval.high,
                    "of": change.interval.of,
                    "source": change.interval.source,
                },
                "change": change.change.value,
                "beyond_tolerance": change.beyond_tolerance,
            }
            for change in comparison.changes
        ],
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value(value: float | str | None, unit: str | None) -> str:
    if value is None:
        return "—"
    shown = f"{value:.4g}" if isinstance(value, float) else str(value)
    return _cell(f"{shown} {unit}" if unit else shown)


def _short(side: BundleSide) -> str:
    commits = ", ".join(commit[:12] for commit in side.commits) or "commit unknown"
    return f"`{side.run_id}` ({commits}; bundle-sha256 {side.bundle_sha256[:12]}…)"


def _change_cell(change: MeasurementChange, tolerance: float) -> str:
    if change.fails:
        return f"**REGRESSION** (beyond {tolerance:.0%})"
    if change.change is Change.REGRESSION:
        return f"regression (within {tolerance:.0%})"
    return change.change.value


def comparison_markdown(comparison: Comparison) -> str:
    """The table for a PR or ``$GITHUB_STEP_SUMMARY``: one row per AC and measurement."""
    failing = len(comparison.failing)
    counts = ", ".join(
        f"{kind.value} {comparison.count(kind)}" for kind in Change if comparison.count(kind)
    ) or "no measurements"
    verdict = (
        f"**{failing} regression{'s' if failing != 1 else ''} beyond {comparison.tolerance:.0%}**"
        if failing else f"no regression beyond {comparison.tolerance:.0%}"
    )
    lines = [
        "## specgate compare",
        "",
        f"Base {_short(comparison.base)} → new {_short(comparison.new)}.",
        "",
        f"{verdict}; {counts}.",
    ]
    if comparison.changes:
        lines += [
            "",
            "| AC | test | measurement | base | new | ratio | interval | change |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for change in comparison.changes:
        test = change.nodeid.split("::", 1)[-1]
        ratio = "—" if change.ratio is None else f"{change.ratio:.3f}"
        interval = (
            "—" if change.interval is None
            else f"{change.interval.of} {change.interval.low:.4g}–{change.interval.high:.4g}"
        )
        lines.append(
            f"| {change.ac_id} | `{_cell(test)}` | {_cell(change.name)} | "
            f"{_value(change.base, change.unit)} | {_value(change.new, change.unit)} | {ratio} | "
            f"{interval} | {_change_cell(change, comparison.tolerance)} |"
        )
    return "\n".join(lines) + "\n"


def tolerance_from_text(text: str) -> float:
    """``--tolerance``: a fraction in [0, 1) (0.05 is 5%), or a percentage (``5%``)."""
    stripped = text.strip()
    try:
        value = float(stripped[:-1]) / 100 if stripped.endswith("%") else float(stripped)
    except ValueError:
        raise ValueError(
            f"--tolerance {text!r}: expected a fraction such as 0.05 or a percentage such as 5%"
        ) from None
    if not 0 <= value < 1 or math.isnan(value):
        raise ValueError(f"--tolerance {text!r}: expected a relative change from 0 up to (not including) 1")
    return value

