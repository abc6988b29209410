"""The analytic expectation for speculative decoding (Leviathan et al. 2023, sections 3.1-3.3).

With a per-token acceptance probability alpha, draft length gamma and cost ratio
c = draft step time / target step time, one verification round yields on average
(1 - alpha^(gamma+1)) / (1 - alpha) tokens for the cost of gamma*c + 1 target steps.
Measured speedups are recorded next to this value so a reader can tell a slow engine
from a poorly matched draft.

That formula is the infinite-horizon limit. A request with a token budget of N ends
with short rounds: an engine drafts ``k = min(gamma, remaining - 1)`` tokens, and the
last token is a plain target step. :func:`finite_horizon` gives the exact expectation
for a budget of N tokens (no early EOS), which is what a benchmark of N-token answers
should be compared with; at large gamma and small N the two differ by several percent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_specgate.contracts.validation import is_fraction


def _check_fraction(what: str, value: float) -> None:
    if not is_fraction(value):
        raise ValueError(f"{what} must be in [0, 1], found {value!r}")


def _check_gamma(gamma: int) -> None:
    if gamma < 1:
        raise ValueError(f"draft length gamma must be >= 1, found {gamma!r}")


def expected_tokens_per_round(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha), as the sum 1 + alpha + ... + alpha^gamma.

    The sum form is the same value, exact at alpha = 1 (gamma + 1) and alpha = 0 (1),
    and free of the cancellation the quotient suffers near alpha = 1.
    """
    _check_fraction("acceptance probability alpha", alpha)
    _check_gamma(gamma)
    return math.fsum(alpha**power for power in range(gamma + 1))


def _check_cost_ratio(cost_ratio: float) -> None:
    if not cost_ratio >= 0:
        raise ValueError(
            f"cost ratio c (draft step / target step) must be >= 0, found {cost_ratio!r}"
        )


def expected_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma*c + 1)): walltime gain over the target alone."""
    _check_cost_ratio(cost_ratio)
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
    _check_fraction("acceptance rate", acceptance_rate)
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
class FiniteHorizon:
    """Expected counts for one request of ``max_tokens`` tokens (no early EOS).

    ``target_passes`` counts verification rounds and plain target steps; a request
    costs ``target_passes + c * drafted`` target-step times, against ``max_tokens``
    for the target alone.
    """

    max_tokens: int
    target_passes: float
    drafted: float
    accepted: float

    def speedup(self, cost_ratio: float) -> float:
        _check_cost_ratio(cost_ratio)
        return self.max_tokens / (self.target_passes + cost_ratio * self.drafted)

    @property
    def acceptance_rate(self) -> float:
        """accepted / drafted summed over many such requests (what counters report)."""
        return 0.0 if self.drafted == 0 else self.accepted / self.drafted


def finite_horizon(alpha: float, gamma: int, max_tokens: int) -> FiniteHorizon:
    """Exact expectations for a ``max_tokens`` budget, by recursion over the tokens left.

    With n tokens left an engine drafts k = min(gamma, n - 1); j drafts are accepted
    with probability alpha^j (1 - alpha) for j < k and alpha^k for j = k, and the round
    emits j + 1 tokens (the accepted prefix and the target's own token). With one
    token left it takes a plain target step.
    """
    _check_fraction("acceptance probability alpha", alpha)
    _check_gamma(gamma)
    if max_tokens < 1:
        raise ValueError(f"token budget max_tokens must be >= 1, found {max_tokens!r}")
    passes = [0.0, 1.0]
    drafted = [0.0, 0.0]
    accepted = [0.0, 0.0]
    for left in range(2, max_tokens + 1):
        k = min(gamma, left - 1)
        weights = [alpha**j * (1.0 - alpha) for j in range(k)] + [alpha**k]
        passes.append(1.0 + math.fsum(w * passes[left - j - 1] for j, w in enumerate(weights)))
        drafted.append(k + math.fsum(w * drafted[left - j - 1] for j, w in enumerate(weights)))
        accepted.append(
            math.fsum(w * (j + accepted[left - j - 1]) for j, w in enumerate(weights))
        )
    return FiniteHorizon(max_tokens, passes[max_tokens], drafted[max_tokens], accepted[max_tokens])


@dataclass(frozen=True)
class SpeedupExpectation:
    """The analytic values for one (alpha, gamma, c), and the token budget when finite."""

    alpha: float
    gamma: int
    cost_ratio: float
    tokens_per_round: float
    speedup: float
    max_tokens: int | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "alpha": self.alpha,
            "gamma": self.gamma,
            "cost_ratio": self.cost_ratio,
            "tokens_per_round": self.tokens_per_round,
            "speedup": self.speedup,
            "model": "Leviathan et al. 2023",
        }
        if self.max_tokens is not None:
            data["max_tokens"] = self.max_tokens
            data["model"] = f"Leviathan et al. 2023, finite horizon of {self.max_tokens} tokens"
        return data


def expectation(
    alpha: float, gamma: int, cost_ratio: float, max_tokens: int | None = None
) -> SpeedupExpectation:
    """The infinite-horizon expectation, or the exact one for ``max_tokens``-token requests."""
    if max_tokens is None:
        return SpeedupExpectation(
            alpha,
            gamma,
            cost_ratio,
            expected_tokens_per_round(alpha, gamma),
            expected_speedup(alpha, gamma, cost_ratio),
        )
    horizon = finite_horizon(alpha, gamma, max_tokens)
    return SpeedupExpectation(
        alpha,
        gamma,
        cost_ratio,
        max_tokens / horizon.target_passes,
        horizon.speedup(cost_ratio),
        max_tokens,
    )


def _alpha_for_rate(acceptance_rate: float, gamma: int, max_tokens: int | None) -> float:
    if max_tokens is None:
        return alpha_from_acceptance_rate(acceptance_rate, gamma)
    _check_gamma(gamma)
    _check_fraction("acceptance rate", acceptance_rate)
    if acceptance_rate in (0.0, 1.0) or max_tokens < 2:
        return acceptance_rate
    from scipy.optimize import brentq

    return float(
        brentq(
            lambda alpha: finite_horizon(alpha, gamma, max_tokens).acceptance_rate - acceptance_rate,
            0.0,
            1.0,
            xtol=1e-12,
        )
    )


def expectation_for_acceptance_rate(
    acceptance_rate: float, gamma: int, cost_ratio: float, max_tokens: int | None = None
) -> SpeedupExpectation:
    """The expectation for what telemetry measured (accepted / drafted), not an assumed alpha.

    With ``max_tokens`` the rate is inverted through the same finite horizon, since
    the short last rounds of a request also change the ratio its counters report.
    """
    return expectation(
        _alpha_for_rate(acceptance_rate, gamma, max_tokens), gamma, cost_ratio, max_tokens
    )


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
    measured_speedup: float,
    acceptance_rate: float,
    gamma: int,
    cost_ratio: float,
    max_tokens: int | None = None,
) -> MeasuredVsExpected:
    """Record a measured speedup against the expectation for the measured acceptance rate.

    Pass the pooled speedup of the same requests the acceptance rate was counted
    over (``PairedRun.pooled_speedup``) for a like-for-like comparison, and their
    token budget as ``max_tokens`` when every answer runs to it.
    """
    return MeasuredVsExpected(
        measured_speedup,
        expectation_for_acceptance_rate(acceptance_rate, gamma, cost_ratio, max_tokens),
        acceptance_rate,
    )
