"""``specgate history BUNDLE_OR_DIR...``: every AC figure across many runs, and where it shifted.

``compare`` sees one run against one run; a release manager also needs to see how AC-10's
speedup moved over the last twenty merges and which commit moved it. Bundles are ordered by
their commit's time (from git; by the run's start where git does not know a commit), each
figure becomes a series, and change points are found with ``ruptures`` (PELT, an L2 cost on the
series scaled by its noise, estimated from the median absolute successive difference, so a
single outlier does not set the scale). A shift counts only when it persists (at least
``MIN_SEGMENT`` runs on each side) and the segment medians differ by more than the tolerance; it
names the first commit after it.

Why ruptures: it needs only numpy and scipy and ships wheels for every Python this plugin
supports; MongoDB's signal-processing-algorithms (E-divisive, what Apache Otava builds on)
supports Python 3.11 only, pins numpy below 2 and setuptools below 71 and pulls gevent and
structlog, and Otava itself pins numpy and pulls cloud clients. ruptures sits behind the
``history`` extra (docs/gate.md).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import statistics
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pytest_specgate.contracts.extras import missing_extra
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import AcRecord, Measurement
from pytest_specgate.evidence._compare import better_direction, finite_number
from pytest_specgate.evidence._policy import judge
from pytest_specgate.evidence._records import safe_file_name

HISTORY_SCHEMA_ID = "specgate.history/1"
MIN_SEGMENT = 3
"""Runs on each side of a change point; segments are compared by their medians, so one odd run
(an outlier) moves no segment and is not a shift."""
PENALTY_PER_LOG_N = 4.0
"""PELT's penalty per change point, times log(n), on the noise-scaled series (BIC-like, a little
stricter, so noise alone rarely shows a shift)."""
HISTORY_EXTRA = "history"

OrderedBy = Literal["commit time", "run start time"]
SeriesKey = tuple[str, str, str]
"""AC, test node id, measurement name."""


class HistoryInputError(ValueError):
    """Input ``history`` cannot use (no runs, a missing extra): one line, exit 2."""


@dataclass(frozen=True)
class HistoryRun:
    """One bundle's place in the history."""

    run_id: str
    bundle_sha256: str
    commit: str | None
    committed_at: str | None
    started_at: str | None
    records: Mapping[str, AcRecord]

    def to_json(self) -> dict[str, JsonValue]:
        return {"run_id": self.run_id, "bundle_sha256": self.bundle_sha256, "commit": self.commit,
                "committed_at": self.committed_at, "started_at": self.started_at}


@dataclass(frozen=True)
class HistoryPoint:
    run: HistoryRun
    value: float
    ci_low: float | None
    ci_high: float | None
    verdict: str


@dataclass(frozen=True)
class ChangePoint:
    """A persistent shift: ``index`` is the first point after it; ``before`` and ``after`` are
    the medians of the segments on either side."""

    index: int
    commit: str | None
    run_id: str
    before: float
    after: float

    @property
    def relative(self) -> float | None:
        return None if self.before == 0 else self.after / self.before - 1

    def describe(self) -> str:
        size = "" if self.relative is None else f"{self.relative:+.1%} "
        commit = (self.commit or "commit unknown")[:12]
        return (f"shift {size}({self.before:.4g} → {self.after:.4g}) first at commit {commit} "
                f"(run {self.run_id})")


@dataclass(frozen=True)
class Series:
    ac_id: str
    nodeid: str
    measurement: str
    unit: str | None
    better: str | None
    points: tuple[HistoryPoint, ...]
    change_points: tuple[ChangePoint, ...]

    @property
    def title(self) -> str:
        return f"{self.ac_id} · {self.measurement}"

    @property
    def key(self) -> SeriesKey:
        return self.ac_id, self.nodeid, self.measurement

    @property
    def plot_name(self) -> str:
        return safe_file_name(f"{self.ac_id}-{self.nodeid.split('::', 1)[-1]}-{self.measurement}.png")


@dataclass(frozen=True)
class History:
    ordered_by: OrderedBy
    unknown_commits: tuple[str, ...]
    runs: tuple[HistoryRun, ...]
    series: tuple[Series, ...]
    tolerance: float


def commit_time(repo: Path, commit: str) -> str | None:
    """The committer date of ``commit`` (ISO 8601, UTC) from git in ``repo``; None when unknown."""
    try:
        completed = subprocess.run(
            ["git", "-C", str(repo), "log", "-1", "--format=%ct", commit, "--"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0 or not completed.stdout.strip().isdigit():
        return None
    stamp = dt.datetime.fromtimestamp(int(completed.stdout.strip()), dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _started_at(record: AcRecord) -> str | None:
    run = record.document.get("run")
    value = run.get("started_at") if isinstance(run, Mapping) else None
    return value if isinstance(value, str) else None


def history_run(run_id: str, bundle_sha256: str, records: Mapping[str, AcRecord],
                committed_at: Mapping[str, str | None]) -> HistoryRun:
    commits = sorted({record.source.commit for record in records.values() if record.source.commit})
    commit = commits[0] if len(commits) == 1 else None
    started = sorted(stamp for record in records.values() if (stamp := _started_at(record)) is not None)
    return HistoryRun(run_id, bundle_sha256, commit, None if commit is None else committed_at.get(commit),
                      started[0] if started else None, records)


def order_runs(runs: Sequence[HistoryRun]) -> tuple[tuple[HistoryRun, ...], OrderedBy, tuple[str, ...]]:
    """By commit time where git knows every run's commit, else by run start time (and which
    commits git did not know)."""
    unknown = tuple(sorted({run.commit or f"(run {run.run_id}: no single commit)"
                            for run in runs if run.committed_at is None}))
    if not unknown:
        ordered = sorted(runs, key=lambda run: (run.committed_at or "", run.started_at or "", run.run_id))
        return tuple(ordered), "commit time", ()
    ordered = sorted(runs, key=lambda run: (run.started_at or "", run.run_id))
    return tuple(ordered), "run start time", unknown


def change_points(values: Sequence[float], tolerance: float) -> tuple[int, ...]:
    """Indices of the first value after each persistent shift larger than ``tolerance`` (relative
    change of the segment medians), found by PELT on the noise-scaled series."""
    if len(values) < 2 * MIN_SEGMENT:
        return ()
    try:
        import numpy as np
        import ruptures
    except ImportError as error:
        raise missing_extra("change-point detection", HISTORY_EXTRA, error) from None
    series = np.asarray(values, dtype=float)
    steps = np.diff(series)
    noise = 1.4826 * float(np.median(np.abs(steps - np.median(steps)))) / math.sqrt(2)
    floor = 1e-3 * max(float(np.median(np.abs(series))), 1e-12)
    scaled = series / max(noise, floor)
    breaks: list[int] = ruptures.Pelt(model="l2", min_size=MIN_SEGMENT, jump=1).fit(scaled).predict(
        pen=PENALTY_PER_LOG_N * math.log(len(values)))
    return _beyond_tolerance(series.tolist(), list(breaks[:-1]), tolerance)


def _beyond_tolerance(values: Sequence[float], breaks: list[int], tolerance: float) -> tuple[int, ...]:
    """Drop the change point with the smallest shift of segment medians while any is within
    ``tolerance``, merging its two segments, so a blip between two small steps cannot pass as one
    large step."""
    def shift(position: int) -> float:
        edges = [0, *breaks, len(values)]
        start, middle, end = edges[position], edges[position + 1], edges[position + 2]
        before = statistics.median(values[start:middle])
        after = statistics.median(values[middle:end])
        return abs(after - before) / abs(before) if before != 0 else math.inf

    while breaks:
        smallest = min(range(len(breaks)), key=shift)
        if shift(smallest) > tolerance:
            break
        del breaks[smallest]
    return tuple(breaks)


def _series(key: SeriesKey, runs: Sequence[HistoryRun], tolerance: float) -> Series | None:
    ac_id, nodeid, name = key
    points = []
    shown: Measurement | None = None
    for run in runs:
        record = run.records.get(ac_id)
        row = None if record is None else next(
            (row for row in record.measurements if row.nodeid == nodeid and row.name == name), None)
        value = None if row is None else finite_number(row.value)
        if record is None or row is None or value is None:
            continue
        shown = row
        points.append(HistoryPoint(run, value, row.ci_low, row.ci_high, judge(record).label))
    if shown is None or not points:
        return None
    found = change_points([point.value for point in points], tolerance)
    shifts = []
    for index in found:
        after_end = next((later for later in found if later > index), len(points))
        before_start = max((earlier for earlier in found if earlier < index), default=0)
        before = [point.value for point in points[before_start:index]]
        after = [point.value for point in points[index:after_end]]
        shifts.append(ChangePoint(index, points[index].run.commit, points[index].run.run_id,
                                  statistics.median(before), statistics.median(after)))
    return Series(ac_id, nodeid, name, shown.unit, better_direction(shown), tuple(points), tuple(shifts))


def build_history(runs: Sequence[HistoryRun], tolerance: float,
                  measurements: Sequence[str] = ()) -> History:
    """Every numeric AC figure (or only ``measurements``) across ``runs``, in commit order."""
    if not runs:
        raise HistoryInputError("no bundles to make a history of")
    ordered, ordered_by, unknown = order_runs(runs)
    keys: dict[SeriesKey, None] = {}
    for run in ordered:
        for ac_id in sorted(run.records):
            for row in run.records[ac_id].measurements:
                if not measurements or row.name in measurements:
                    keys.setdefault((ac_id, row.nodeid, row.name), None)
    if measurements and not keys:
        raise HistoryInputError(f"no bundle records a measurement named {', '.join(measurements)}")
    found = [series for key in sorted(keys) if (series := _series(key, ordered, tolerance)) is not None]
    return History(ordered_by, unknown, ordered, tuple(found), tolerance)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _interval(point: HistoryPoint) -> str:
    return "—" if point.ci_low is None or point.ci_high is None else f"{point.ci_low:.4g}–{point.ci_high:.4g}"


def history_markdown(history: History, plots: Mapping[SeriesKey, Path] | None = None) -> str:
    """One trend table per AC figure, change points marked on the first run after them."""
    order = f"ordered by {history.ordered_by}"
    if history.unknown_commits:
        order += f" (git does not know {', '.join(c[:12] for c in history.unknown_commits)})"
    shifts = sum(len(series.change_points) for series in history.series)
    lines = ["## specgate history", "",
             f"{len(history.runs)} runs, {order}; {len(history.series)} figures; "
             f"{shifts} persistent shift{'s' if shifts != 1 else ''} beyond {history.tolerance:.0%}."]
    for series in history.series:
        direction = "" if series.better is None else f", {series.better} is better"
        unit = f"{series.unit}" if series.unit else "no unit"
        test = series.nodeid.split("::", 1)[-1]
        lines += ["", f"### {_cell(series.title)} (`{_cell(test)}`; {_cell(unit)}{direction})", ""]
        for shift in series.change_points:
            lines.append(f"- {_cell(shift.describe())}")
        if plots is not None and series.key in plots:
            lines.append(f"- plot: `{plots[series.key].name}`")
        if series.change_points or (plots is not None and series.key in plots):
            lines.append("")
        lines += ["| # | commit | committed | run | value | interval | verdict | |",
                  "|---|---|---|---|---|---|---|---|"]
        marks = {shift.index: shift for shift in series.change_points}
        for index, point in enumerate(series.points):
            mark = marks.get(index)
            flag = "" if mark is None else (
                "← shift" if mark.relative is None else f"← shift {mark.relative:+.1%}")
            commit = (point.run.commit or "unknown")[:12]
            lines.append(
                f"| {index + 1} | `{commit}` | {point.run.committed_at or '—'} | "
                f"`{_cell(point.run.run_id)}` | {point.value:.4g} | {_interval(point)} | "
                f"{point.verdict} | {flag} |"
            )
    return "\n".join(lines) + "\n"


def history_json(history: History, plots: Mapping[SeriesKey, Path] | None = None) -> dict[str, JsonValue]:
    """``specgate history --json``: the versioned shape documented in docs/gate.md."""
    return {
        "schema": HISTORY_SCHEMA_ID,
        "ordered_by": history.ordered_by,
        "unknown_commits": list(history.unknown_commits),
        "tolerance": history.tolerance,
        "runs": [run.to_json() for run in history.runs],
        "series": [
            {
                "ac": series.ac_id,
                "test": series.nodeid,
                "measurement": series.measurement,
                "unit": series.unit,
                "better": series.better,
                "plot": None if plots is None or series.key not in plots else plots[series.key].name,
                "points": [
                    {"run_id": point.run.run_id, "commit": point.run.commit, "value": point.value,
                     "ci_low": point.ci_low, "ci_high": point.ci_high, "verdict": point.verdict}
                    for point in series.points
                ],
                "change_points": [
                    {"index": shift.index, "commit": shift.commit, "run_id": shift.run_id,
                     "before": shift.before, "after": shift.after, "relative": shift.relative}
                    for shift in series.change_points
                ],
            }
            for series in history.series
        ],
    }


def write_plot(series: Series, path: Path) -> Path:
    """The figure over the runs with its intervals, segment medians and change points (PNG)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise missing_extra("plotting", HISTORY_EXTRA, error) from None
    figure = Figure(figsize=(9, 4.8), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    xs = list(range(len(series.points)))
    values = [point.value for point in series.points]
    lows = [point.value - point.ci_low if point.ci_low is not None else 0.0 for point in series.points]
    highs = [point.ci_high - point.value if point.ci_high is not None else 0.0
             for point in series.points]
    axes.errorbar(xs, values, yerr=[lows, highs], marker="o", markersize=4, capsize=3, linestyle="-",
                  label=series.measurement)
    edges = [0, *(shift.index for shift in series.change_points), len(values)]
    for start, end in itertools.pairwise(edges):
        axes.hlines(statistics.median(values[start:end]), start - 0.4, end - 0.6, colors="grey",
                    linestyles="dotted")
    for shift in series.change_points:
        axes.axvline(shift.index - 0.5, color="red", linestyle="--",
                     label=f"shift at {(shift.commit or 'unknown')[:8]}")
    axes.set_xticks(xs, [(point.run.commit or "?")[:8] for point in series.points], rotation=45,
                    fontsize=7)
    axes.set_ylabel(f"{series.measurement} ({series.unit})" if series.unit else series.measurement)
    axes.set_title(f"{series.title}: ordered by commit")
    axes.legend(loc="best", fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    return path
