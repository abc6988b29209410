"""The speedup interval is scipy's BCa bootstrap at 95%, recomputed here independently.

A check that the interval merely brackets the median passes at 90% too; this one compares
both ends with ``scipy.stats.bootstrap`` called with the documented level, seed and resamples.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from pytest_specgate.measure.statistics import median_speedup

VALUES = [1.31, 1.52, 1.44, 1.61, 1.38, 1.49, 1.57, 1.42, 1.66, 1.35, 1.29, 1.71]


def _reference(level: float, seed: int, resamples: int) -> tuple[float, float]:
    result = bootstrap((np.asarray(VALUES),), np.median, confidence_level=level, method="BCa",
                       n_resamples=resamples, vectorized=True, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def test_the_default_interval_is_scipys_bca_at_95_percent() -> None:
    estimate = median_speedup(VALUES, seed=11, n_resamples=4000)
    assert estimate.confidence_level == 0.95
    assert estimate.to_dict()["confidence_level"] == 0.95
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(_reference(0.95, 11, 4000), abs=1e-12)


def test_the_reference_tells_95_from_90_percent() -> None:
    wide, narrow = _reference(0.95, 11, 4000), _reference(0.90, 11, 4000)
    assert wide[0] < narrow[0] and narrow[1] < wide[1]
