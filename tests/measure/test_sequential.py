"""Sequential paired runs: the confidence sequence, and run_paired(until=, max_rounds=)."""

from __future__ import annotations

import itertools

import pytest
from measure_fakes import FakeArm, FakeClock, make_prompts

from pytest_specgate.contracts.thresholds import Threshold
from pytest_specgate.measure.paired import run_paired
from pytest_specgate.measure.samples import Prompt
from pytest_specgate.measure.sequential import (
    decisive_count,
    median_confidence_sequence,
    undecided,
    wealth,
)


def test_eight_pairs_all_above_decide_at_95_percent_and_seven_do_not() -> None:
    assert wealth(8, 8) >= 40 > wealth(7, 7)
    assert decisive_count(8, 0.025) == 8
    assert decisive_count(7, 0.025) is None


def test_interval_ends_are_order_statistics_and_hold_the_median() -> None:
    values = [1.0 + index / 100 for index in range(40)]
    estimate = median_confidence_sequence(values)
    k = decisive_count(40, 0.025)
    assert k is not None
    assert (estimate.ci_low, estimate.ci_high) == (sorted(values)[40 - k], sorted(values)[k - 1])
    assert estimate.ci_low is not None and estimate.ci_high is not None
    assert estimate.ci_low < estimate.median < estimate.ci_high


def test_too_few_values_leave_the_interval_open() -> None:
    estimate = median_confidence_sequence([1.5, 1.6, 1.7])
    assert (estimate.ci_low, estimate.ci_high) == (None, None)
    assert undecided([Threshold(at_least=1.4)], estimate) == (Threshold(at_least=1.4),)


def _ratio_arms(clock: FakeClock, ratios: itertools.cycle[float]) -> tuple[FakeArm, FakeArm]:
    """Baseline takes 1 s, the candidate 1/ratio s, ratio drawn in turn from ``ratios``."""
    log: list[tuple[str, str]] = []

    def candidate_wall(prompt: Prompt, call: int, now: float) -> float:
        return 1.0 / next(ratios)

    return (FakeArm("B", clock, log, lambda prompt, call, now: 1.0),
            FakeArm("C", clock, log, candidate_wall))


def test_a_clear_speedup_stops_as_soon_as_the_bound_is_decided(clock: FakeClock) -> None:
    baseline, candidate = _ratio_arms(clock, itertools.cycle([1.9, 2.0, 2.1]))
    run = run_paired(baseline, candidate, make_prompts(3), rounds=1, warmup=0,
                     until=Threshold(at_least=1.4), max_rounds=10, clock=clock)
    assert run.sequential is not None
    assert (run.sequential.rounds_run, run.sequential.decided, run.rounds) == (3, True, 3)
    assert len(run.pairs) == 9
    estimate = run.speedup()
    assert estimate.ci_low is not None and estimate.ci_low >= 1.4
    assert run.to_dict()["sequential"]["stopped_because"] == "every threshold decided"  # type: ignore[index]


def test_a_speedup_at_the_bound_runs_to_max_rounds_undecided(clock: FakeClock) -> None:
    baseline, candidate = _ratio_arms(clock, itertools.cycle([1.3, 1.5]))
    run = run_paired(baseline, candidate, make_prompts(2), rounds=1, warmup=0,
                     until=[Threshold(at_least=1.4)], max_rounds=6, clock=clock)
    assert run.sequential is not None
    assert (run.sequential.rounds_run, run.sequential.decided) == (6, False)
    estimate = run.speedup()
    verdict = Threshold(at_least=1.4).judge(estimate.point, estimate.ci_low, estimate.ci_high)
    assert verdict.verdict == "inconclusive"


def test_until_needs_max_rounds(clock: FakeClock) -> None:
    baseline, candidate = _ratio_arms(clock, itertools.cycle([2.0]))
    with pytest.raises(ValueError, match="until= needs max_rounds >= rounds"):
        run_paired(baseline, candidate, make_prompts(1), rounds=2, warmup=0,
                   until=Threshold(at_least=1.4), clock=clock)


def test_a_threshold_needs_a_bound() -> None:
    with pytest.raises(ValueError, match="give at_least, at_most or both"):
        Threshold()


def test_a_speedup_that_moves_more_than_its_interval_is_flagged(clock: FakeClock) -> None:
    ratios = itertools.chain([2.0] * 6, [1.2] * 6, itertools.repeat(1.2))
    baseline, candidate = _ratio_arms(clock, ratios)  # type: ignore[arg-type]
    run = run_paired(baseline, candidate, make_prompts(2), rounds=6, warmup=0, clock=clock)
    drift = run.drift()
    assert drift is not None and drift.flagged
    assert (drift.first_median, drift.last_median, drift.rounds_each) == (2.0, 1.2, 2)
    steady, steady_candidate = _ratio_arms(clock, itertools.cycle([1.9, 2.1]))
    calm = run_paired(steady, steady_candidate, make_prompts(2), rounds=6, warmup=0, clock=clock).drift()
    assert calm is not None and not calm.flagged
