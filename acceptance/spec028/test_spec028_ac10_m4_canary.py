"""SPEC-028 AC-10: on a 16 GB M4 the pinned pair is fast enough, accepted often enough, and stays so.

Median speedup >= 1.4x over a baseline engine without the draft (with its
bootstrap interval), acceptance >= 0.30, >= 1.2x over the last minute of a
five-minute interleaved run, and greedy answers identical to the baseline's.
The measured speedup is recorded next to the analytic one for the measured
acceptance, so a slow engine can be told from a poorly matched draft. On any
other host this runs only with --specgate-diagnostic, and never qualifies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from spec028_backends import (
    OFFLINE_RELATION,
    BackendProfile,
    ac10_plan,
    fetch_pinned_pair,
    offline_acceptance,
)
from spec028_checks import TerminalLines

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.measure import (
    ProgressReporter,
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


@pytest.mark.ac("AC-10", spec="SPEC-028", title="16 GB M4 performance canary")
@pytest.mark.specgate_cost(360)  # a 5-minute sustained window after the paired run
@pytest.mark.hardware("m4-16gb")
def test_ac10_speedup_acceptance_and_sustained_window(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder,
    duration_scale: float, terminal_lines: TerminalLines, tmp_path: Path, diagnostic_run: bool,
) -> None:
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
    paired_prompts = prompt_set.prompts[: plan.prompts]
    paired = run_paired(
        *arms, paired_prompts, plan.rounds, plan.warmup,
        progress=ProgressReporter(terminal_lines, label="AC-10 paired"),
        candidate_telemetry=engine_telemetry(candidate),
    )
    settings = SustainedSettings(scale=duration_scale)
    sustained = run_sustained(
        *arms, paired_prompts, settings,
        progress=ProgressReporter(terminal_lines, label="AC-10 sustained",
                                  planned_s=settings.scaled_duration_s),
    )
    artifacts = write_sustained_artifacts(sustained, tmp_path, stem="ac10-sustained",
                                          title="AC-10 sustained window")
    evidence.attach("ac10-sustained.png", artifacts.plot_path)
    evidence.attach("ac10-sustained.json", artifacts.data_path)
    evidence.attach("ac10-paired.json", _json(paired.to_dict()))

    acceptance = paired.acceptance
    rate = acceptance.acceptance_rate if acceptance is not None and acceptance.complete else None
    if rate is None:
        longest = plan.max_tokens or max(prompt.max_tokens for prompt in prompt_set.prompts)
        counted = offline_acceptance(candidate, [p.as_messages() for p in paired_prompts], longest)
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
    evidence.measure("sustained_last_window_speedup", sustained.last_window_speedup, "x",
                     at_least=MIN_SUSTAINED_SPEEDUP)
    evidence.measure("sustained_whole_run_speedup", sustained.whole_run_speedup, "x")
    evidence.measure("sustained_duration", sustained.elapsed_s, "s",
                     at_least=settings.scaled_duration_s)
    mismatched = len(paired.identity().mismatches) + len(sustained.identity().mismatches)
    evidence.measure("greedy_outputs_differing_from_baseline", mismatched, at_most=0)
    for mismatch in (*paired.identity().mismatches, *sustained.identity().mismatches):
        evidence.check(False, f"greedy output differs from the baseline: {mismatch.to_dict()}")


def _json(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, indent=2)
