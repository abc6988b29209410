"""Sustained window: a long interleaved run, judged on its last stretch.

A short burst can look fast before the machine heats up. AC-10 asks for the
speedup over the last minute of a five-minute run, reported next to the speedup of
the whole run, with tokens/s over time for both arms kept as data and as a plot.

A shortened run (``--specgate-duration-scale``) holds a pair or two in its last window, too few
for any interval. So a run given thresholds (``until=``) is sized in pairs as well as seconds:
once its duration has passed it adds rounds (every prompt once) while the anytime-valid interval
of :mod:`~pytest_specgate.measure.sequential` over the judged pairs leaves a threshold undecided,
until ``max_extra_pairs`` more have run (it first completes the round the duration ended in, and
stops at a round's end, so it may pass that cap by less than a round). The judged pairs are those
that finish after the window's planned start (duration less window), so the judged set only
grows and the interval stays valid however often it is looked at; it is looked at after whole
rounds only, as the sequential paired run does.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.progress import progress_for
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL, Threshold
from pytest_specgate.measure.paired import (
    PromptRunner,
    ScheduledPair,
    TelemetryCounting,
    TelemetryReader,
    arm_order,
    measure_acceptance,
    run_pair,
    running_speedup,
)
from pytest_specgate.measure.progress import ProgressSink
from pytest_specgate.measure.samples import ARMS, Arm, Prompt, SamplePair
from pytest_specgate.measure.sequential import (
    SequentialEstimate,
    median_confidence_sequence,
    stop_thresholds,
    undecided,
)
from pytest_specgate.measure.statistics import (
    AcceptanceMeasurement,
    IdentityReport,
    SpeedupEstimate,
    TelemetryLike,
    identity_report,
    median_speedup,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_DURATION_S = 300.0
DEFAULT_LAST_WINDOW_S = 60.0
SUSTAINED_SCHEMA = "specgate.sustained/v1"
MIN_JUDGED_PAIRS = 8
"""The fewest pairs the last-window estimate is taken over (reaching back before the window)."""


@dataclass(frozen=True)
class SustainedSettings:
    """How long to run and how much of the end to judge, after the duration scale."""

    duration_s: float = DEFAULT_DURATION_S
    last_window_s: float = DEFAULT_LAST_WINDOW_S
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"duration scale must be > 0, found {self.scale!r}")
        if not self.duration_s > 0:
            raise ValueError(f"sustained duration must be > 0 s, found {self.duration_s!r}")
        if not 0 < self.last_window_s <= self.duration_s:
            raise ValueError(
                f"sustained last window must be in (0, duration={self.duration_s} s], "
                f"found {self.last_window_s!r}"
            )

    @property
    def scaled_duration_s(self) -> float:
        return self.duration_s * self.scale

    @property
    def scaled_last_window_s(self) -> float:
        return self.last_window_s * self.scale

    @property
    def planned_window_start_s(self) -> float:
        """Where the judged window starts in a run sized in pairs: the scaled duration less the window."""
        return self.scaled_duration_s - self.scaled_last_window_s

    def to_dict(self) -> dict[str, object]:
        return {
            "duration_s": self.duration_s,
            "last_window_s": self.last_window_s,
            "scale": self.scale,
            "scaled_duration_s": self.scaled_duration_s,
            "scaled_last_window_s": self.scaled_last_window_s,
        }


def pairs_in_last_window(
    pairs: Sequence[SamplePair], window_s: float, run_end_s: float
) -> tuple[SamplePair, ...]:
    """Pairs that overlap [run_end - window, run_end]; the final pair is always among them."""
    window_start = run_end_s - window_s
    return tuple(pair for pair in pairs if pair.finished_s > window_start)


@dataclass(frozen=True)
class ThroughputPoint:
    """Tokens/s of one request, placed at the time it finished (run-relative seconds)."""

    t_s: float
    tokens_per_s: float

    def to_dict(self) -> dict[str, object]:
        return {"t_s": self.t_s, "tokens_per_s": self.tokens_per_s}


def throughput_series(pairs: Sequence[SamplePair], arm: Arm) -> tuple[ThroughputPoint, ...]:
    """One arm's tokens/s over time, in time order."""
    samples = [pair.baseline if arm == "baseline" else pair.candidate for pair in pairs]
    return tuple(
        ThroughputPoint(sample.finished_s, sample.sample.tokens_per_s)
        for sample in sorted(samples, key=lambda sample: sample.finished_s)
    )


def judged_from(pairs: Sequence[SamplePair], window_start_s: float) -> tuple[SamplePair, ...]:
    """Pairs that finish after ``window_start_s`` (a fixed start, so the set only grows)."""
    return tuple(pair for pair in pairs if pair.finished_s > window_start_s)


def median_pair_speedup(pairs: Sequence[SamplePair]) -> float:
    if not pairs:
        raise ValueError("sustained run: no pairs were measured")
    return statistics.median(pair.speedup for pair in pairs)


@dataclass(frozen=True)
class SustainedStop:
    """Why a run sized in pairs stopped where it did, for the evidence."""

    thresholds: tuple[Threshold, ...]
    max_extra_pairs: int
    extra_pairs: int
    decided: bool
    estimate: SequentialEstimate

    def to_dict(self) -> dict[str, object]:
        return {
            "until": [threshold.describe() for threshold in self.thresholds],
            "max_extra_pairs": self.max_extra_pairs,
            "extra_pairs": self.extra_pairs,
            "stopped_because": "every threshold decided" if self.decided else "max_extra_pairs reached",
            "estimate": self.estimate.to_dict(),
        }


@dataclass(frozen=True)
class SustainedRun:
    """All pairs of a sustained run, with the window arithmetic on top."""

    settings: SustainedSettings
    pairs: tuple[SamplePair, ...]
    warmup_pairs_discarded: int
    elapsed_s: float
    acceptance: AcceptanceMeasurement | None
    sequential: SustainedStop | None = None

    @property
    def window_start_s(self) -> float:
        if self.sequential is not None:
            return max(0.0, self.settings.planned_window_start_s)
        return max(0.0, self.elapsed_s - self.settings.scaled_last_window_s)

    def last_window(self) -> tuple[SamplePair, ...]:
        if self.sequential is not None:
            return judged_from(self.pairs, self.settings.planned_window_start_s)
        return pairs_in_last_window(self.pairs, self.settings.scaled_last_window_s, self.elapsed_s)

    @property
    def whole_run_speedup(self) -> float:
        return median_pair_speedup(self.pairs)

    @property
    def last_window_speedup(self) -> float:
        return median_pair_speedup(self.last_window())

    def judged_pairs(self) -> tuple[SamplePair, ...]:
        """The last window's pairs (a run sized in pairs: every pair from the planned window start
        on), or the last :data:`MIN_JUDGED_PAIRS` pairs when a run sized in seconds only holds fewer
        in its window: an interval over three pairs decides nothing."""
        window = self.last_window()
        if self.sequential is not None or len(window) >= MIN_JUDGED_PAIRS:
            return window
        return self.pairs[-MIN_JUDGED_PAIRS:]

    def last_window_estimate(
        self, *, confidence_level: float = DEFAULT_CONFIDENCE_LEVEL
    ) -> SpeedupEstimate | SequentialEstimate:
        """The median pair speedup of :meth:`judged_pairs` with an interval, so a bound on it is
        passed, failed or inconclusive rather than decided by one noisy median: the anytime-valid
        interval the run stopped on when it was sized in pairs, else a bootstrap interval."""
        if self.sequential is not None:
            return self.sequential.estimate
        return median_speedup([pair.speedup for pair in self.judged_pairs()],
                              confidence_level=confidence_level)

    def series(self, arm: Arm) -> tuple[ThroughputPoint, ...]:
        return throughput_series(self.pairs, arm)

    def identity(self) -> IdentityReport:
        return identity_report(self.pairs)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": SUSTAINED_SCHEMA,
            "settings": self.settings.to_dict(),
            "elapsed_s": self.elapsed_s,
            "warmup_pairs_discarded": self.warmup_pairs_discarded,
            "pairs_measured": len(self.pairs),
            "pairs_in_last_window": len(self.last_window()),
            "pairs_judged": len(self.judged_pairs()),
            "window_start_s": self.window_start_s,
            "window_end_s": self.elapsed_s,
            "whole_run_speedup": self.whole_run_speedup,
            "last_window_speedup": self.last_window_speedup,
            "speedup_statistic": "median of per-pair tokens/s ratios (candidate / baseline)",
            "sequential": None if self.sequential is None else self.sequential.to_dict(),
            "acceptance": None if self.acceptance is None else self.acceptance.to_dict(),
            "identity": self.identity().to_dict(),
            "series": {
                arm: [point.to_dict() for point in self.series(arm)]
                for arm in ARMS
            },
        }


def run_sustained(
    baseline: PromptRunner,
    candidate: PromptRunner,
    prompts: Sequence[Prompt],
    settings: SustainedSettings,
    *,
    warmup: int = 1,
    progress: ProgressSink | None = None,
    candidate_telemetry: TelemetryReader | None = None,
    telemetry_counting: TelemetryCounting = "delta",
    clock: Callable[[], float] = time.perf_counter,
    until: Threshold | Sequence[Threshold] | None = None,
    max_extra_pairs: int = 0,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
) -> SustainedRun:
    """Cycle through the prompts in ABAB pairs until the scaled duration has passed.

    A pair is only started while time remains, so the run overshoots the duration
    by at most one pair. Warm-up pairs run before the clock of the run starts.
    With ``until`` (thresholds on the judged speedup) the run then adds whole rounds until
    every threshold is decided or ``max_extra_pairs`` more pairs have run, counted at round ends
(see the module docstring).
    """
    thresholds = stop_thresholds(until)
    if thresholds and max_extra_pairs < 1:
        raise ValueError(f"sustained run: until= needs max_extra_pairs >= 1, found {max_extra_pairs!r}")
    if not prompts:
        raise ValueError("sustained run: the prompt set is empty")
    if warmup < 0:
        raise ValueError(f"sustained run: warmup must be >= 0, found {warmup!r}")
    progress = progress if progress is not None else progress_for("sustained window",
                                                                  settings.scaled_duration_s)
    warmup_started = clock()
    for index in range(warmup):
        scheduled = ScheduledPair(prompts[index % len(prompts)], -1, arm_order(index)[0], True)
        run_pair(baseline, candidate, scheduled, clock=clock, run_started=warmup_started)
    before: TelemetryLike | None = (
        None if candidate_telemetry is None else candidate_telemetry()
    )
    run_started = clock()
    pairs: list[SamplePair] = []

    def add_pair() -> None:
        index = len(pairs)
        round_index = index // len(prompts)
        scheduled = ScheduledPair(
            prompts[index % len(prompts)], round_index, arm_order(round_index)[0], False
        )
        pairs.append(run_pair(baseline, candidate, scheduled, clock=clock, run_started=run_started))
        if progress is not None:
            progress.update(2 * (warmup + len(pairs)), running_speedup(pairs))

    while not pairs or clock() - run_started < settings.scaled_duration_s:
        add_pair()
    stop = None
    if thresholds:
        timed = len(pairs)
        while len(pairs) % len(prompts):
            add_pair()
        while True:
            judged = judged_from(pairs, settings.planned_window_start_s)
            estimate = median_confidence_sequence([pair.speedup for pair in judged], confidence_level)
            decided = not undecided(thresholds, estimate)
            if decided or len(pairs) - timed >= max_extra_pairs:
                stop = SustainedStop(thresholds, max_extra_pairs, len(pairs) - timed, decided, estimate)
                break
            for _ in prompts:
                add_pair()
    elapsed = pairs[-1].finished_s
    acceptance = measure_acceptance(candidate_telemetry, before, telemetry_counting)
    if progress is not None:
        progress.finish(2 * (warmup + len(pairs)), running_speedup(pairs))
    return SustainedRun(settings, tuple(pairs), warmup, elapsed, acceptance, stop)


@dataclass(frozen=True)
class SustainedArtifacts:
    """Files written for the evidence bundle."""

    data_path: Path
    plot_path: Path

    def to_dict(self) -> dict[str, object]:
        return {"data": str(self.data_path), "plot": str(self.plot_path)}


def write_sustained_artifacts(
    run: SustainedRun, directory: Path, *, stem: str = "sustained", title: str = "Sustained run"
) -> SustainedArtifacts:
    """Write ``<stem>.json`` (the run's data) and ``<stem>.png`` (tokens/s over time)."""
    directory.mkdir(parents=True, exist_ok=True)
    data_path = directory / f"{stem}.json"
    plot_path = directory / f"{stem}.png"
    data_path.write_text(
        json.dumps(run.to_dict(), sort_keys=True, indent=2) + "\n", encoding="utf-8"
    )
    plot_throughput(run, plot_path, title=title)
    return SustainedArtifacts(data_path, plot_path)


def plot_throughput(run: SustainedRun, path: Path, *, title: str) -> None:
    """Save :func:`throughput_figure` as PNG (no software tag, so equal runs give equal bytes)."""
    throughput_figure(run, title=title).savefig(path, format="png", metadata={"Software": None})


def throughput_figure(run: SustainedRun, *, title: str) -> Figure:
    """Both arms' tokens/s over time with the judged last window shaded.

    Uses the Agg canvas directly, so no global matplotlib backend is switched.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 4.8), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    labels = {"baseline": "baseline (speculation off)", "candidate": "candidate (speculation on)"}
    for arm, marker in zip(ARMS, ("o", "s"), strict=True):
        points = run.series(arm)
        axes.plot(
            [point.t_s for point in points],
            [point.tokens_per_s for point in points],
            marker=marker,
            markersize=3,
            linewidth=1,
            label=labels[arm],
        )
    axes.axvspan(
        run.window_start_s,
        run.elapsed_s,
        alpha=0.15,
        color="tab:green",
        label=f"last {run.settings.scaled_last_window_s:g} s window",
    )
    axes.set_xlabel("time since start of run (s)")
    axes.set_ylabel("output tokens/s per request")
    axes.set_title(
        f"{title}: whole run {run.whole_run_speedup:.2f}x, "
        f"last window {run.last_window_speedup:.2f}x"
    )
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    return figure
