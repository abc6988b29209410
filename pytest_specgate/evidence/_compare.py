"""``specgate compare BASE NEW``: a PR's figures against the base branch's, per AC and measurement.

pytest-benchmark has ``--benchmark-compare`` and asv has ``compare``; a release manager needs the
same for evidence: did this PR make the speedup worse, or is the difference noise? Two runs of one
commit differ by noise, so a change is judged on the interval of the *difference*, which carries
both runs' uncertainty, and counts only where that whole interval lies beyond ``--tolerance``:

- ``samples``: both records note the samples behind the figure (``<name>_samples``: pair speedups,
  request latencies); both are resampled (``measure.difference``).
- ``intervals``: no samples, but a confidence interval on at least one side; the two half-widths
  add in quadrature (one side's stands in for the other's where only one is recorded).
- ``values``: neither; a change beyond the tolerance is only "changed": with nothing to tell it
  from noise it is never called a regression.

Direction comes from the measurement's bound: ``at_least`` means higher is better, ``at_most``
lower; a figure with no bound (or both) can change but never regress. Verdict changes (PASSED to
anything else, QUALIFYING to not), recomputed with the gate's policy, are listed first and are
regressions. Any regression makes the command exit 1.

An interval is read from the record, never computed here: the measurement's own (recorded with
``evidence.measure`` of an estimate), else measurements ``NAME_ci95_low`` and ``NAME_ci95_high``
of the same test, or a note ``NAME_estimate`` (or ``NAME``) holding ``ci_low`` and ``ci_high``.
Its half-width is rescaled from the level it was recorded at (the measurement's or the note's
``confidence_level``; 95% for ``_ci95`` measurements and where none is stated) to
``--confidence-level`` by the ratio of the normal quantiles, so a 90% interval is not read as a
95% one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.samples import RecordedSamples, SamplesError, samples_note_key
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL
from pytest_specgate.evidence._acrecord import AcRecord, Measurement
from pytest_specgate.evidence._policy import judge

COMPARE_SCHEMA_ID = "specgate.compare/2"
DEFAULT_TOLERANCE = 0.05
"""A relative change (5%) the whole difference interval must exceed to count."""
_CI_SUFFIXES = ("_ci95_low", "_ci95_high")
_CI_SUFFIX_LEVEL = 0.95
_ESTIMATE_SUFFIX = "_estimate"

Better = Literal["higher", "lower"]
Basis = Literal["samples", "intervals", "values"]


class CompareInputError(ValueError):
    """A record whose samples note is malformed: names the AC, test and note."""


class Change(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    CHANGED = "changed"
    """Beyond the tolerance, but the figure has no direction (no single bound) or no interval."""
    NO_CHANGE = "no change"
    ONLY_IN_BASE = "only in base"
    ONLY_IN_NEW = "only in new"
    NOT_A_NUMBER = "not a number"


@dataclass(frozen=True)
class Interval:
    """A recorded interval and the confidence level it was recorded at."""

    low: float
    high: float
    level: float


@dataclass(frozen=True)
class Difference:
    """The change of a figure with its interval: relative (``-0.1`` is 10% lower) unless the base
    is 0, where a relative change is undefined and ``absolute`` is True."""

    point: float
    low: float
    high: float
    basis: Basis
    absolute: bool = False

    def to_json(self) -> dict[str, JsonValue]:
        return {"point": self.point, "low": self.low, "high": self.high, "basis": self.basis,
                "absolute": self.absolute}


@dataclass(frozen=True)
class BundleSide:
    """Which bundle a side of the comparison is: printed so a reader can tell base from new."""

    run_id: str
    bundle_sha256: str
    commits: tuple[str, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {"run_id": self.run_id, "bundle_sha256": self.bundle_sha256, "commits": list(self.commits)}


@dataclass(frozen=True)
class VerdictChange:
    """An AC whose verdict differs between the runs; ``None`` label: the AC is not in that bundle."""

    ac_id: str
    base: str | None
    new: str | None
    regression: bool

    def to_json(self) -> dict[str, JsonValue]:
        return {"ac": self.ac_id, "base": self.base, "new": self.new, "regression": self.regression}


@dataclass(frozen=True)
class MeasurementChange:
    ac_id: str
    nodeid: str
    name: str
    unit: str | None
    base: float | str | None
    new: float | str | None
    better: Better | None
    difference: Difference | None
    change: Change

    @property
    def ratio(self) -> float | None:
        """``new / base`` of the recorded figures; None when either is not a number, base is 0 or
        the ratio is past what a float holds."""
        base, new = finite_number(self.base), finite_number(self.new)
        if base is None or new is None or base == 0:
            return None
        ratio = new / base
        return ratio if math.isfinite(ratio) else None

    @property
    def fails(self) -> bool:
        return self.change is Change.REGRESSION


@dataclass(frozen=True)
class Comparison:
    base: BundleSide
    new: BundleSide
    tolerance: float
    confidence_level: float
    verdicts: tuple[VerdictChange, ...]
    changes: tuple[MeasurementChange, ...]

    @property
    def failing(self) -> tuple[MeasurementChange, ...]:
        return tuple(change for change in self.changes if change.fails)

    @property
    def failing_verdicts(self) -> tuple[VerdictChange, ...]:
        return tuple(verdict for verdict in self.verdicts if verdict.regression)

    @property
    def regressions(self) -> int:
        return len(self.failing) + len(self.failing_verdicts)

    def count(self, kind: Change) -> int:
        return sum(1 for change in self.changes if change.change is kind)


def finite_number(value: float | str | None) -> float | None:
    """A recorded value as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def better_direction(row: Measurement) -> Better | None:
    """Which way is better, from the bound: ``at_least`` higher, ``at_most`` lower, else None."""
    if (row.at_least is None) == (row.at_most is None):
        return None
    return "higher" if row.at_least is not None else "lower"


def _notes(record: AcRecord, nodeid: str) -> Mapping[str, JsonValue]:
    test = next((test for test in record.tests if test.nodeid == nodeid), None)
    return (test.notes if test is not None else None) or {}


def _interval(record: AcRecord, row: Measurement) -> Interval | None:
    if row.ci_low is not None and row.ci_high is not None:
        return Interval(min(row.ci_low, row.ci_high), max(row.ci_low, row.ci_high),
                        _recorded_level(row.confidence_level))
    siblings = {
        other.name: finite_number(other.value) for other in record.measurements if other.nodeid == row.nodeid
    }
    low, high = (siblings.get(row.name + suffix) for suffix in _CI_SUFFIXES)
    if low is not None and high is not None:
        return Interval(min(low, high), max(low, high), _CI_SUFFIX_LEVEL)
    notes = _notes(record, row.nodeid)
    for key in (row.name + _ESTIMATE_SUFFIX, row.name):
        note = notes.get(key)
        if isinstance(note, Mapping):
            low, high = finite_number(note.get("ci_low")), finite_number(note.get("ci_high"))
            if low is not None and high is not None:
                return Interval(min(low, high), max(low, high),
                                _recorded_level(finite_number(note.get("confidence_level"))))
    return None


def _samples(ac_id: str, record: AcRecord, row: Measurement) -> RecordedSamples | None:
    key = samples_note_key(row.name)
    note = _notes(record, row.nodeid).get(key)
    if note is None:
        return None
    try:
        return RecordedSamples.from_json(note, f"{ac_id} {row.nodeid}: note {key}")
    except SamplesError as error:
        raise CompareInputError(str(error)) from None


def _recorded_level(level: float | None) -> float:
    """The level an interval states, where it is a usable one; else the project's default."""
    return level if level is not None and 0 < level < 1 else DEFAULT_CONFIDENCE_LEVEL


def _normal_quantile(level: float) -> float:
    return statistics.NormalDist().inv_cdf(0.5 + level / 2)


def _half_width(interval: Interval | None, confidence_level: float) -> float | None:
    """Half the interval's width, rescaled from its recorded level to ``confidence_level``."""
    if interval is None:
        return None
    scale = _normal_quantile(confidence_level) / _normal_quantile(interval.level)
    return (interval.high - interval.low) / 2 * scale


def difference(ac_id: str, base: tuple[AcRecord, Measurement], new: tuple[AcRecord, Measurement],
               confidence_level: float) -> Difference | None:
    """The change of one figure with the best interval both records allow; None when a value is
    not a number, or the change is past what a float holds (``1e308`` after ``5e-324``: JSON
    cannot write the infinity it would be)."""
    found = _difference(ac_id, base, new, confidence_level)
    if found is None or not all(map(math.isfinite, (found.point, found.low, found.high))):
        return None
    return found


def _difference(ac_id: str, base: tuple[AcRecord, Measurement], new: tuple[AcRecord, Measurement],
                confidence_level: float) -> Difference | None:
    base_row, new_row = base[1], new[1]
    base_value, new_value = finite_number(base_row.value), finite_number(new_row.value)
    if base_value is None or new_value is None:
        return None
    base_samples, new_samples = _samples(ac_id, *base), _samples(ac_id, *new)
    if (base_samples is not None and new_samples is not None
            and base_samples.statistic == new_samples.statistic and base_value != 0):
        from pytest_specgate.measure.difference import relative_change

        try:
            change = relative_change(base_samples, new_samples, confidence_level=confidence_level)
        except ValueError:
            change = None
        if change is not None:
            return Difference(change.point, change.low, change.high, "samples")
    halves = [half for half in (_half_width(_interval(*base), confidence_level),
                                _half_width(_interval(*new), confidence_level))
              if half is not None]
    half = 0.0 if not halves else math.hypot(halves[0], halves[-1])
    basis: Basis = "intervals" if halves else "values"
    delta = new_value - base_value
    if base_value == 0:
        return Difference(delta, delta - half, delta + half, basis, absolute=True)
    scale = abs(base_value)
    return Difference(delta / scale, (delta - half) / scale, (delta + half) / scale, basis)


def classify(found: Difference, better: Better | None, tolerance: float) -> Change:
    """Regression or improvement only where the whole interval lies beyond the tolerance (beyond 0
    for an absolute change from 0); a figure without a direction, or without an interval to tell
    its change from noise (basis ``values``), only changes."""
    limit = 0.0 if found.absolute else tolerance
    above, below = found.low > limit, found.high < -limit
    if not above and not below:
        return Change.NO_CHANGE
    if better is None or found.basis == "values":
        return Change.CHANGED
    return Change.IMPROVEMENT if above == (better == "higher") else Change.REGRESSION


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


def _compare_ac(ac_id: str, base: AcRecord | None, new: AcRecord | None, tolerance: float,
                confidence_level: float) -> list[MeasurementChange]:
    base_rows, new_rows = _rows(base), _rows(new)
    changes = []
    for key in [*base_rows, *(key for key in new_rows if key not in base_rows)]:
        base_row, new_row = base_rows.get(key), new_rows.get(key)
        shown = new_row if new_row is not None else base_rows[key]
        better = better_direction(shown)
        found: Difference | None = None
        if base_row is None or base is None:
            change = Change.ONLY_IN_NEW
        elif new_row is None or new is None:
            change = Change.ONLY_IN_BASE
        else:
            found = difference(ac_id, (base, base_row), (new, new_row), confidence_level)
            if found is not None:
                change = classify(found, better, tolerance)
            else:
                change = Change.NO_CHANGE if base_row.value == new_row.value else Change.NOT_A_NUMBER
        changes.append(MeasurementChange(
            ac_id=ac_id, nodeid=key[0], name=key[1], unit=shown.unit,
            base=None if base_row is None else base_row.value, new=None if new_row is None else new_row.value,
            better=better, difference=found, change=change,
        ))
    return changes


def verdict_changes(base: Mapping[str, AcRecord], new: Mapping[str, AcRecord]) -> tuple[VerdictChange, ...]:
    """ACs whose recomputed verdict differs: a PASSED that no longer passes, or a QUALIFYING that
    no longer qualifies, is a regression; an AC in only one bundle is listed, not failed (a
    bundle may hold one host's ACs)."""
    found = []
    for ac_id in sorted(set(base) | set(new)):
        was = judge(base[ac_id]) if ac_id in base else None
        # One record on both sides (a bundle compared with a copy of itself) is judged once.
        now = None if ac_id not in new else was if new[ac_id] is base.get(ac_id) else judge(new[ac_id])
        if was is not None and now is not None and was.label == now.label:
            continue
        regression = was is not None and now is not None and (
            (was.outcome == "passed" and now.outcome != "passed") or (was.qualifying and not now.qualifying)
        )
        found.append(VerdictChange(ac_id, None if was is None else was.label,
                                   None if now is None else now.label, regression))
    return tuple(found)


def compare_records(base: Mapping[str, AcRecord], new: Mapping[str, AcRecord], base_side: BundleSide,
                    new_side: BundleSide, tolerance: float = DEFAULT_TOLERANCE,
                    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL) -> Comparison:
    """Verdict changes, then every measurement of every AC in either bundle, in a stable order."""
    changes = [
        change
        for ac_id in sorted(set(base) | set(new))
        for change in _compare_ac(ac_id, base.get(ac_id), new.get(ac_id), tolerance, confidence_level)
    ]
    return Comparison(base=base_side, new=new_side, tolerance=tolerance, confidence_level=confidence_level,
                      verdicts=verdict_changes(base, new), changes=tuple(changes))


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
        "confidence_level": comparison.confidence_level,
        "regressions": comparison.regressions,
        "verdict_changes": [verdict.to_json() for verdict in comparison.verdicts],
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
                "difference": None if change.difference is None else change.difference.to_json(),
                "change": change.change.value,
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


def _difference_cell(found: Difference | None) -> str:
    if found is None:
        return "—"
    if found.absolute:
        return f"{found.point:+.4g} ({found.low:+.4g} to {found.high:+.4g}; {found.basis})"
    return f"{found.point:+.1%} ({found.low:+.1%} to {found.high:+.1%}; {found.basis})"


def _verdict_lines(comparison: Comparison) -> list[str]:
    if not comparison.verdicts:
        return []
    lines = ["", "Verdict changes:", "", "| AC | base | new | change |", "|---|---|---|---|"]
    for verdict in comparison.verdicts:
        kind = "**REGRESSION**" if verdict.regression else "changed"
        lines.append(f"| {verdict.ac_id} | {verdict.base or 'not in this bundle'} | "
                     f"{verdict.new or 'not in this bundle'} | {kind} |")
    return lines


def comparison_markdown(comparison: Comparison) -> str:
    """The table for a PR or ``$GITHUB_STEP_SUMMARY``: verdict changes first, then one row per AC
    and measurement."""
    failing = comparison.regressions
    counts = ", ".join(
        f"{kind.value} {comparison.count(kind)}" for kind in Change if comparison.count(kind)
    ) or "no measurements"
    verdict = (
        f"**{failing} regression{'s' if failing != 1 else ''}**" if failing else "no regression"
    )
    lines = [
        "## specgate compare",
        "",
        f"Base {_short(comparison.base)} → new {_short(comparison.new)}.",
        "",
        f"{verdict} (a change counts where its whole {comparison.confidence_level:.0%} interval lies "
        f"beyond {comparison.tolerance:.0%}); {counts}.",
        *_verdict_lines(comparison),
    ]
    if comparison.changes:
        lines += [
            "",
            "| AC | test | measurement | base | new | change (interval; basis) | verdict |",
            "|---|---|---|---|---|---|---|",
        ]
    for change in comparison.changes:
        test = change.nodeid.split("::", 1)[-1]
        shown = "**REGRESSION**" if change.fails else change.change.value
        lines.append(
            f"| {change.ac_id} | `{_cell(test)}` | {_cell(change.name)} | "
            f"{_value(change.base, change.unit)} | {_value(change.new, change.unit)} | "
            f"{_difference_cell(change.difference)} | {shown} |"
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

