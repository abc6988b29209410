"""Sequential stopping with error control that survives looking after every round.

A bootstrap interval re-checked after every round and acted on as soon as it clears a bound
passes far more often than its level says when the truth sits at the bound (each look is a
new chance to be fooled; ``benchmarks/sequential_stopping.py`` measures it). What is used
instead is an *anytime-valid confidence sequence* for the median pair speedup: a sign test by
betting (Shafer 2021, "Testing by betting"; Waudby-Smith & Ramdas 2023 for bounded means, here
the mean of the indicators ``speedup > b``). For a candidate bound ``b`` a gambler bets on each
pair being above it; under "the median is at most b" the wealth is a nonnegative supermartingale
at round ends, so by Ville's inequality it ever reaches ``2 / alpha`` with probability at most
``alpha / 2``, however many rounds are looked at. The bounds never rejected form the interval.

Why this one: it needs no distributional assumption and no range for the speedups (only the
sign of ``speedup - b`` enters), its interval is about the median (the figure AC-10 bounds), and
it is a page of pure Python, where ``confseq`` is a compiled extension and ``expectation`` and
``savvi`` target means of bounded or Gaussian data. Its price is power: with every pair above
the bound it needs 8 pairs to decide at 95% (see :data:`BETS`).

Validity at round ends: the prompts of one round differ, so their pairs are not identically
distributed; with the bet fixed for the whole round, the round's expected wealth factor is at
most 1 whenever the *average* over the round's prompts of P(speedup > b) is at most 1/2 (AM-GM),
which is what "the median of the pooled pair speedups is at most b" means for a balanced design.
So stopping is decided only at round ends.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from pytest_specgate.contracts.thresholds import (
    DEFAULT_CONFIDENCE_LEVEL,
    Threshold,
    check_confidence_level,
)

BETS = (0.2, 0.5, 1.0, 1.5, 1.9)
"""Fixed bets (fractions of wealth staked on "above", from 0 to 2) averaged with equal weight: a
mixture of test martingales is one, so no bet has to be tuned to the unknown effect. The largest
bet makes an all-above run decide after 8 pairs at 95%; the smallest keeps wealth growing when
the speedup is only a little above the bound."""
METHOD = "anytime-valid sign-test confidence sequence (betting mixture)"


def wealth(above: int, pairs: int) -> float:
    """The mixture's wealth after ``pairs`` bets of which ``above`` won (order does not matter)."""
    below = pairs - above
    return math.fsum((1 + bet / 2) ** above * (1 - bet / 2) ** below for bet in BETS) / len(BETS)


@cache
def decisive_count(pairs: int, alpha_side: float) -> int | None:
    """The fewest wins out of ``pairs`` that bring the wealth to ``1 / alpha_side``, if any."""
    for above in range(pairs + 1):
        if wealth(above, pairs) >= 1 / alpha_side:
            return above
    return None


@dataclass(frozen=True)
class SequentialEstimate:
    """The median pair speedup with its anytime-valid interval (None ends: not bounded yet)."""

    median: float
    ci_low: float | None
    ci_high: float | None
    confidence_level: float
    n: int
    method: str = METHOD

    @property
    def point(self) -> float:
        return self.median

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def median_confidence_sequence(
    values: Sequence[float], confidence_level: float = DEFAULT_CONFIDENCE_LEVEL
) -> SequentialEstimate:
    """The median of ``values`` and the confidence sequence's interval after all of them.

    The low end is the k-th largest value, k being the fewest wins that reject "median <= b" at
    ``alpha / 2``; the high end mirrors it. With too few values either end is None.
    """
    level = check_confidence_level(confidence_level, "median confidence sequence")
    if not values:
        raise ValueError("median confidence sequence: no values (the run measured no pairs)")
    ordered = sorted(float(value) for value in values)
    n = len(ordered)
    k = decisive_count(n, (1 - level) / 2)
    low = None if k is None or k == 0 else ordered[n - k]
    high = None if k is None or k == 0 else ordered[k - 1]
    return SequentialEstimate(statistics.median(ordered), low, high, level, n)


def stop_thresholds(until: Threshold | Sequence[Threshold] | None) -> tuple[Threshold, ...]:
    """A run's ``until=`` (one threshold, several, or none) as the tuple :func:`undecided` reads."""
    if until is None:
        return ()
    return (until,) if isinstance(until, Threshold) else tuple(until)


def undecided(thresholds: Sequence[Threshold], estimate: SequentialEstimate) -> tuple[Threshold, ...]:
    """The thresholds the interval neither clears nor misses yet."""
    return tuple(
        threshold
        for threshold in thresholds
        if threshold.judge(estimate.point, estimate.ci_low, estimate.ci_high).verdict == "inconclusive"
    )


@dataclass(frozen=True)
class SequentialStop:
    """Why a sequential paired run stopped where it did, for the evidence."""

    thresholds: tuple[Threshold, ...]
    max_rounds: int
    rounds_run: int
    decided: bool
    estimate: SequentialEstimate

    def to_dict(self) -> dict[str, object]:
        return {
            "until": [threshold.describe() for threshold in self.thresholds],
            "max_rounds": self.max_rounds,
            "rounds_run": self.rounds_run,
            "stopped_because": "every threshold decided" if self.decided else "max_rounds reached",
            "estimate": self.estimate.to_dict(),
        }
