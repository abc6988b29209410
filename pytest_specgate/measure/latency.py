"""Latency percentiles of a paired run: time to first token and inter-token latency per arm.

Speculation trades latencies: the first token waits for the draft and the verification, later
tokens arrive in bursts. A serving team bounds a regression as a ratio ("TTFT p99 no worse than
1.1x baseline"), so each percentile is recorded for both arms and as candidate / baseline with a
paired bootstrap interval: pairs are resampled, each keeping both arms' requests, so the drift
the interleaving cancels stays cancelled in every resample. An ITL percentile pools the gaps of
the resampled requests. With few requests a p99 is close to the largest sample; the record
states ``n`` beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_specgate.contracts.samples import RecordedSamples
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL, check_confidence_level
from pytest_specgate.measure.samples import ARMS, Arm, SamplePair

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

PERCENTILES = (50, 90, 99)
LATENCY_RESAMPLES = 1999
LATENCY_SEED = 20261203
METHOD = "paired percentile bootstrap over pairs"


@dataclass(frozen=True)
class RatioEstimate:
    """Candidate over baseline for one latency percentile, with its bootstrap interval."""

    name: str
    point: float
    ci_low: float | None
    ci_high: float | None
    confidence_level: float
    n: int
    method: str = METHOD

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "point": self.point,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence_level": self.confidence_level,
            "n": self.n,
            "method": self.method,
        }


@dataclass(frozen=True)
class LatencySummary:
    """``percentiles_ms[arm]["ttft_ms_p50"]`` etc., and ``ratios["ttft_p50_ratio"]`` etc."""

    percentiles_ms: dict[Arm, dict[str, float]]
    ratios: dict[str, RatioEstimate]
    requests: int
    itl_gaps: dict[Arm, int]

    def to_dict(self) -> dict[str, object]:
        return {
            "percentiles_ms": {arm: dict(values) for arm, values in self.percentiles_ms.items()},
            "ratios": {name: ratio.to_dict() for name, ratio in self.ratios.items()},
            "requests_per_arm": self.requests,
            "itl_gaps": dict(self.itl_gaps),
        }


def _arm_samples(pairs: Sequence[SamplePair], arm: Arm) -> tuple[list[float], list[tuple[float, ...]]]:
    samples = [(pair.baseline if arm == "baseline" else pair.candidate).sample for pair in pairs]
    ttft = [sample.ttft_s for sample in samples]
    if any(value is None for value in ttft):
        raise ValueError(f"latency: a {arm} request has no time to first token (not streamed)")
    return [float(value) for value in ttft if value is not None], [sample.itl_s for sample in samples]


def ttft_samples(pairs: Sequence[SamplePair], arm: Arm) -> dict[str, RecordedSamples]:
    """One arm's per-request times to first token (ms), keyed by the percentile figure each
    backs (``ttft_ms_p50`` ...), to note as ``<figure>_samples`` for ``specgate compare``."""
    values = tuple(value * 1000 for value in _arm_samples(pairs, arm)[0])
    return {f"ttft_ms_p{q}": RecordedSamples(values, f"p{q}", f"{arm} request's time to first token (ms)")
            for q in PERCENTILES}


def _pooled_ratio(itl: Mapping[Arm, Sequence[NDArray[np.float64]]], draw: NDArray[np.int64]) -> list[float]:
    """Candidate over baseline ITL percentiles of one resample (NaN where an arm has no gaps)."""
    import numpy as np

    pooled = {arm: np.concatenate([itl[arm][index] for index in draw]) for arm in ARMS}
    if any(len(gaps) == 0 for gaps in pooled.values()):
        return [float("nan")] * len(PERCENTILES)
    candidate = np.percentile(pooled["candidate"], PERCENTILES)
    baseline = np.percentile(pooled["baseline"], PERCENTILES)
    return [float(c / b) for c, b in zip(candidate, baseline, strict=True)]


def latency_summary(
    pairs: Sequence[SamplePair],
    *,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    n_resamples: int = LATENCY_RESAMPLES,
    seed: int = LATENCY_SEED,
) -> LatencySummary:
    """TTFT and ITL p50/p90/p99 per arm (ms) and candidate/baseline ratios with intervals.

    Raises ValueError when a request was not streamed (no TTFT) or no request streamed two
    deltas (no ITL): a latency figure without samples would be invented.
    """
    import numpy as np

    level = check_confidence_level(confidence_level, "latency summary")
    if not pairs:
        raise ValueError("latency: no pairs were measured")
    ttft = {arm: np.asarray(_arm_samples(pairs, arm)[0]) * 1000 for arm in ARMS}
    itl = {arm: [np.asarray(gaps) * 1000 for gaps in _arm_samples(pairs, arm)[1]] for arm in ARMS}
    if any(sum(len(gaps) for gaps in itl[arm]) == 0 for arm in ARMS):
        raise ValueError("latency: no request streamed two deltas, so there is no inter-token latency")
    percentiles: dict[Arm, dict[str, float]] = {arm: {} for arm in ARMS}
    for arm in ARMS:
        pooled = np.concatenate(itl[arm])
        for q in PERCENTILES:
            percentiles[arm][f"ttft_ms_p{q}"] = float(np.percentile(ttft[arm], q))
            percentiles[arm][f"itl_ms_p{q}"] = float(np.percentile(pooled, q))
    rng = np.random.default_rng(seed)
    n = len(pairs)
    draws = rng.integers(0, n, (n_resamples, n))
    tail = (1 - level) / 2
    ttft_ratios = (np.percentile(ttft["candidate"][draws], PERCENTILES, axis=1)
                   / np.percentile(ttft["baseline"][draws], PERCENTILES, axis=1))
    itl_ratios = np.asarray([_pooled_ratio(itl, draw) for draw in draws]).T
    ratios: dict[str, RatioEstimate] = {}
    for row, q in enumerate(PERCENTILES):
        for kind, resampled in (("ttft", ttft_ratios[row]), ("itl", itl_ratios[row])):
            point = percentiles["candidate"][f"{kind}_ms_p{q}"] / percentiles["baseline"][f"{kind}_ms_p{q}"]
            finite = resampled[np.isfinite(resampled)]
            low, high = ((None, None) if n < 2 or len(finite) == 0
                         else (float(np.quantile(finite, tail)), float(np.quantile(finite, 1 - tail))))
            name = f"{kind}_p{q}_ratio"
            ratios[name] = RatioEstimate(name, float(point), low, high, level, n)
    return LatencySummary(percentiles, ratios, n, {arm: sum(len(g) for g in itl[arm]) for arm in ARMS})
