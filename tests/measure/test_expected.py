from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_specgate.measure.expected import (
    alpha_from_acceptance_rate,
    compare_to_expected,
    expectation,
    expected_acceptance_rate,
    expected_speedup,
    expected_tokens_per_round,
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
