"""The spec author's guide's worked example (docs/spec-authors.md): an AC-10-like speedup canary.

On the built-in mock with real step times (3 ms a target step, 0.3 ms a draft step), so the
paired run, acceptance rate, sustained window, greedy identity and plot all measure
something. A real canary drops the mock options and runs with --specgate-engine=mlx (or vllm).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_specgate import (
    ChatMessage,
    Engine,
    EvidenceRecorder,
    Prompt,
    SustainedSettings,
    compare_to_expected,
    engine_arm,
    engine_telemetry,
    run_paired,
    run_sustained,
    write_sustained_artifacts,
)

QUESTIONS = ["Write a haiku about caches.", "List three prime numbers.", "Explain a draft model."]
PROMPTS = [Prompt(f"q{i}", (ChatMessage("user", text),), max_tokens=24) for i, text in enumerate(QUESTIONS)]
GAMMA, COST_RATIO = 4, 0.1  # draft tokens per step; draft step time / target step time


@pytest.mark.ac("AC-100", spec="SPEC-EXAMPLE", title="speedup canary (worked example)")
@pytest.mark.specgate_cost(360)  # a 5-minute sustained window after the paired run
@pytest.mark.hardware("m4-16gb")
@pytest.mark.engine("mock", target="specgate-mock-target", draft="specgate-mock-draft",
                    num_draft_tokens=GAMMA, alpha=0.8, target_step_ms=3.0, draft_step_ms=0.3, eos_one_in=0)
def test_speedup_canary(engine: Engine, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder,
                        duration_scale: float, tmp_path: Path) -> None:
    baseline = boot_engine(draft=None, num_draft_tokens=None)  # the same target, no draft
    arms = (engine_arm(baseline), engine_arm(engine))
    paired = run_paired(*arms, PROMPTS, rounds=3, warmup=1, candidate_telemetry=engine_telemetry(engine))
    sustained = run_sustained(*arms, PROMPTS, SustainedSettings(300, 60, scale=duration_scale))
    plot = write_sustained_artifacts(sustained, tmp_path, stem="canary", title="speedup canary")
    evidence.attach("canary.png", plot.plot_path)
    evidence.attach("canary.json", plot.data_path)
    evidence.note("median_speedup_estimate", paired.speedup().to_dict())
    evidence.measure("median_speedup", paired.speedup(), "x", at_least=1.4, samples=paired.speedup_samples())
    rate = paired.acceptance.acceptance_rate if paired.acceptance is not None else None
    evidence.check(rate is not None, f"the {engine.backend} engine reported no acceptance rate")
    if rate is not None:
        evidence.measure("acceptance_rate", rate, at_least=0.30)
        versus = compare_to_expected(paired.pooled_speedup, rate, GAMMA, COST_RATIO)
        evidence.measure("measured_over_expected_speedup", versus.ratio)
    evidence.measure("sustained_last_window_speedup", sustained.last_window_estimate(), "x", at_least=1.2)
    differing = len(paired.identity().mismatches) + len(sustained.identity().mismatches)
    evidence.measure("greedy_outputs_differing_from_baseline", differing, at_most=0)
