"""SPEC-028 AC-10: on a 16 GB M4 the pinned pair is fast enough, accepted often enough, and stays so.

Median speedup >= 1.4x over a baseline engine without the draft, acceptance >= 0.30,
>= 1.2x over the last minute of a five-minute interleaved run, and greedy answers
identical to the baseline's. The speedups are judged on their confidence intervals
(passed, failed or inconclusive): the paired run adds rounds until its anytime-valid
interval decides the 1.4x bound or ``MAX_ROUNDS_FACTOR`` times the plan's rounds have run.
The paired run also records acceptance per draft position beside alpha^k (where the
engine counts positions) and TTFT / ITL percentiles of both arms with their ratios.
The measured speedup is recorded next to the analytic one for the measured
acceptance, so a slow engine can be told from a poorly matched draft, and next to the one a cost
model fitted from the run's own streams predicts (target step, draft and verification cost, fixed
cost per request), with the gap from analytic to measured attributed to each. On any
other host this runs only with --specgate-diagnostic, and never qualifies.

Two tests of the one AC, both required for it to be complete: the paired run and the
sustained window. Each boots its own pair of engines, so under xdist the sustained window
(the longest test of the suite, dispatched first by its cost) runs beside the paired run
instead of after it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from spec028_backends import (
    LANE_BOUNDS_VARIABLE,
    OFFLINE_RELATION,
    Ac10Bounds,
    Ac10Plan,
    BackendProfile,
    ac10_bounds,
    ac10_plan,
    fetch_pinned_pair,
    offline_acceptance,
)

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.measure import (
    AcceptanceMeasurement,
    CacheSettings,
    CostModelError,
    IdentityCheck,
    ModelPair,
    PairedRun,
    Prompt,
    PromptRunner,
    PromptSet,
    SustainedSettings,
    Threshold,
    arm_caching,
    compare_to_expected,
    engine_arm,
    engine_telemetry,
    explain_speedup,
    latency_summary,
    load_named_prompt_set,
    model_pair,
    position_acceptance,
    run_paired,
    run_sustained,
    ttft_samples,
    write_attribution_plot,
    write_position_plot,
    write_sustained_artifacts,
)

MIN_ACCEPTANCE = 0.30
MAX_ROUNDS_FACTOR = 4
"""The sequential paired run stops at this many times the plan's rounds when still undecided."""
MAX_EXTRA_SUSTAINED_PAIRS = 16
"""Pairs the sustained window may add after its duration until its interval decides the bound
(a shortened run holds a pair or two in its window; the anytime-valid interval needs 8)."""
@dataclass(frozen=True)
class Ac10Arms:
    """The pair, prompts and plan both AC-10 tests measure with, and this test's two engines."""

    pair: ModelPair
    prompt_set: PromptSet
    plan: Ac10Plan
    candidate: Engine
    arms: tuple[PromptRunner, PromptRunner]
    caching: tuple[CacheSettings, CacheSettings]
    bounds: Ac10Bounds

    @property
    def prompts(self) -> tuple[Prompt, ...]:
        return tuple(self.prompt_set.prompts[: self.plan.prompts])


@pytest.fixture
def ac10_arms(spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder,
              duration_scale: float, diagnostic_run: bool) -> Ac10Arms:
    """What both AC-10 tests share: the pinned pair (fetched and verified once; a second fetch
    re-verifies the snapshot on disk), the plan and the notes about them, and a baseline and
    a speculative engine booted for the test, so each test's evidence names its own engines
    and the two tests can run on different xdist workers at once."""
    pair = model_pair("AC-10")
    prompt_set = load_named_prompt_set(pair.prompt_sets[0])
    choice = fetch_pinned_pair(spec028, pair, diagnostic=diagnostic_run)
    evidence.note("weights", choice.to_record())
    plan = ac10_plan(spec028, pair, choice)
    bounds = ac10_bounds(os.environ.get(LANE_BOUNDS_VARIABLE), diagnostic=diagnostic_run)
    evidence.note("bounds", bounds.to_dict())
    evidence.note("model_pair", pair.to_dict())
    evidence.note("prompt_fixture", prompt_set.to_dict())
    evidence.note("duration_scale", duration_scale)
    evidence.note("plan", {"rounds": plan.rounds, "warmup": plan.warmup, "prompts": plan.prompts,
                           "max_tokens": plan.max_tokens or "per prompt",
                           "cost_ratio": plan.cost_ratio,
                           "cost_ratio_source": plan.cost_ratio_source})
    candidate = boot_engine(**plan.candidate)
    baseline = boot_engine(**plan.baseline)
    arms = (engine_arm(baseline, max_tokens=plan.max_tokens),
            engine_arm(candidate, max_tokens=plan.max_tokens))
    return Ac10Arms(pair=pair, prompt_set=prompt_set, plan=plan, candidate=candidate, arms=arms,
                    caching=(arm_caching(baseline), arm_caching(candidate)), bounds=bounds)


def _greedy_identity(evidence: EvidenceRecorder, mismatches: Sequence[IdentityCheck]) -> None:
    evidence.measure("greedy_outputs_differing_from_baseline", len(mismatches), at_most=0)
    for mismatch in mismatches:
        evidence.check(False, f"greedy output differs from the baseline: {mismatch.to_dict()}")


@pytest.mark.ac("AC-10", spec="SPEC-028", title="16 GB M4 performance canary")
@pytest.mark.specgate_cost(60)  # the paired run; the sustained window is the other AC-10 test
@pytest.mark.hardware("m4-16gb")
def test_ac10_paired_speedup_and_acceptance(
    ac10_arms: Ac10Arms, evidence: EvidenceRecorder, confidence_level: float, tmp_path: Path,
) -> None:
    plan, candidate, pair = ac10_arms.plan, ac10_arms.candidate, ac10_arms.pair
    paired = run_paired(
        *ac10_arms.arms, ac10_arms.prompts, plan.rounds, plan.warmup,
        until=Threshold(at_least=ac10_arms.bounds.median_speedup), max_rounds=MAX_ROUNDS_FACTOR * plan.rounds,
        confidence_level=confidence_level,
        candidate_telemetry=engine_telemetry(candidate),
        caching=ac10_arms.caching,
    )
    evidence.attach("ac10-paired.json", _json(paired.to_dict()))

    acceptance = paired.acceptance
    rate = acceptance.acceptance_rate if acceptance is not None and acceptance.complete else None
    if rate is None:
        longest = plan.max_tokens or max(prompt.max_tokens for prompt in ac10_arms.prompt_set.prompts)
        counted = offline_acceptance(candidate, [p.as_messages() for p in ac10_arms.prompts], longest)
        if counted is not None:
            evidence.note("acceptance_source", {**counted.to_dict(), "relation": OFFLINE_RELATION})
            rate = counted.acceptance_rate
    else:
        evidence.note("acceptance_source", acceptance.to_dict() if acceptance else None)
    speedup = paired.speedup()
    gamma = candidate.telemetry().num_draft_tokens or pair.num_draft_tokens
    evidence.measure("median_speedup", speedup, "x", at_least=ac10_arms.bounds.median_speedup,
                     samples=paired.speedup_samples())
    evidence.note("median_speedup_estimate", speedup.to_dict())
    if paired.sequential is not None:
        evidence.note("sequential_stop", paired.sequential.to_dict())
        evidence.measure("paired_rounds", paired.sequential.rounds_run, "rounds")
    drift = paired.drift()
    if drift is not None:
        evidence.note("speedup_drift", drift.to_dict())
        evidence.measure("speedup_drift_beyond_interval", int(drift.flagged))
    _positions(evidence, acceptance, gamma, tmp_path)
    _latencies(evidence, paired, confidence_level)
    evidence.check(rate is not None, "no acceptance rate could be measured on the "
                   f"{candidate.backend} backend: {acceptance}")
    if rate is not None:
        evidence.measure("acceptance_rate", rate, at_least=MIN_ACCEPTANCE)
        versus = compare_to_expected(paired.pooled_speedup, rate, gamma, plan.cost_ratio)
        evidence.note("measured_vs_expected", versus.to_dict())
        evidence.measure("expected_speedup", versus.expected.speedup, "x")
        evidence.measure("pooled_speedup", paired.pooled_speedup, "x")
        evidence.measure("measured_over_expected_speedup", versus.ratio)
        _speedup_model(evidence, paired, rate, gamma, plan, confidence_level, tmp_path)
    _greedy_identity(evidence, paired.identity().mismatches)


@pytest.mark.ac("AC-10", spec="SPEC-028", title="16 GB M4 performance canary")
@pytest.mark.specgate_cost(330)  # a 5-minute sustained window: dispatched first
@pytest.mark.hardware("m4-16gb")
def test_ac10_sustained_window(
    ac10_arms: Ac10Arms, evidence: EvidenceRecorder, duration_scale: float, tmp_path: Path,
    confidence_level: float,
) -> None:
    settings = SustainedSettings(scale=duration_scale)
    bound = ac10_arms.bounds.sustained_speedup
    sustained = run_sustained(*ac10_arms.arms, ac10_arms.prompts, settings, until=Threshold(at_least=bound),
                              max_extra_pairs=MAX_EXTRA_SUSTAINED_PAIRS, confidence_level=confidence_level)
    if sustained.sequential is not None:
        evidence.note("sustained_stop", sustained.sequential.to_dict())
    artifacts = write_sustained_artifacts(sustained, tmp_path, stem="ac10-sustained",
                                          title="AC-10 sustained window")
    evidence.attach("ac10-sustained.png", artifacts.plot_path)
    evidence.attach("ac10-sustained.json", artifacts.data_path)
    evidence.measure("sustained_last_window_speedup",
                     sustained.last_window_estimate(confidence_level=confidence_level), "x",
                     at_least=bound)
    evidence.measure("sustained_whole_run_speedup", sustained.whole_run_speedup, "x")
    evidence.measure("sustained_duration", sustained.elapsed_s, "s",
                     at_least=settings.scaled_duration_s)
    _greedy_identity(evidence, sustained.identity().mismatches)


def _speedup_model(evidence: EvidenceRecorder, paired: PairedRun, rate: float, gamma: int, plan: Ac10Plan,
                   confidence_level: float, directory: Path) -> None:
    """The costs fitted from this run's own streams, the speedup they predict beside the measured
    one, and the walk from the analytic figure to the measured (a waterfall plot); or why not."""
    try:
        explanation = explain_speedup(paired.pairs, gamma, rate, plan.cost_ratio,
                                      confidence_level=confidence_level)
    except CostModelError as exc:
        evidence.note("speedup_model", {"unavailable": str(exc)})
        return
    evidence.note("speedup_model", explanation.to_dict())
    for name, figure, unit in explanation.recorded_figures():
        evidence.measure(name, figure, unit)
    plot = write_attribution_plot(explanation, directory / "ac10-speedup-model.png",
                                  title="AC-10 speedup, analytic to measured")
    evidence.attach("ac10-speedup-model.png", plot)


def _positions(evidence: EvidenceRecorder, acceptance: AcceptanceMeasurement | None, gamma: int,
               directory: Path) -> None:
    """acceptance_rate_position_k beside alpha^k, and their plot; or why the engine has none."""
    positions = None if acceptance is None else position_acceptance(acceptance, gamma)
    if positions is None:
        why = "no acceptance measurement" if acceptance is None else acceptance.positions_reason
        evidence.note("acceptance_per_position", {"unavailable": why})
        return
    evidence.note("acceptance_per_position", positions.to_dict())
    for k, (measured, expected) in enumerate(zip(positions.measured, positions.expected, strict=True), 1):
        evidence.measure(f"acceptance_rate_position_{k}", measured)
        evidence.measure(f"analytic_acceptance_rate_position_{k}", expected)
    plot = write_position_plot(positions, directory / "ac10-acceptance-per-position.png",
                               title="AC-10 acceptance per draft position")
    evidence.attach("ac10-acceptance-per-position.png", plot)


def _latencies(evidence: EvidenceRecorder, paired: PairedRun, confidence_level: float) -> None:
    """TTFT and ITL p50/p90/p99 of both arms (ms) and candidate/baseline with intervals."""
    latency = latency_summary(paired.pairs, confidence_level=confidence_level)
    evidence.note("latency", latency.to_dict())
    for arm, prefix in (("candidate", ""), ("baseline", "baseline_")):
        samples = ttft_samples(paired.pairs, arm)
        for name, value in latency.percentiles_ms[arm].items():
            evidence.measure(f"{prefix}{name}", value, "ms", samples=samples.get(name))
    for name, ratio in latency.ratios.items():
        evidence.measure(name, ratio, "x")


def _json(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, indent=2)
