"""The cost model against synthetic runs whose step, draft, verification and fixed costs are known."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_specgate.contracts.speedup_model import speedup_model_line
from pytest_specgate.measure.cost_model import (
    SPLIT_ASSUMED,
    SPLIT_BY_PREFILL,
    CostModelError,
    explain_speedup,
    write_attribution_plot,
)
from pytest_specgate.measure.samples import RequestSample, SamplePair, TimedSample


@dataclass(frozen=True)
class Engine:
    """Known costs: step ``t`` s, draft ``c`` and verification marginal ``s`` (target steps per
    token), prefill ``s`` steps per prompt token on both arms, fixed seconds per request."""

    step_s: float = 0.02
    draft: float = 0.2
    verify_marginal: float = 0.25
    baseline_fixed_s: float = 0.15
    candidate_extra_fixed_s: float = 0.05
    alpha: float = 0.8
    gamma: int = 4


def _rounds(engine: Engine, tokens: int, rng: random.Random) -> list[tuple[int, int]]:
    """(drafted, emitted) per round, drafting min(gamma, remaining - 1) as the engines do."""
    rounds = []
    remaining = tokens
    while remaining > 0:
        k = min(engine.gamma, remaining - 1)
        accepted = 0
        while accepted < k and rng.random() < engine.alpha:
            accepted += 1
        rounds.append((k, accepted + 1))
        remaining -= accepted + 1
    return rounds


def _sample(wall: float, gaps: list[float], tokens: int, prompt_tokens: int | None) -> RequestSample:
    return RequestSample(wall_s=wall, ttft_s=wall - math.fsum(gaps), output_tokens=tokens, text="x" * tokens,
                         itl_s=tuple(gaps), prompt_tokens=prompt_tokens)


def synthetic_pairs(engine: Engine, *, requests: int = 60, tokens: int = 128, seed: int = 7,
                    prompt_tokens: bool = True) -> tuple[list[SamplePair], float]:
    """Pairs with exactly the engine's costs, and the run's accepted / drafted."""
    rng = random.Random(seed)
    pairs, drafted, accepted = [], 0, 0
    t = engine.step_s
    for index in range(requests):
        prompt = 20 + 7 * (index % 9)
        prefill = engine.verify_marginal * prompt * t
        base_gaps = [t] * (tokens - 1)
        base_wall = engine.baseline_fixed_s + prefill + t * tokens
        rounds = _rounds(engine, tokens, rng)
        drafted += sum(k for k, _ in rounds)
        accepted += sum(emitted - 1 for _, emitted in rounds)
        costs = [t * (1 + (engine.draft + engine.verify_marginal) * k) for k, _ in rounds]
        cand_gaps = costs[1:]
        cand_wall = engine.baseline_fixed_s + engine.candidate_extra_fixed_s + prefill + math.fsum(costs)
        count = prompt if prompt_tokens else None
        base = _sample(base_wall, base_gaps, tokens, count)
        cand = _sample(cand_wall, cand_gaps, tokens, count)
        pairs.append(SamplePair(f"p{index}", 0, "baseline",
                                TimedSample("baseline", f"p{index}", 0, 0, 1, base),
                                TimedSample("candidate", f"p{index}", 0, 1, 2, cand)))
    return pairs, accepted / drafted


def test_the_fit_recovers_known_costs_and_predicts_the_measured_speedup() -> None:
    engine = Engine()
    pairs, rate = synthetic_pairs(engine)
    explanation = explain_speedup(pairs, engine.gamma, rate, prior_cost_ratio=0.1, n_resamples=200)
    costs = explanation.costs
    assert costs.target_step_s == pytest.approx(engine.step_s, rel=1e-9)
    assert costs.split_basis == SPLIT_BY_PREFILL
    assert costs.prefill_slope == pytest.approx(engine.verify_marginal, rel=1e-6)
    assert costs.draft_cost == pytest.approx(engine.draft, rel=0.05)
    assert costs.verify_cost == pytest.approx(1 + engine.gamma * engine.verify_marginal, rel=0.02)
    # The fixed cost is what lies outside the decode steps; the prefill is part of it.
    mean_prefill = statistics.fmean(engine.verify_marginal * (20 + 7 * (i % 9)) * engine.step_s
                                    for i in range(60))
    assert costs.baseline_fixed_s == pytest.approx(engine.baseline_fixed_s + mean_prefill, rel=1e-6)
    assert costs.candidate_fixed_s == pytest.approx(
        engine.baseline_fixed_s + engine.candidate_extra_fixed_s + mean_prefill, rel=0.02)
    attribution = explanation.attribution
    assert attribution.measured / attribution.predicted == pytest.approx(1.0, abs=0.01)
    assert math.prod(attribution.factors) == pytest.approx(attribution.measured / attribution.analytic)
    draft, verify, fixed, _ = attribution.factors
    assert draft < 1 and verify < 1 and fixed < 1, attribution


def test_every_figure_has_an_interval_around_its_point() -> None:
    engine = Engine()
    pairs, rate = synthetic_pairs(engine, requests=30)
    explanation = explain_speedup(pairs, engine.gamma, rate, prior_cost_ratio=0.1, n_resamples=200)
    for name, interval in explanation.intervals.items():
        assert interval.ci_low is not None and interval.ci_high is not None, name
        assert interval.ci_low <= interval.point * (1 + 1e-9), name
        assert interval.point <= interval.ci_high * (1 + 1e-9), name
    record = explanation.to_dict()
    assert record["n_pairs"] == 30
    assert [step["step"] for step in record["attribution"]] == [  # type: ignore[index]
        "draft cost", "verification cost", "fixed cost per request", "load and variation"]


def test_a_dearer_draft_is_fitted_as_one_and_nothing_else_moves() -> None:
    cheap = Engine(draft=0.1)
    dear = dataclasses.replace(cheap, draft=0.4)
    fits = [explain_speedup(synthetic_pairs(e)[0], e.gamma, synthetic_pairs(e)[1], 0.1, n_resamples=10).costs
            for e in (cheap, dear)]
    assert fits[1].draft_cost == pytest.approx(0.4, rel=0.05)
    assert fits[0].draft_cost == pytest.approx(0.1, rel=0.1)
    assert fits[1].verify_cost == pytest.approx(fits[0].verify_cost, rel=0.02)
    assert fits[1].target_step_s == pytest.approx(fits[0].target_step_s)


def test_a_fixed_cost_only_the_candidate_pays_shows_in_the_fixed_factor_not_in_the_draft() -> None:
    light = Engine(candidate_extra_fixed_s=0.0)
    heavy = dataclasses.replace(light, candidate_extra_fixed_s=0.4)
    explained = [explain_speedup(synthetic_pairs(e)[0], e.gamma, synthetic_pairs(e)[1], 0.1, n_resamples=10)
                 for e in (light, heavy)]
    assert explained[1].costs.draft_cost == pytest.approx(explained[0].costs.draft_cost, rel=1e-9)
    assert explained[1].costs.candidate_fixed_s - explained[0].costs.candidate_fixed_s == pytest.approx(0.4)
    assert explained[1].attribution.factors[2] < explained[0].attribution.factors[2] - 0.05


def test_without_prompt_token_counts_the_split_is_not_claimed() -> None:
    engine = Engine()
    pairs, rate = synthetic_pairs(engine, prompt_tokens=False)
    costs = explain_speedup(pairs, engine.gamma, rate, 0.1, n_resamples=10).costs
    assert costs.split_basis == SPLIT_ASSUMED
    assert costs.prefill_slope is None
    assert costs.verify_cost == 1.0
    assert costs.draft_cost == pytest.approx(engine.draft + engine.verify_marginal, rel=0.05)


def _held_up(timed: TimedSample, stall_s: float, gaps_held: int) -> TimedSample:
    """The request with ``gaps_held`` of its streamed gaps each ``stall_s`` longer."""
    sample = timed.sample
    gaps = list(sample.itl_s)
    for index in range(gaps_held):
        gaps[(index + 1) * len(gaps) // (gaps_held + 1)] += stall_s
    held = dataclasses.replace(sample, wall_s=sample.wall_s + gaps_held * stall_s, itl_s=tuple(gaps))
    return dataclasses.replace(timed, sample=held)


def _slower(timed: TimedSample, extra_s: float) -> TimedSample:
    """The request ``extra_s`` longer outside its streamed gaps."""
    slower = dataclasses.replace(timed.sample, wall_s=timed.sample.wall_s + extra_s)
    return dataclasses.replace(timed, sample=slower)


def _stalled(pair: SamplePair, stall_s: float) -> SamplePair:
    """The pair with its candidate held up ``stall_s`` once in the middle of its stream, and
    its baseline (which streams many more gaps) held up in 20 of them, 5 ms each."""
    return dataclasses.replace(pair, candidate=_held_up(pair.candidate, stall_s, 1),
                               baseline=_held_up(pair.baseline, 0.005, 20))


def test_stalls_while_decoding_are_load_not_cost() -> None:
    """A neighbour's burst that holds up some candidate rounds slows the measured speedup; the
    typical costs stay where they were and the gap shows as load and variation."""
    engine = Engine()
    pairs, rate = synthetic_pairs(engine)
    calm = explain_speedup(pairs, engine.gamma, rate, 0.1, n_resamples=10)
    assert calm.attribution.factors[3] == pytest.approx(1.0, abs=0.01)
    loaded = explain_speedup([_stalled(pair, 0.6) if index % 3 == 0 else pair
                              for index, pair in enumerate(pairs)], engine.gamma, rate, 0.1, n_resamples=10)
    assert loaded.costs.target_step_s == pytest.approx(calm.costs.target_step_s)
    assert loaded.costs.draft_cost == pytest.approx(calm.costs.draft_cost)
    assert loaded.costs.candidate_fixed_s == pytest.approx(calm.costs.candidate_fixed_s)
    assert loaded.attribution.measured < calm.attribution.measured * 0.95
    assert loaded.attribution.factors[3] < 0.95, loaded.attribution


def test_unstreamed_answers_cannot_be_fitted() -> None:
    engine = Engine()
    pairs, rate = synthetic_pairs(engine, requests=4)
    flat = [dataclasses.replace(pair, baseline=dataclasses.replace(
        pair.baseline, sample=dataclasses.replace(pair.baseline.sample, itl_s=()))) for pair in pairs]
    with pytest.raises(CostModelError, match="decode step"):
        explain_speedup(flat, engine.gamma, rate, 0.1, n_resamples=10)


def test_the_summary_line_reads_like_the_issue_asks() -> None:
    assert speedup_model_line(1.714, 0.213, 2.31, 180.4, 150.0, 1.62) == (
        "predicted 1.71x (draft 0.21 target-steps, verify 2.3x, fixed 180 ms/request, baseline 150 ms), "
        "measured 1.62x")


def test_the_waterfall_plot_is_written(tmp_path: Path) -> None:
    engine = Engine()
    pairs, rate = synthetic_pairs(engine, requests=10)
    explanation = explain_speedup(pairs, engine.gamma, rate, 0.1, n_resamples=50)
    path = write_attribution_plot(explanation, tmp_path / "waterfall.png", title="synthetic")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"



def test_short_answers_read_the_full_round_before_their_shortened_last_rounds() -> None:
    """8-token answers: their last two rounds draft fewer than gamma, which would pull the
    median round, and with it the draft cost, down."""
    engine = Engine(verify_marginal=0.0)
    pairs, rate = synthetic_pairs(engine, tokens=8)
    costs = explain_speedup(pairs, engine.gamma, rate, 0.1, n_resamples=10).costs
    assert costs.draft_cost == pytest.approx(engine.draft, rel=0.05)


def test_a_prefill_slope_lost_in_noise_claims_no_verification_cost() -> None:
    """Prompt lengths that do not visibly change the time (noise of 20 ms a request, no prefill
    cost): the slope is taken as 0, so the verification costs one step and the draft all of m."""
    engine = Engine(verify_marginal=0.0)
    pairs, rate = synthetic_pairs(engine)
    noise = random.Random(11)
    noisy = [dataclasses.replace(pair, baseline=_slower(pair.baseline, noise.uniform(0, 0.02)))
             for pair in pairs]
    costs = explain_speedup(noisy, engine.gamma, rate, 0.1, n_resamples=10).costs
    assert costs.prefill_slope == 0.0
    assert costs.verify_cost == 1.0
    assert costs.draft_cost == pytest.approx(engine.draft, rel=0.02)
