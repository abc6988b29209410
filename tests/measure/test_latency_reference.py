"""The latency ratio intervals are scipy's paired percentile bootstrap, recomputed independently.

``scipy.stats.bootstrap`` resamples the pair indices (as its ``paired=True`` does inside) and
hands them to the statistic, which is written here on its own: TTFT percentiles of the resampled
pairs, ITL percentiles of the gaps the resampled pairs pooled. Both ends of every interval must
match at the documented level, seed and resample count; a bootstrap that never draws some pair
(indices from ``0..n-2``) or resamples the arms apart (breaking the pairing) lands elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import bootstrap

from pytest_specgate.measure.latency import LATENCY_RESAMPLES, LATENCY_SEED, PERCENTILES, latency_summary
from pytest_specgate.measure.samples import Arm, RequestSample, SamplePair, TimedSample

SEED = 7
RESAMPLES = 999
EXACT = 1e-12
# Per pair: (baseline TTFT s, candidate TTFT s, baseline gaps s, candidate gaps s). The last pair is
# the slowest candidate by far, so an interval that never resamples it is visibly narrower.
PAIRS = [
    (0.120, 0.150, (0.030, 0.031), (0.012, 0.040, 0.011)),
    (0.110, 0.131, (0.029,), (0.013, 0.038)),
    (0.135, 0.162, (0.032, 0.030, 0.031), (0.010, 0.045)),
    (0.118, 0.149, (0.028, 0.033), (0.015,)),
    (0.127, 0.170, (0.031,), (0.011, 0.042, 0.012)),
    (0.122, 0.141, (0.030, 0.029), (0.014, 0.039)),
    (0.140, 0.166, (0.033,), (0.012, 0.041)),
    (0.115, 0.138, (0.027, 0.032), (0.013, 0.044, 0.010)),
    (0.131, 0.420, (0.030,), (0.090, 0.120)),
]


def _pairs() -> list[SamplePair]:
    def timed(arm: Arm, index: int, ttft: float, gaps: tuple[float, ...]) -> TimedSample:
        sample = RequestSample(wall_s=1.0, ttft_s=ttft, output_tokens=8, text="x", itl_s=gaps)
        return TimedSample(arm, f"p{index}", 0, 0.0, 1.0, sample)

    return [SamplePair(f"p{index}", 0, "baseline", timed("baseline", index, base, base_gaps),
                       timed("candidate", index, cand, cand_gaps))
            for index, (base, cand, base_gaps, cand_gaps) in enumerate(PAIRS)]


Statistic = Callable[..., NDArray[np.float64]]


def _ratio_statistic(kind: str, q: int) -> Statistic:
    """Candidate over baseline percentile ``q`` (ms) for each row of resampled pair indices."""
    ttft = {"baseline": np.asarray([row[0] for row in PAIRS]) * 1000,
            "candidate": np.asarray([row[1] for row in PAIRS]) * 1000}
    gaps = {"baseline": [np.asarray(row[2]) * 1000 for row in PAIRS],
            "candidate": [np.asarray(row[3]) * 1000 for row in PAIRS]}

    def one(indices: NDArray[np.int64]) -> float:
        if kind == "ttft":
            return float(np.percentile(ttft["candidate"][indices], q)
                         / np.percentile(ttft["baseline"][indices], q))
        pooled = {arm: np.concatenate([gaps[arm][i] for i in indices]) for arm in ("baseline", "candidate")}
        return float(np.percentile(pooled["candidate"], q) / np.percentile(pooled["baseline"], q))

    def statistic(indices: NDArray[np.int64], axis: int = -1) -> NDArray[np.float64]:
        """Vectorised as scipy calls it: one value per resample along the last ``axis``."""
        assert axis == -1
        rows = np.atleast_2d(indices)
        return np.asarray([one(row) for row in rows]).reshape(indices.shape[:-1])

    return statistic


def _reference(kind: str, q: int, level: float, seed: int, resamples: int) -> tuple[float, float]:
    result = bootstrap((np.arange(len(PAIRS)),), _ratio_statistic(kind, q), confidence_level=level,
                       method="percentile", n_resamples=resamples, vectorized=True,
                       rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("kind", ["ttft", "itl"])
@pytest.mark.parametrize("q", PERCENTILES)
def test_each_ratio_interval_is_scipys_paired_percentile_bootstrap(kind: str, q: int) -> None:
    ratio = latency_summary(_pairs(), seed=SEED, n_resamples=RESAMPLES).ratios[f"{kind}_p{q}_ratio"]

    assert (ratio.confidence_level, ratio.n) == (0.95, len(PAIRS))
    reference = _reference(kind, q, 0.95, SEED, RESAMPLES)
    assert (ratio.ci_low, ratio.ci_high) == pytest.approx(reference, abs=EXACT)
    assert ratio.point == pytest.approx(float(_ratio_statistic(kind, q)(np.arange(len(PAIRS)))))


def test_the_level_given_is_the_level_computed() -> None:
    summary = latency_summary(_pairs(), confidence_level=0.8, seed=SEED, n_resamples=RESAMPLES)
    ratio = summary.ratios["ttft_p90_ratio"]

    assert ratio.confidence_level == 0.8
    at_80 = _reference("ttft", 90, 0.8, SEED, RESAMPLES)
    assert (ratio.ci_low, ratio.ci_high) == pytest.approx(at_80, abs=EXACT)
    assert at_80 != _reference("ttft", 90, 0.95, SEED, RESAMPLES)


def test_the_default_seed_and_resamples_are_the_documented_ones() -> None:
    ratio = latency_summary(_pairs()).ratios["itl_p50_ratio"]

    reference = _reference("itl", 50, 0.95, LATENCY_SEED, LATENCY_RESAMPLES)
    assert (ratio.ci_low, ratio.ci_high) == pytest.approx(reference, abs=EXACT)


def test_one_pair_has_no_interval_and_two_pairs_have_one() -> None:
    one = latency_summary(_pairs()[:1], n_resamples=RESAMPLES).ratios["ttft_p50_ratio"]
    two = latency_summary(_pairs()[:2], n_resamples=RESAMPLES).ratios["ttft_p50_ratio"]

    assert (one.n, one.ci_low, one.ci_high) == (1, None, None)
    assert two.n == 2 and two.ci_low is not None and two.ci_high is not None


def test_the_summary_names_each_ratio_and_counts_requests_and_gaps() -> None:
    summary = latency_summary(_pairs(), n_resamples=RESAMPLES)

    assert summary.requests == len(PAIRS)
    assert summary.itl_gaps == {"baseline": sum(len(row[2]) for row in PAIRS),
                                "candidate": sum(len(row[3]) for row in PAIRS)}
    assert all(ratio.name == name for name, ratio in summary.ratios.items())
    names = (f"{kind}_p{q}_ratio" for kind in ("ttft", "itl") for q in PERCENTILES)
    assert sorted(summary.ratios) == sorted(names)


def test_no_pairs_and_an_unstreamed_request_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="latency: no pairs were measured"):
        latency_summary([])
    pair = _pairs()[0]
    not_streamed = replace(pair.baseline.sample, ttft_s=None)
    unstreamed = replace(pair, baseline=replace(pair.baseline, sample=not_streamed))
    with pytest.raises(ValueError, match="latency: a baseline request has no time to first token"):
        latency_summary([unstreamed])
