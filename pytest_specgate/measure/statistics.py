"""Statistics over paired runs: speedups, their confidence interval, acceptance, identity.

Pure functions over the sample types; scipy and numpy are imported only inside the
function that resamples, so importing this module stays cheap.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pytest_specgate.contracts.engine import acceptance_rate_of
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL
from pytest_specgate.measure.samples import RequestSample, SamplePair

DEFAULT_RESAMPLES = 9999
DEFAULT_BOOTSTRAP_SEED = 20230518


@dataclass(frozen=True)
class PromptSpeedup:
    """One prompt's speedup: the median of its pair speedups over the measured rounds."""

    prompt_id: str
    speedup: float
    pair_speedups: tuple[float, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "prompt_id": self.prompt_id,
            "speedup": self.speedup,
            "pair_speedups": list(self.pair_speedups),
        }


def per_prompt_speedups(pairs: Sequence[SamplePair]) -> tuple[PromptSpeedup, ...]:
    """Group pairs by prompt (first-seen order) so each prompt counts once in the median."""
    grouped: dict[str, list[float]] = {}
    for pair in pairs:
        grouped.setdefault(pair.prompt_id, []).append(pair.speedup)
    return tuple(
        PromptSpeedup(prompt_id, statistics.median(values), tuple(values))
        for prompt_id, values in grouped.items()
    )


def pooled_speedup(pairs: Sequence[SamplePair]) -> float:
    """Total candidate throughput over total baseline throughput (all tokens / all wall time).

    This is the figure the analytic expectation for a pooled acceptance rate
    predicts: tokens per verification round are 1 + gamma * accepted / drafted
    over the same requests. The median of per-prompt speedups weighs prompts
    equally instead, so it drifts from that expectation when acceptance differs
    between prompts; both are recorded.
    """
    if not pairs:
        raise ValueError("pooled speedup: no pairs were measured")
    baseline_tokens = sum(pair.baseline.sample.output_tokens for pair in pairs)
    if baseline_tokens == 0:
        raise ValueError("pooled speedup: the baseline produced no output tokens")
    baseline_tps = baseline_tokens / math.fsum(pair.baseline.sample.wall_s for pair in pairs)
    candidate_tps = sum(pair.candidate.sample.output_tokens for pair in pairs) / math.fsum(
        pair.candidate.sample.wall_s for pair in pairs
    )
    return candidate_tps / baseline_tps


BootstrapMethod = Literal["BCa", "percentile", "basic"]


@dataclass(frozen=True)
class SpeedupEstimate:
    """Median speedup with a bootstrap confidence interval.

    ``ci_low``/``ci_high`` are None when fewer than two values exist: an interval
    from one observation would be a made-up number.
    """

    median: float
    ci_low: float | None
    ci_high: float | None
    confidence_level: float
    n: int
    method: str
    n_resamples: int
    seed: int

    @property
    def point(self) -> float:
        """The median: what ``evidence.measure`` records as the value beside the interval."""
        return self.median

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def median_speedup(
    speedups: Sequence[float],
    *,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    method: BootstrapMethod = "BCa",
) -> SpeedupEstimate:
    """Median of ``speedups`` with a seeded (hence reproducible) bootstrap interval."""
    if not speedups:
        raise ValueError("median speedup: no speedups to summarize (the run measured no pairs)")
    values = [float(value) for value in speedups]
    median = statistics.median(values)
    if len(values) < 2:
        return SpeedupEstimate(
            median, None, None, confidence_level, len(values), "none: fewer than 2 values", 0, seed
        )
    if len(set(values)) == 1:
        return SpeedupEstimate(
            median, median, median, confidence_level, len(values), "degenerate: all equal", 0, seed
        )
    low, high = _bootstrap_median_interval(values, confidence_level, n_resamples, seed, method)
    return SpeedupEstimate(
        median, low, high, confidence_level, len(values), method, n_resamples, seed
    )


def _bootstrap_median_interval(
    values: Sequence[float],
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: BootstrapMethod,
) -> tuple[float, float]:
    import numpy as np
    from scipy.stats import bootstrap

    result = bootstrap(
        (np.asarray(values, dtype=float),),
        np.median,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        method=method,
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)


class TelemetryLike(Protocol):
    """The fields of ``contracts.engine.Telemetry`` acceptance needs (duck-typed)."""

    @property
    def available(self) -> bool: ...
    @property
    def drafted(self) -> int | None: ...
    @property
    def accepted(self) -> int | None: ...
    @property
    def window(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def drafts(self) -> int | None: ...
    @property
    def accepted_per_position(self) -> tuple[int, ...] | None: ...


AcceptanceBasis = Literal["delta", "window", "reset_during_window", "unavailable"]


@dataclass(frozen=True)
class AcceptanceMeasurement:
    """Draft tokens proposed and accepted over the candidate runs, and their ratio.

    ``complete`` is False when the counts cannot cover every candidate run (no
    telemetry, or the window was reset part way): such a number must not qualify.
    """

    drafted: int | None
    accepted: int | None
    acceptance_rate: float | None
    basis: AcceptanceBasis
    complete: bool
    window: str
    source: str
    reason: str
    drafts: int | None = None
    accepted_per_position: tuple[int, ...] | None = None
    positions_reason: str = "the engine reports no per-position counts"

    def per_position_rates(self) -> tuple[float, ...] | None:
        """Share of draft rounds whose token at position 1, 2, ... was accepted (None: unknown)."""
        if not self.complete or self.accepted_per_position is None or not self.drafts:
            return None
        return tuple(count / self.drafts for count in self.accepted_per_position)

    def to_dict(self) -> dict[str, object]:
        return {
            "drafts": self.drafts,
            "accepted_per_position": None if self.accepted_per_position is None
            else list(self.accepted_per_position),
            "per_position_rates": None if (rates := self.per_position_rates()) is None else list(rates),
            "positions_reason": self.positions_reason,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "acceptance_rate": self.acceptance_rate,
            "basis": self.basis,
            "complete": self.complete,
            "window": self.window,
            "source": self.source,
            "reason": self.reason,
        }


def acceptance_from_telemetry(
    before: TelemetryLike | None, after: TelemetryLike
) -> AcceptanceMeasurement:
    """Acceptance over the candidate runs from telemetry read around them.

    With a ``before`` reading the counts are the difference (vLLM-style cumulative
    counters, or a since-last window that did not roll in between). Without one, the
    ``after`` reading's own window is taken as covering exactly the runs. A counter
    that went down means the window was reset in between: only the part after the
    reset is known, so the result is marked incomplete.
    """
    if not after.available or after.drafted is None or after.accepted is None:
        return AcceptanceMeasurement(
            None, None, None, "unavailable", False, after.window, after.source,
            "the engine exposes no drafted/accepted counters",
        )
    if before is None:
        return dataclasses.replace(
            _measurement(after.drafted, after.accepted, "window", True, after,
                         f"counts of the engine's own window {after.window!r}"),
            **_position_delta(None, after),
        )
    if not before.available or before.drafted is None or before.accepted is None:
        return AcceptanceMeasurement(
            None, None, None, "unavailable", False, after.window, after.source,
            "the reading before the candidate runs had no drafted/accepted counters",
        )
    drafted = after.drafted - before.drafted
    accepted = after.accepted - before.accepted
    if drafted < 0 or accepted < 0:
        return _measurement(
            after.drafted, after.accepted, "reset_during_window", False, after,
            "a counter went down between the readings (window reset): counts before the "
            f"reset are lost (drafted {before.drafted} -> {after.drafted}, "
            f"accepted {before.accepted} -> {after.accepted})",
        )
    return dataclasses.replace(
        _measurement(drafted, accepted, "delta", True, after,
                     f"difference of two readings of window {after.window!r}"),
        **_position_delta(before, after),
    )


def _position_delta(before: TelemetryLike | None, after: TelemetryLike) -> dict[str, Any]:
    """Per-position counts and draft rounds over the window (fields of AcceptanceMeasurement)."""
    if after.accepted_per_position is None or after.drafts is None:
        return {"positions_reason": f"{after.source} reports no per-position acceptance counts"}
    if before is None:
        return {"drafts": after.drafts, "accepted_per_position": after.accepted_per_position,
                "positions_reason": f"per-position counts of window {after.window!r}"}
    if before.accepted_per_position is None or before.drafts is None:
        return {"positions_reason": "the reading before the candidate runs had no per-position counts"}
    width = max(len(before.accepted_per_position), len(after.accepted_per_position))
    earlier = before.accepted_per_position + (0,) * (width - len(before.accepted_per_position))
    later = after.accepted_per_position + (0,) * (width - len(after.accepted_per_position))
    counts = tuple(b - a for a, b in zip(earlier, later, strict=True))
    drafts = after.drafts - before.drafts
    if drafts < 0 or any(count < 0 for count in counts):
        return {"positions_reason": "a per-position counter went down between the readings"}
    return {"drafts": drafts, "accepted_per_position": counts,
            "positions_reason": f"difference of two readings of window {after.window!r}"}


def _measurement(
    drafted: int,
    accepted: int,
    basis: AcceptanceBasis,
    complete: bool,
    after: TelemetryLike,
    reason: str,
) -> AcceptanceMeasurement:
    if accepted > drafted:
        raise ValueError(
            f"telemetry from {after.source!r}: accepted ({accepted}) exceeds drafted "
            f"({drafted}) over the candidate runs; the counters are inconsistent"
        )
    rate = acceptance_rate_of(drafted, accepted)
    if rate is None:
        reason = f"{reason}; nothing was drafted, so there is no acceptance rate"
    return AcceptanceMeasurement(
        drafted, accepted, rate, basis, complete and rate is not None, after.window,
        after.source, reason,
    )


def first_difference(baseline: Sequence[object], candidate: Sequence[object]) -> int | None:
    """Index of the first position where the sequences differ (a length difference counts)."""
    for index, (left, right) in enumerate(zip(baseline, candidate, strict=False)):
        if left != right:
            return index
    if len(baseline) != len(candidate):
        return min(len(baseline), len(candidate))
    return None


@dataclass(frozen=True)
class IdentityCheck:
    """Whether a candidate's greedy output equals the baseline's, and where it first differs.

    On a mismatch both full sequences are kept: the evidence must let a reader see the
    divergence, not just that one happened.
    """

    prompt_id: str
    round_index: int
    compared: Literal["token_ids", "text"]
    identical: bool
    first_difference: int | None
    baseline_length: int
    candidate_length: int
    baseline_sequence: tuple[int, ...] | str | None
    candidate_sequence: tuple[int, ...] | str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "prompt_id": self.prompt_id,
            "round_index": self.round_index,
            "compared": self.compared,
            "identical": self.identical,
            "first_difference": self.first_difference,
            "baseline_length": self.baseline_length,
            "candidate_length": self.candidate_length,
            "baseline_sequence": _sequence_to_json(self.baseline_sequence),
            "candidate_sequence": _sequence_to_json(self.candidate_sequence),
        }


def _sequence_to_json(sequence: tuple[int, ...] | str | None) -> list[int] | str | None:
    return list(sequence) if isinstance(sequence, tuple) else sequence


def identity_check(
    prompt_id: str, round_index: int, baseline: RequestSample, candidate: RequestSample
) -> IdentityCheck:
    """Compare token ids when both sides have them, else the text (positions in characters)."""
    base: tuple[int, ...] | str
    cand: tuple[int, ...] | str
    compared: Literal["token_ids", "text"]
    if baseline.token_ids is not None and candidate.token_ids is not None:
        base, cand, compared = baseline.token_ids, candidate.token_ids, "token_ids"
    else:
        base, cand, compared = baseline.text, candidate.text, "text"
    position = first_difference(base, cand)
    identical = position is None
    return IdentityCheck(
        prompt_id,
        round_index,
        compared,
        identical,
        position,
        len(base),
        len(cand),
        None if identical else base,
        None if identical else cand,
    )


def identity_report(pairs: Sequence[SamplePair]) -> IdentityReport:
    """One identity check per measured pair."""
    return IdentityReport(
        tuple(
            identity_check(
                pair.prompt_id, pair.round_index, pair.baseline.sample, pair.candidate.sample
            )
            for pair in pairs
        )
    )


@dataclass(frozen=True)
class IdentityReport:
    """All identity checks of a run; only mismatches are spelled out in the evidence."""

    checks: tuple[IdentityCheck, ...]

    @property
    def identical(self) -> bool:
        return all(check.identical for check in self.checks)

    @property
    def mismatches(self) -> tuple[IdentityCheck, ...]:
        return tuple(check for check in self.checks if not check.identical)

    def to_dict(self) -> dict[str, object]:
        return {
            "identical": self.identical,
            "checked": len(self.checks),
            "mismatched": len(self.mismatches),
            "mismatches": [check.to_dict() for check in self.mismatches],
        }
