"""The interval of a figure's relative change between two runs, from both runs' samples.

Judging a new run's figure against the base run's interval alone ignores the new run's own
noise: two runs of one commit then differ "significantly" far more often than the level says.
Here both runs are resampled independently (a percentile bootstrap of the two-sample statistic
``(stat(new) - stat(base)) / |stat(base)|``, which is ``stat(new) / stat(base) - 1`` for positive
figures and keeps its sign, "new is higher", for negative ones), so the interval carries both
runs' uncertainty. A change is a regression only where the whole interval lies beyond the
tolerance on the bad side; each side of a two-sided interval at level ``1 - alpha`` errs with
probability about ``alpha / 2``.
``benchmarks/compare_error_rates.py`` measures that rate, and the power to find a 10% slowdown,
over 1,000 pairs of simulated runs (docs/statistics.md).

Values within a run are treated as exchangeable: the paired design (baseline and candidate back
to back, interleaved) is what makes pair speedups so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_specgate.contracts.samples import RecordedSamples
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL, check_confidence_level

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

DIFFERENCE_RESAMPLES = 2000
DIFFERENCE_SEED = 20261204
_CHUNK = 250
METHOD = "two-sample percentile bootstrap of (stat(new) - stat(base)) / |stat(base)|"


@dataclass(frozen=True)
class RelativeChange:
    """``point`` and its interval ``low``..``high`` as relative changes (-0.1 is 10% lower; for a
    negative figure too)."""

    point: float
    low: float
    high: float
    confidence_level: float
    n_base: int
    n_new: int
    method: str = METHOD


def _statistic(values: NDArray[np.float64], statistic: str) -> NDArray[np.float64]:
    """The statistic along the last axis."""
    import numpy as np

    if statistic == "mean":
        return np.asarray(values.mean(axis=-1), dtype=float)
    percentile = 50.0 if statistic == "median" else float(statistic[1:])
    return np.asarray(np.percentile(values, percentile, axis=-1), dtype=float)


def _resampled(values: NDArray[np.float64], statistic: str, resamples: int,
               rng: np.random.Generator) -> NDArray[np.float64]:
    import numpy as np

    out = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        stop = min(resamples, start + _CHUNK)
        draws = rng.integers(0, len(values), (stop - start, len(values)))
        out[start:stop] = _statistic(values[draws], statistic)
    return out


def relative_change(base: RecordedSamples, new: RecordedSamples, *,
                    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
                    resamples: int = DIFFERENCE_RESAMPLES, seed: int = DIFFERENCE_SEED) -> RelativeChange:
    """The relative change of ``new``'s statistic over ``base``'s with its bootstrap interval.

    Both must use one statistic; the base statistic must not be 0 (a relative change from 0 is
    undefined). The seed is fixed, so the same two bundles always compare the same way.
    """
    import numpy as np

    level = check_confidence_level(confidence_level, "relative change")
    if base.statistic != new.statistic:
        raise ValueError(f"relative change: the base's samples are summarised by {base.statistic}, "
                         f"the new run's by {new.statistic}")
    base_values = np.asarray(base.values, dtype=float)
    new_values = np.asarray(new.values, dtype=float)
    base_point = float(_statistic(base_values, base.statistic))
    if base_point == 0:
        raise ValueError("relative change: the base statistic is 0")
    point = (float(_statistic(new_values, new.statistic)) - base_point) / abs(base_point)
    rng = np.random.default_rng(seed)
    base_draws = _resampled(base_values, base.statistic, resamples, rng)
    new_draws = _resampled(new_values, new.statistic, resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (new_draws - base_draws) / np.abs(base_draws)
    ratios = ratios[np.isfinite(ratios)]
    tail = (1 - level) / 2
    low, high = (float(q) for q in np.quantile(ratios, (tail, 1 - tail)))
    return RelativeChange(point, low, high, level, len(base.values), len(new.values))

