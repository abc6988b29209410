"""SPEC-028 AC-10: on a 16 GB M4 the pinned pair is fast enough, accepted often enough, and stays so.

Median speedup >= 1.4x over a baseline engine without the draft (with its
bootstrap interval), acceptance >= 0.30, >= 1.2x over the last minute of a
five-minute interleaved run, and greedy answers identical to the baseline's.
The measured speedup is recorded next to the analytic one for the measured
acceptance, so a slow engine can be told from a poorly matched draft. On any
other host this runs only with --specgate-diagnostic, and never qualifies.

Two tests of the one AC, both required for it to be complete: the paired run and the
sustained window. Each boots its own pair of engines, so under xdist the sustained window
(the longest test of the suite, dispatched first by its cost) runs beside the paired run
instead of after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from spec028_backends import (
    OFFLINE_RELATION,
    Ac10Plan,
    BackendProfile,
    ac10_plan,
    fetch_pinned_pair,
    offline_acceptance,
)

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.measure import (
    IdentityCheck,
    ModelPair,
    Prompt,
    PromptRunner,
    PromptSet,
    SustainedSettings,
    compare_to_expected,
    engine_arm,
    engine_telemetry,
    load_named_prompt_set,
    model_pair,
    run_paired,
    run_sustained,
    write_sustained_artifacts,
)

MIN_MEDIAN_SPEEDUP = 1.4
MIN_ACCEPTANCE = 0.30
MIN_SUSTAINED_SPEEDUP = 1.2


@dataclass(frozen=True)
class Ac10Arms:
    """The pair, prompts and plan both AC-10 tests measure with, and this test's two engines."""

    pair: ModelPair
    prompt_set: PromptSet
    plan: Ac10Plan
    candidate: Engine
    arms: tuple[PromptRunner, PromptRunner]

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
    return Ac10Arms(pair=pair, prompt_set=prompt_set, plan=plan, candidate=candidate, arms=arms)


def _greedy_identity(evidence: EvidenceRecorder, mismatches: Sequence[IdentityCheck]) -> None:
    evidence.measure("greedy_outputs_differing_from_baseline", len(mismatches), at_most=0)
    for mismatch in mismatches:
        evidence.check(False, f"greedy output differs from the baseline: {mismatch.to_dict()}")


@pytest.mark.ac("AC-10", spec="SPEC-028", title="16 GB M4 performance canary")
@pytest.mark.specgate_cost(60)  # the paired run; the sustained window is the other AC-10 test
@pytest.mark.hardware("m4-16gb")
def test_ac10_paired_speedup_and_acceptance(
    ac10_arms: Ac10Arms, evidence: EvidenceRecorder
) -> None:
    plan, candidate, pair = ac10_arms.plan, ac10_arms.candidate, ac10_arms.pair
    paired = run_paired(
        *ac10_arms.arms, ac10_arms.prompts, plan.rounds, plan.warmup,
        candidate_telemetry=engine_telemetry(candidate),
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
    evidence.measure("median_speedup", speedup.median, "x", at_least=MIN_MEDIAN_SPEEDUP)
    if speedup.ci_low is not None and speedup.ci_high is not None:
        evidence.measure("median_speedup_ci95_low", speedup.ci_low, "x")
        evidence.measure("median_speedup_ci95_high", speedup.ci_high, "x")
    evidence.note("median_speedup_estimate", speedup.to_dict())
    evidence.check(rate is not None, "no acceptance rate could be measured on the "
                   f"{candidate.backend} backend: {acceptance}")
    if rate is not None:
        evidence.measure("acceptance_rate", rate, at_least=MIN_ACCEPTANCE)
        versus = compare_to_expected(paired.pooled_speedup, rate, gamma, plan.cost_ratio)
        evidence.note("measured_vs_expected", versus.to_dict())
        evidence.measure("expected_speedup", versus.expected.speedup, "x")
        evidence.measure("pooled_speedup", paired.pooled_speedup, "x")
        evidence.measure("measured_over_expected_speedup", versus.ratio)
    _greedy_identity(evidence, paired.identity().mismatches)


@pytest.mark.ac("AC-10", spec="SPEC-028", title="16 GB M4 performance canary")
@pytest.mark.specgate_cost(330)  # a 5-minute sustained window: dispatched first
@pytest.mark.hardware("m4-16gb")
def test_ac10_sustained_window(
    ac10_arms: Ac10Arms, evidence: EvidenceRecorder, duration_scale: float, tmp_path: Path,
) -> None:
    settings = SustainedSettings(scale=duration_scale)
    sustained = run_sustained(*ac10_arms.arms, ac10_arms.prompts, settings)
    artifacts = write_sustained_artifacts(sustained, tmp_path, stem="ac10-sustained",
                                          title="AC-10 sustained window")
    evidence.attach("ac10-sustained.png", artifacts.plot_path)
    evidence.attach("ac10-sustained.json", artifacts.data_path)
    evidence.measure("sustained_last_window_speedup", sustained.last_window_speedup, "x",
                     at_least=MIN_SUSTAINED_SPEEDUP)
    evidence.measure("sustained_whole_run_speedup", sustained.whole_run_speedup, "x")
    evidence.measure("sustained_duration", sustained.elapsed_s, "s",
                     at_least=settings.scaled_duration_s)
    _greedy_identity(evidence, sustained.identity().mismatches)


def _json(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, indent=2)
