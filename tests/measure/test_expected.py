from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_specgate.measure.expected import (
    FiniteHorizon,
    alpha_from_acceptance_rate,
    compare_to_expected,
    expectation,
    expectation_for_acceptance_rate,
    expected_acceptance_rate,
    expected_speedup,
    expected_tokens_per_round,
    finite_horizon,
)


def test_tokens_per_round_hand_computed() -> None:
    # (1 - 0.6^5) / 0.4 = (1 - 0.07776) / 0.4
    assert expected_tokens_per_round(0.6, 4) == pytest.approx(2.3056, abs=1e-12)


def test_speedup_hand_computed() -> None:
    # 2.3056 / (4 * 0.1 + 1)
    assert expected_speedup(0.6, 4, 0.1) == pytest.approx(2.3056 / 1.4, abs=1e-12)
    # alpha 0.9, gamma 8, c 0.1: (1 - 0.9^9) / (0.1 * 1.8)
    assert expected_speedup(0.9, 8, 0.1) == pytest.approx((1 - 0.9**9) / 0.18, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.05, 0.3, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("gamma", [1, 2, 4, 8])
def test_sum_form_equals_paper_quotient(alpha: float, gamma: int) -> None:
    quotient = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    assert expected_tokens_per_round(alpha, gamma) == pytest.approx(quotient, rel=1e-9)


@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_alpha_one_limit_is_exact(gamma: int) -> None:
    assert expected_tokens_per_round(1.0, gamma) == gamma + 1
    assert expected_speedup(1.0, gamma, 0.25) == (gamma + 1) / (gamma * 0.25 + 1)


@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_alpha_zero_limit_is_exact(gamma: int) -> None:
    assert expected_tokens_per_round(0.0, gamma) == 1.0
    assert expected_speedup(0.0, gamma, 0.1) == 1 / (gamma * 0.1 + 1)


def test_free_draft_with_perfect_agreement_gives_gamma_plus_one() -> None:
    assert expected_speedup(1.0, 4, 0.0) == 5.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: expected_tokens_per_round(1.5, 4), "alpha must be in"),
        (lambda: expected_tokens_per_round(-0.1, 4), "alpha must be in"),
        (lambda: expected_tokens_per_round(0.5, 0), "gamma must be >= 1"),
        (lambda: expected_speedup(0.5, 4, -1.0), "cost ratio"),
        (lambda: alpha_from_acceptance_rate(1.2, 4), "acceptance rate must be in"),
    ],
)
def test_bad_arguments_are_named(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_acceptance_rate_is_not_alpha() -> None:
    # gamma 2: accepted per round 0.5 + 0.25 = 0.75 of 2 drafted
    assert expected_acceptance_rate(0.5, 2) == pytest.approx(0.375)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.6, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [2, 4, 8])
def test_alpha_from_acceptance_rate_inverts(alpha: float, gamma: int) -> None:
    rate = expected_acceptance_rate(alpha, gamma)
    assert alpha_from_acceptance_rate(rate, gamma) == pytest.approx(alpha, abs=1e-9)


def test_compare_to_expected_records_both_sides() -> None:
    rate = expected_acceptance_rate(0.6, 4)
    comparison = compare_to_expected(1.60, rate, 4, 0.1)
    assert comparison.expected.alpha == pytest.approx(0.6, abs=1e-9)
    assert comparison.ratio == pytest.approx(1.60 / (2.3056 / 1.4), rel=1e-9)
    data = comparison.to_dict()
    assert data["measured_speedup"] == 1.60
    assert data["acceptance_rate"] == rate
    assert data["measured_over_expected"] == comparison.ratio
    assert expectation(0.6, 4, 0.1).to_dict()["tokens_per_round"] == pytest.approx(2.3056)


def _simulated_horizon(alpha: float, gamma: int, max_tokens: int, requests: int) -> tuple[float, float]:
    """An independent oracle: play the engine's rounds with random agreement, return
    (target-step-equivalent cost at c = 0.1 per request, accepted / drafted)."""
    import random

    rng = random.Random(20261203)
    cost = drafted = accepted = 0.0
    for _ in range(requests):
        left = max_tokens
        while left > 0:
            k = min(gamma, left - 1)
            if k == 0:
                cost += 1.0
                left -= 1
                continue
            j = 0
            while j < k and rng.random() < alpha:
                j += 1
            cost += 1.0 + 0.1 * k
            drafted += k
            accepted += j
            left -= j + 1
    return cost / requests, accepted / drafted


@pytest.mark.parametrize(("alpha", "gamma", "max_tokens"), [(0.9, 8, 128), (0.6, 4, 32), (0.3, 2, 9)])
def test_finite_horizon_matches_a_simulation_of_the_rounds(
    alpha: float, gamma: int, max_tokens: int
) -> None:
    horizon = finite_horizon(alpha, gamma, max_tokens)
    cost, rate = _simulated_horizon(alpha, gamma, max_tokens, requests=20_000)
    assert horizon.target_passes + 0.1 * horizon.drafted == pytest.approx(cost, rel=0.01)
    assert horizon.acceptance_rate == pytest.approx(rate, rel=0.01)


def test_finite_horizon_hand_computed_small_budgets() -> None:
    # one token: a plain target step
    assert finite_horizon(0.5, 4, 1) == FiniteHorizon(1, 1.0, 0.0, 0.0)
    # two tokens: draft 1; accepted (p=.5) ends the request, rejected leaves one plain step
    two = finite_horizon(0.5, 4, 2)
    assert (two.target_passes, two.drafted, two.accepted) == (1.5, 1.0, 0.5)
    assert two.speedup(0.0) == pytest.approx(2 / 1.5)


def test_finite_horizon_approaches_the_paper_formula_and_is_below_it() -> None:
    for alpha, gamma in [(0.9, 8), (0.6, 4), (0.3, 2)]:
        infinite = expected_speedup(alpha, gamma, 0.1)
        short = expectation(alpha, gamma, 0.1, max_tokens=128).speedup
        long = expectation(alpha, gamma, 0.1, max_tokens=20_000).speedup
        assert short < long <= infinite
        assert long == pytest.approx(infinite, rel=2e-3)
    # the worst cell: about two points at alpha 0.9, gamma 8, 128 tokens
    gap = 1 - expectation(0.9, 8, 0.1, max_tokens=128).speedup / expected_speedup(0.9, 8, 0.1)
    assert 0.01 < gap < 0.05


def test_finite_horizon_inverts_its_own_acceptance_rate() -> None:
    rate = finite_horizon(0.7, 8, 64).acceptance_rate
    assert rate != pytest.approx(expected_acceptance_rate(0.7, 8), rel=1e-3)
    found = expectation_for_acceptance_rate(rate, 8, 0.1, max_tokens=64)
    assert found.alpha == pytest.approx(0.7, abs=1e-9)
    assert found.to_dict()["model"] == "Leviathan et al. 2023, finite horizon of 64 tokens"
    assert compare_to_expected(2.0, rate, 8, 0.1, max_tokens=64).expected == found


def test_finite_horizon_bad_budget_is_named() -> None:
    with pytest.raises(ValueError, match="max_tokens must be >= 1, found 0"):
        finite_horizon(0.5, 4, 0)


@pytest.mark.parametrize(("alpha", "gamma"), [(0.9, 8), (0.6, 4)])
def test_finite_horizon_predicts_the_mock_models_rounds(alpha: float, gamma: int) -> None:
    """The mock's own decoding rounds (no HTTP, no clocks), counted: the finite-horizon
    expectation for their acceptance rate predicts their cost within 0.5%, where the
    infinite-horizon formula is off by more than that at gamma 8."""
    from pytest_specgate.engines.mock.model import (
        DecodeParams,
        DraftModel,
        TargetModel,
        speculative_rounds,
        vocabulary_named,
    )
    from pytest_specgate.engines.mock.settings import DEFAULT_DRAFT, DEFAULT_TARGET, MockSettings

    vocab = vocabulary_named(MockSettings().vocab)
    target = TargetModel(DEFAULT_TARGET, vocab, 0, eos_one_in=0)
    draft = DraftModel(DEFAULT_DRAFT, vocab, alpha)
    budget, prompts = 128, 400
    passes = drafted = accepted = 0
    for number in range(prompts):
        rounds = speculative_rounds(
            target, draft, vocab.encode(f"prompt {number} for the horizon"), DecodeParams(budget),
            gamma=gamma, target_step_s=0.0, draft_step_s=0.0,
        )
        for decoded in rounds:
            passes += 1
            drafted += decoded.drafted
            accepted += decoded.accepted
    counted = budget * prompts / (passes + 0.1 * drafted)
    rate = accepted / drafted
    finite = expectation_for_acceptance_rate(rate, gamma, 0.1, max_tokens=budget).speedup
    assert counted == pytest.approx(finite, rel=0.005)
    if gamma == 8:
        infinite = expectation_for_acceptance_rate(rate, gamma, 0.1).speedup
        assert abs(counted / infinite - 1) > 0.005
