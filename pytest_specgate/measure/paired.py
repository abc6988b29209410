"""Paired A/B runs: the same prompts through a baseline and a candidate, interleaved.

Each prompt is sent to both arms back to back, and the arm that goes first flips
every round (round 0: baseline then candidate, round 1: candidate then baseline,
...), so slow drift of the machine (heat, background load) hits both arms alike.
Warm-up pairs run first and are discarded. The arms are plain callables, so the
runner works with any engine and with the fakes the tests use.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_specgate.contracts.progress import progress_for
from pytest_specgate.contracts.samples import RecordedSamples
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL, Threshold
from pytest_specgate.measure.progress import ProgressSink
from pytest_specgate.measure.samples import Arm, Prompt, RequestSample, SamplePair, TimedSample
from pytest_specgate.measure.sequential import (
    SequentialEstimate,
    SequentialStop,
    median_confidence_sequence,
    stop_thresholds,
    undecided,
)
from pytest_specgate.measure.statistics import (
    DEFAULT_BOOTSTRAP_SEED,
    AcceptanceMeasurement,
    IdentityReport,
    PromptSpeedup,
    SpeedupEstimate,
    TelemetryLike,
    acceptance_from_telemetry,
    identity_report,
    median_speedup,
    per_prompt_speedups,
    pooled_speedup,
)

PromptRunner = Callable[[Prompt], RequestSample]
CacheSettings = Mapping[str, str | None]
TelemetryReader = Callable[[], TelemetryLike]
TelemetryCounting = Literal["delta", "window"]


def arm_order(round_index: int) -> tuple[Arm, Arm]:
    """Baseline first in even rounds, candidate first in odd rounds."""
    return ("baseline", "candidate") if round_index % 2 == 0 else ("candidate", "baseline")


@dataclass(frozen=True)
class ScheduledPair:
    """One pair the runner will execute; warm-up pairs are executed and thrown away."""

    prompt: Prompt
    round_index: int
    first_arm: Arm
    warmup: bool


def paired_schedule(
    prompts: Sequence[Prompt], rounds: int, warmup: int
) -> tuple[ScheduledPair, ...]:
    """``warmup`` pairs cycling through the prompts, then every prompt once per round."""
    if not prompts:
        raise ValueError("paired run: the prompt set is empty")
    if rounds < 1:
        raise ValueError(f"paired run: rounds must be >= 1, found {rounds!r}")
    if warmup < 0:
        raise ValueError(f"paired run: warmup must be >= 0, found {warmup!r}")
    warmups = tuple(
        ScheduledPair(prompts[index % len(prompts)], -1, arm_order(index)[0], True)
        for index in range(warmup)
    )
    measured = tuple(
        ScheduledPair(prompt, round_index, arm_order(round_index)[0], False)
        for round_index in range(rounds)
        for prompt in prompts
    )
    return warmups + measured


def run_pair(
    baseline: PromptRunner,
    candidate: PromptRunner,
    scheduled: ScheduledPair,
    *,
    clock: Callable[[], float],
    run_started: float,
) -> SamplePair:
    """Send one prompt to both arms in the scheduled order; times are run-relative."""
    arms: dict[Arm, PromptRunner] = {"baseline": baseline, "candidate": candidate}
    second: Arm = "candidate" if scheduled.first_arm == "baseline" else "baseline"
    taken: dict[Arm, TimedSample] = {}
    for arm in (scheduled.first_arm, second):
        started = clock() - run_started
        sample = arms[arm](scheduled.prompt)
        finished = clock() - run_started
        taken[arm] = TimedSample(
            arm, scheduled.prompt.id, scheduled.round_index, started, finished, sample
        )
    return SamplePair(
        scheduled.prompt.id,
        scheduled.round_index,
        scheduled.first_arm,
        taken["baseline"],
        taken["candidate"],
    )


def measure_acceptance(
    reader: TelemetryReader | None, before: TelemetryLike | None, counting: TelemetryCounting
) -> AcceptanceMeasurement | None:
    """The final telemetry reading turned into an acceptance measurement (None without a reader)."""
    if reader is None:
        return None
    return acceptance_from_telemetry(before if counting == "delta" else None, reader())


class UnfairArms(ValueError):
    """The two arms of a paired run were set up with different caches."""


def caching_difference(baseline: CacheSettings, candidate: CacheSettings) -> str | None:
    """The settings both arms report and report differently, as one line (None: no difference).

    A setting one arm does not report is unknown and differs from nothing: it is recorded as such.
    """
    differing = [key for key in sorted(baseline.keys() & candidate.keys())
                 if None not in (baseline[key], candidate[key]) and baseline[key] != candidate[key]]
    if not differing:
        return None
    return ", ".join(f"baseline {key}={baseline[key]} but candidate {key}={candidate[key]}"
                     for key in differing)


def require_fair_arms(baseline: CacheSettings, candidate: CacheSettings) -> None:
    """Refuse a paired run whose arms cache differently: its speedup would measure the cache."""
    difference = caching_difference(baseline, candidate)
    if difference is not None:
        raise UnfairArms(f"paired run: the arms' caching settings differ ({difference}): a speedup "
                         "between them measures the cache, not speculation; boot both with the same setting")


def running_speedup(pairs: Sequence[SamplePair]) -> float | None:
    """Median pair speedup so far, for progress lines."""
    return statistics.median(pair.speedup for pair in pairs) if pairs else None


@dataclass(frozen=True)
class SpeedupDrift:
    """Median pair speedup of the first and the last third of the rounds, against the width of
    the run's interval: a run whose speedup moved by more than its own uncertainty measured a
    machine that changed under it (heat, a neighbour's load), whatever its verdict says."""

    first_median: float
    last_median: float
    interval_width: float | None
    rounds_each: int

    @property
    def flagged(self) -> bool:
        moved = abs(self.last_median - self.first_median)
        return self.interval_width is not None and moved > self.interval_width

    def to_dict(self) -> dict[str, object]:
        return {
            "first_rounds_median": self.first_median,
            "last_rounds_median": self.last_median,
            "interval_width": self.interval_width,
            "rounds_each": self.rounds_each,
            "flagged": self.flagged,
        }


def speedup_drift(pairs: Sequence[SamplePair], ci_low: float | None, ci_high: float | None
                  ) -> SpeedupDrift | None:
    """The drift of a run of at least two rounds (None for one round: nothing to compare)."""
    rounds = sorted({pair.round_index for pair in pairs})
    if len(rounds) < 2:
        return None
    each = max(1, len(rounds) // 3)
    first = [pair.speedup for pair in pairs if pair.round_index in rounds[:each]]
    last = [pair.speedup for pair in pairs if pair.round_index in rounds[-each:]]
    width = None if ci_low is None or ci_high is None else ci_high - ci_low
    return SpeedupDrift(statistics.median(first), statistics.median(last), width, each)


@dataclass(frozen=True)
class PairedRun:
    """The measured (non-warm-up) pairs of a paired run and what telemetry said about them."""

    pairs: tuple[SamplePair, ...]
    rounds: int
    warmup_pairs_discarded: int
    elapsed_s: float
    acceptance: AcceptanceMeasurement | None
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL
    sequential: SequentialStop | None = None
    caching: tuple[CacheSettings, CacheSettings] | None = None

    def per_prompt(self) -> tuple[PromptSpeedup, ...]:
        return per_prompt_speedups(self.pairs)

    def drift(self) -> SpeedupDrift | None:
        """First rounds against last rounds, measured against this run's speedup interval."""
        estimate = self.speedup()
        return speedup_drift(self.pairs, estimate.ci_low, estimate.ci_high)

    def speedup(self, *, seed: int = DEFAULT_BOOTSTRAP_SEED) -> SpeedupEstimate | SequentialEstimate:
        """Median over prompts of each prompt's speedup, with a bootstrap interval over prompts.

        A sequential run (``until=``) returns the median pair speedup with its anytime-valid
        interval instead: a bootstrap interval is not valid once the stopping time depended on it.
        """
        if self.sequential is not None:
            return self.sequential.estimate
        return median_speedup([prompt.speedup for prompt in self.per_prompt()],
                              confidence_level=self.confidence_level, seed=seed)

    @property
    def pooled_speedup(self) -> float:
        """All candidate tokens/s over all baseline tokens/s; see ``statistics.pooled_speedup``."""
        return pooled_speedup(self.pairs)

    def identity(self) -> IdentityReport:
        return identity_report(self.pairs)

    def speedup_samples(self) -> RecordedSamples:
        """Every pair's speedup, noted as ``median_speedup_samples`` so ``specgate compare`` can
        judge another run's median against this one on both runs' data."""
        return RecordedSamples(tuple(pair.speedup for pair in self.pairs), "median",
                               "pair speedup: candidate over baseline tokens/s, one prompt in one round")

    def to_dict(self) -> dict[str, object]:
        return {
            "rounds": self.rounds,
            "warmup_pairs_discarded": self.warmup_pairs_discarded,
            "elapsed_s": self.elapsed_s,
            "speedup": self.speedup().to_dict(),
            "pooled_speedup": self.pooled_speedup,
            "per_prompt": [prompt.to_dict() for prompt in self.per_prompt()],
            "acceptance": None if self.acceptance is None else self.acceptance.to_dict(),
            "sequential": None if self.sequential is None else self.sequential.to_dict(),
            "caching": None if self.caching is None else {"baseline": dict(self.caching[0]),
                                                          "candidate": dict(self.caching[1])},
            "identity": self.identity().to_dict(),
            "pairs": [pair.to_dict() for pair in self.pairs],
        }


def run_paired(
    baseline: PromptRunner,
    candidate: PromptRunner,
    prompts: Sequence[Prompt],
    rounds: int,
    warmup: int,
    *,
    until: Threshold | Sequence[Threshold] | None = None,
    max_rounds: int | None = None,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    progress: ProgressSink | None = None,
    candidate_telemetry: TelemetryReader | None = None,
    telemetry_counting: TelemetryCounting = "delta",
    clock: Callable[[], float] = time.perf_counter,
    caching: tuple[CacheSettings, CacheSettings] | None = None,
) -> PairedRun:
    """Run the paired schedule; telemetry is read after warm-up and at the end.

    Reading the candidate's telemetry after the warm-up keeps warm-up drafting out
    of the acceptance rate. ``telemetry_counting="delta"`` subtracts the two
    readings; ``"window"`` is for engines whose reading starts a new window, so the
    final reading alone covers the measured pairs.

    With ``until`` (thresholds on the speedup) the run is sequential: after ``rounds`` rounds
    it looks at the anytime-valid interval of :mod:`~pytest_specgate.measure.sequential` after
    every round and stops once every threshold is decided or ``max_rounds`` rounds have run;
    the run's :meth:`PairedRun.speedup` is then that interval, valid however often it was looked at.

    ``caching`` (baseline's, candidate's; see ``engine_arms.arm_caching``) is recorded, and arms
    that report different settings are refused (:class:`UnfairArms`) before a request is sent.
    """
    if caching is not None:
        require_fair_arms(*caching)
    thresholds = stop_thresholds(until)
    if thresholds and (max_rounds is None or max_rounds < rounds):
        raise ValueError(f"paired run: until= needs max_rounds >= rounds ({rounds}), found {max_rounds!r}")
    schedule = paired_schedule(prompts, rounds, warmup)
    progress = progress if progress is not None else progress_for("paired rounds")
    run_started = clock()
    measured: list[SamplePair] = []
    before: TelemetryLike | None = None
    requests_done = 0

    def execute(scheduled: ScheduledPair) -> None:
        nonlocal before, requests_done
        if not scheduled.warmup and before is None and candidate_telemetry is not None:
            before = candidate_telemetry()
        pair = run_pair(baseline, candidate, scheduled, clock=clock, run_started=run_started)
        requests_done += 2
        if not scheduled.warmup:
            measured.append(pair)
        if progress is not None:
            progress.update(requests_done, running_speedup(measured))

    for scheduled in schedule:
        execute(scheduled)
    stop: SequentialStop | None = None
    rounds_run = rounds
    if thresholds and max_rounds is not None:
        while True:
            estimate = median_confidence_sequence([p.speedup for p in measured], confidence_level)
            decided = not undecided(thresholds, estimate)
            if decided or rounds_run >= max_rounds:
                stop = SequentialStop(thresholds, max_rounds, rounds_run, decided, estimate)
                break
            for prompt in prompts:
                execute(ScheduledPair(prompt, rounds_run, arm_order(rounds_run)[0], False))
            rounds_run += 1
    acceptance = measure_acceptance(candidate_telemetry, before, telemetry_counting)
    if progress is not None:
        progress.finish(requests_done, running_speedup(measured))
    return PairedRun(tuple(measured), rounds_run, warmup, clock() - run_started, acceptance,
                     confidence_level, stop, caching)
