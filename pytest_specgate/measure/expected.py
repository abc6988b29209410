"""The analytic expectation for speculative decoding (Leviathan et al. 2023, sections 3.1-3.3).

With a per-token acceptance probability alpha, draft length gamma and cost ratio
c = draft step time / target step time, one verification round yields on average
(1 - alpha^(gamma+1)) / (1 - alpha) tokens for the cost of gamma*c + 1 target steps.
Measured speedups are recorded next to this value so a reader can tell a slow engine
from a poorly matched draft.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"acceptance probability alpha must be in [0, 1], found {alpha!r}")


def _check_gamma(gamma: int) -> None:
    if gamma < 1:
        raise ValueError(f"draft length gamma must be >= 1, found {gamma!r}")


def expected_tokens_per_round(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha), as the sum 1 + alpha + ... + alpha^gamma.

    The sum form is the same value, exact at alpha = 1 (gamma + 1) and alpha = 0 (1),
    and free of the cancellation the quotient suffers near alpha = 1.
    """
    _check_alpha(alpha)
    _check_gamma(gamma)
    return math.fsum(alpha**power for power in range(gamma + 1))


def expected_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma*c + 1)): walltime gain over the target alone."""
    if cost_ratio < 0:
        raise ValueError(
            f"cost ratio c (draft step / target step) must be >= 0, found {cost_ratio!r}"
        )
    return expected_tokens_per_round(alpha, gamma) / (gamma * cost_ratio + 1.0)


def expected_acceptance_rate(alpha: float, gamma: int) -> float:
    """The accepted / drafted ratio alpha produces when every round drafts gamma tokens.

    A round accepts alpha + alpha^2 + ... + alpha^gamma tokens on average (the
    prefix up to the first rejection), so the counter ratio telemetry reports is
    not alpha itself except at 0 and 1.
    """
    return (expected_tokens_per_round(alpha, gamma) - 1.0) / gamma


def alpha_from_acceptance_rate(acceptance_rate: float, gamma: int) -> float:
    """Invert :func:`expected_acceptance_rate`: the alpha that explains a measured counter ratio."""
    _check_gamma(gamma)
    if not 0.0 <= acceptance_rate <= 1.0:
        raise ValueError(f"acceptance rate must be in [0, 1], found {acceptance_rate!r}")
    if acceptance_rate in (0.0, 1.0):
        return acceptance_rate
    from scipy.optimize import brentq

    return float(
        brentq(
            lambda alpha: expected_acceptance_rate(alpha, gamma) - acceptance_rate,
            0.0,
            1.0,
            xtol=1e-12,
        )
    )


@dataclass(frozen=True)
class SpeedupExpectation:
    """The analytic values for one (alpha, gamma, c)."""

    alpha: float
    gamma: int
    cost_ratio: float
    tokens_per_round: float
    speedup: float

    def to_dict(self) -> dict[str, object]:
        return {
            "alpha": self.alpha,
            "gamma": self.gamma,
            "cost_ratio": self.cost_ratio,
            "tokens_per_round": self.tokens_per_round,
            "speedup": self.speedup,
            "model": "Leviathan et al. 2023",
        }


def expectation(alpha: float, gamma: int, cost_ratio: float) -> SpeedupExpectation:
    return SpeedupExpectation(
        alpha,
        gamma,
        cost_ratio,
        expected_tokens_per_round(alpha, gamma),
        expected_speedup(alpha, gamma, cost_ratio),
    )


def expectation_for_acceptance_rate(
    acceptance_rate: float, gamma: int, cost_ratio: float
) -> SpeedupExpectation:
    """The expectation for what telemetry measured (accepted / drafted), not an assumed alpha."""
    return expectation(alpha_from_acceptance_rate(acceptance_rate, gamma), gamma, cost_ratio)


@dataclass(frozen=True)
class MeasuredVsExpected:
    """A measured speedup next to the analytic one; ``ratio`` = measured / expected."""

    measured_speedup: float
    expected: SpeedupExpectation
    acceptance_rate: float | None

    @property
    def ratio(self) -> float:
        return self.measured_speedup / self.expected.speedup

    def to_dict(self) -> dict[str, object]:
        return {
            "measured_speedup": self.measured_speedup,
            "expected": self.expected.to_dict(),
            "acceptance_rate": self.acceptance_rate,
            "measured_over_expected": self.ratio,
        }


def compare_to_expected(
    measured_speedup: float, acceptance_rate: float, gamma: int, cost_ratio: float
) -> MeasuredVsExpected:
    """Record a measured speedup against the expectation for the measured acceptance rate.

    Pass the pooled speedup of the same requests the acceptance rate was counted
    over (``PairedRun.pooled_speedup``) for a like-for-like comparison.
    """
    return MeasuredVsExpected(
        measured_speedup,
        expectation_for_acceptance_rate(acceptance_rate, gamma, cost_ratio),
        acceptance_rate,
    )
