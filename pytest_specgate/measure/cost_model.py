"""Explained speedups: a cost model fitted from a paired run's own timings.

The analytic expectation (:mod:`~pytest_specgate.measure.expected`) says what acceptance buys
on an ideal engine; a measured speedup on a real one is lower, and the figure alone does not say
whether the draft is slow, the target's verification pass is dear, or fixed per-request costs
(prefill, HTTP, tokenisation) dilute the gain. This module fits those costs from the same
requests the speedup was measured on and predicts the speedup from them:

- ``t``, the target's decode step: the median gap of the baseline's stream (each gap of a
  target-only stream is one step).
- ``m``, what one drafted token adds to a round, in target steps: the median gap between the
  candidate's rounds, each request's last two left out (they draft fewer), is a full round,
  ``t (1 + m gamma)``; gaps under half a step lie inside a round (a server that streams a
  verified draft token by token) and are left out.
- the per-request fixed cost of each arm: the mean over its requests of the time outside the
  streamed gaps (before the first token, after the last) less the first step or round (a mean,
  as prompts of different lengths prefill in different times).
- the split of ``m`` into the draft's step ``c`` and the verification's marginal ``s`` per
  verified token (``v(gamma + 1) = 1 + gamma s``): round timings cannot split them, since both
  grow with ``k``. The baseline's prefill can: a prompt token costs the target ``s`` steps in a
  batched pass, read as the least-squares slope of its time outside the gaps over its prompt
  length. Without prompt token counts the split is not identified and verification is taken as
  one step (the prediction does not depend on the split, only the attribution does).

Medians make the step costs *typical*: a stall or a neighbour's burst during decoding on a loaded
host stays out of them and shows where it belongs, in what the costs do not explain.

The prediction is the pooled speedup (all candidate tokens/s over all baseline tokens/s) those
costs give for the requests' answer lengths and the acceptance each request had: its rounds are
read off its stream (the first, then one per gap between rounds), its drafts are those of the
finite horizon (:func:`~pytest_specgate.measure.expected.finite_horizon`) with that many rounds.
So the prediction and the measurement are of the same requests, and a resample of prompts that
suit the draft better predicts a higher speedup, as it should.
The *attribution* walks from the analytic figure (the plan's prior ``c``, one-step verification,
no fixed cost) to the measured one, one factor at a time; what the typical costs do not explain
(load, variation, a model that does not fit) is the last factor. Intervals resample requests
(pairs) and refit; the fit and its resampling are plain Python (no numpy or scipy: a request's
acceptance is read off its rounds by bisection, :func:`_horizon_for_rounds`).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pytest_specgate.contracts.speedup_model import (
    BASELINE_FIXED_COST,
    CANDIDATE_FIXED_COST,
    DRAFT_COST,
    MEASURED_SPEEDUP,
    PREDICTED_SPEEDUP,
    VERIFY_COST,
    speedup_model_line,
)
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL, check_confidence_level
from pytest_specgate.measure.expected import FiniteHorizon, finite_horizon
from pytest_specgate.measure.samples import SamplePair, TimedSample

COST_MODEL_RESAMPLES = 999
COST_MODEL_SEED = 20261204
SPLIT_BY_PREFILL = "verification marginal from the baseline's prefill slope over prompt tokens"
SPLIT_ASSUMED = ("not identified (no prompt token counts with spread): verification taken as one "
                 "target step, the whole per-draft cost charged to the draft")
MIN_PROMPT_LENGTHS = 3
"""Distinct prompt lengths the prefill slope needs before it splits draft from verification."""
ROUND_GAP_FRACTION = 0.5
"""A candidate gap shorter than this many target steps lies inside a round (a server that streams
a verified draft token by token), not between rounds: every round costs at least one step."""
TAIL_ROUNDS = 2
"""The last rounds of a request draft fewer than gamma tokens (``min(gamma, remaining - 1)``), so
the full round's cost is read from each request's rounds before its last two (all of them only
where no request has more)."""


class CostModelError(ValueError):
    """The run's data cannot support the fit (no streamed gaps, nothing drafted after a first round)."""


@dataclass(frozen=True)
class CostParameters:
    """The fitted costs; ``draft_cost`` and ``verify_cost`` are in target steps."""

    gamma: int
    target_step_s: float
    per_draft_token: float
    prefill_slope: float | None
    draft_cost: float
    verify_cost: float
    baseline_fixed_s: float
    candidate_fixed_s: float
    split_basis: str

    def to_dict(self) -> dict[str, object]:
        return {
            "gamma": self.gamma,
            "target_step_ms": 1000 * self.target_step_s,
            "per_draft_token_target_steps": self.per_draft_token,
            "prefill_slope_target_steps_per_token": self.prefill_slope,
            "draft_cost_target_steps": self.draft_cost,
            "verify_cost_target_steps": self.verify_cost,
            "baseline_fixed_ms": 1000 * self.baseline_fixed_s,
            "candidate_fixed_ms": 1000 * self.candidate_fixed_s,
            "split_basis": self.split_basis,
        }


@dataclass(frozen=True)
class RequestTiming:
    """What the fit reads of one request: tokens, wall time, its streamed gaps, prompt length."""

    output_tokens: int
    wall_s: float
    gaps_s: tuple[float, ...]
    prompt_tokens: int | None

    @property
    def outside_gaps_s(self) -> float:
        """Time before the first streamed token and after the last: prefill, HTTP, the first step."""
        return self.wall_s - math.fsum(self.gaps_s)

    @classmethod
    def of(cls, timed: TimedSample) -> RequestTiming:
        sample = timed.sample
        return cls(sample.output_tokens, sample.wall_s, sample.itl_s, sample.prompt_tokens)


@dataclass(frozen=True)
class PairTiming:
    baseline: RequestTiming
    candidate: RequestTiming


def pair_timings(pairs: Sequence[SamplePair]) -> tuple[PairTiming, ...]:
    return tuple(PairTiming(RequestTiming.of(pair.baseline), RequestTiming.of(pair.candidate))
                 for pair in pairs)


@cache
def _horizon_for_rounds(gamma: int, tokens: int, rounds: int) -> FiniteHorizon:
    """The finite horizon whose expected rounds are ``rounds`` (alpha found by bisection; rounds
    outside what ``tokens`` allow are taken at the nearer end)."""
    low, high = 0.0, 1.0
    for _ in range(50):
        middle = (low + high) / 2
        if finite_horizon(middle, gamma, tokens).target_passes > rounds:
            low = middle
        else:
            high = middle
    return finite_horizon((low + high) / 2, gamma, tokens)


def stream_rounds(request: RequestTiming, target_step_s: float) -> int:
    """Rounds a candidate request took, read off its stream: the first, then one per gap between
    rounds (a server that streams a round token by token leaves gaps under half a step inside it)."""
    return 1 + sum(1 for gap in request.gaps_s if gap >= ROUND_GAP_FRACTION * target_step_s)


def candidate_horizon(costs: CostParameters, request: RequestTiming) -> FiniteHorizon:
    """The rounds and drafts of one candidate request: its streamed rounds, and the drafts the
    finite horizon with that many rounds expects (the stream does not say how many were drafted)."""
    rounds = stream_rounds(request, costs.target_step_s)
    return _horizon_for_rounds(costs.gamma, request.output_tokens, rounds)


def acceptance_from_streams(costs: CostParameters, timings: Sequence[PairTiming]) -> float:
    """Accepted / drafted as the candidate streams show it: each round emits its accepted drafts
    and one token of the target, so a request's accepted tokens are its tokens less its rounds."""
    requests = [pair.candidate for pair in timings if pair.candidate.output_tokens > 0]
    accepted = sum(max(0, r.output_tokens - stream_rounds(r, costs.target_step_s)) for r in requests)
    drafted = math.fsum(candidate_horizon(costs, r).drafted for r in requests)
    return accepted / drafted if drafted > 0 else 0.0


def _first_round_drafts(gamma: int, tokens: int) -> int:
    return max(0, min(gamma, tokens - 1))


def _least_squares_slope(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The slope of ys over xs and its standard error (infinite with two points: no residual)."""
    mean_x, mean_y = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    spread = math.fsum((x - mean_x) ** 2 for x in xs)
    slope = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    if len(xs) < 3:
        return slope, math.inf
    residual = math.fsum((y - mean_y - slope * (x - mean_x)) ** 2 for x, y in zip(xs, ys, strict=True))
    return slope, math.sqrt(residual / (len(xs) - 2) / spread)


SLOPE_STANDARD_ERRORS = 2.0
"""A prefill slope within this many standard errors of 0 is taken as 0: prompt lengths that do
not visibly change the time are no evidence that verifying more tokens costs more."""


def prefill_slope(requests: Sequence[RequestTiming], target_step_s: float) -> float | None:
    """Target steps one more prompt token costs, from the time outside the gaps (None: unknown)."""
    known = [(r.prompt_tokens, r.outside_gaps_s) for r in requests if r.prompt_tokens is not None]
    if len(known) < len(requests) or len({length for length, _ in known}) < MIN_PROMPT_LENGTHS:
        return None
    slope, error = _least_squares_slope([float(length) for length, _ in known], [time for _, time in known])
    return slope / target_step_s if slope > SLOPE_STANDARD_ERRORS * error else 0.0


def fit_costs(timings: Sequence[PairTiming], gamma: int) -> CostParameters:
    """The costs of ``timings`` (see the module docstring): step costs are medians, so a stall
    while decoding stays out of them and shows as what the model does not explain."""
    if not timings:
        raise CostModelError("cost model: no pairs to fit")
    baseline = [pair.baseline for pair in timings]
    candidate = [pair.candidate for pair in timings]
    baseline_gaps = [gap for request in baseline for gap in request.gaps_s]
    if not baseline_gaps or statistics.median(baseline_gaps) <= 0:
        raise CostModelError("cost model: the baseline streamed no gaps between tokens (answers of one "
                             "token, or not streamed), so its decode step cannot be measured")
    step = statistics.median(baseline_gaps)
    between_rounds = [[gap for gap in request.gaps_s if gap >= ROUND_GAP_FRACTION * step]
                      for request in candidate]
    round_gaps = ([gap for gaps in between_rounds for gap in gaps[:-TAIL_ROUNDS]]
                  or [gap for gaps in between_rounds for gap in gaps])
    if not round_gaps:
        raise CostModelError("cost model: the candidate streamed no gaps between rounds (answers of one "
                             "round, or not streamed), so the cost of a drafted token cannot be measured")
    per_draft = max(0.0, (statistics.median(round_gaps) / step - 1.0) / gamma)
    slope = prefill_slope(baseline, step)
    draft = per_draft if slope is None else max(0.0, per_draft - slope)
    verify = 1.0 + gamma * (per_draft - draft)
    baseline_fixed = statistics.fmean(r.outside_gaps_s - step for r in baseline)
    candidate_fixed = statistics.fmean(
        r.outside_gaps_s - step * (1 + per_draft * _first_round_drafts(gamma, r.output_tokens))
        for r in candidate)
    return CostParameters(gamma, step, per_draft, slope, draft, verify, baseline_fixed,
                          candidate_fixed, SPLIT_ASSUMED if slope is None else SPLIT_BY_PREFILL)


def predicted_speedup(costs: CostParameters, timings: Sequence[PairTiming], *,
                      draft_cost: float | None = None, verify_marginal: float | None = None,
                      fixed: bool = True) -> float:
    """Pooled speedup the costs predict for these requests' token counts and rounds.

    Each candidate request is taken with the rounds its stream shows and the drafts of the
    finite horizon with that many rounds (:func:`candidate_horizon`), so a prompt the draft suits
    is predicted as one and a resample of prompts carries its own acceptance.

    The keyword arguments replace one fitted part (for the attribution): ``draft_cost`` and
    ``verify_marginal`` (target steps per drafted token each), ``fixed=False`` drops both arms'
    fixed costs.
    """
    draft = costs.draft_cost if draft_cost is None else draft_cost
    marginal = (costs.per_draft_token - costs.draft_cost) if verify_marginal is None else verify_marginal
    baseline_tokens = sum(pair.baseline.output_tokens for pair in timings)
    candidate_tokens = sum(pair.candidate.output_tokens for pair in timings)
    baseline_time = math.fsum(costs.target_step_s * pair.baseline.output_tokens
                              + (costs.baseline_fixed_s if fixed else 0.0) for pair in timings)
    candidate_time = 0.0
    for pair in timings:
        tokens = pair.candidate.output_tokens
        if tokens > 0:
            horizon = candidate_horizon(costs, pair.candidate)
            candidate_time += costs.target_step_s * (horizon.target_passes
                                                     + (draft + marginal) * horizon.drafted)
        candidate_time += costs.candidate_fixed_s if fixed else 0.0
    if baseline_tokens == 0 or candidate_time <= 0 or baseline_time <= 0:
        raise CostModelError("cost model: the requests produced no tokens to predict a speedup for")
    return (candidate_tokens / candidate_time) / (baseline_tokens / baseline_time)


def measured_pooled_speedup(timings: Sequence[PairTiming]) -> float:
    baseline_tps = (sum(p.baseline.output_tokens for p in timings)
                    / math.fsum(p.baseline.wall_s for p in timings))
    candidate_tps = (sum(p.candidate.output_tokens for p in timings)
                     / math.fsum(p.candidate.wall_s for p in timings))
    return candidate_tps / baseline_tps


ATTRIBUTION_STEPS = ("draft cost", "verification cost", "fixed cost per request", "load and variation")


@dataclass(frozen=True)
class Attribution:
    """From the analytic speedup to the measured one, a factor per cause (their product is
    measured / analytic). Each factor swaps one fitted part into the prediction, in the order of
    :data:`ATTRIBUTION_STEPS`; the last is measured / predicted."""

    analytic: float
    after_draft: float
    after_verify: float
    predicted: float
    measured: float

    @property
    def factors(self) -> tuple[float, ...]:
        levels = (self.analytic, self.after_draft, self.after_verify, self.predicted, self.measured)
        return tuple(later / earlier for earlier, later in itertools.pairwise(levels))


def attribute(costs: CostParameters, timings: Sequence[PairTiming], prior_cost_ratio: float) -> Attribution:
    """The analytic figure (prior ``c``, one-step verification, no fixed cost) walked to measured."""
    return Attribution(
        analytic=predicted_speedup(costs, timings, draft_cost=prior_cost_ratio, verify_marginal=0.0,
                                   fixed=False),
        after_draft=predicted_speedup(costs, timings, verify_marginal=0.0, fixed=False),
        after_verify=predicted_speedup(costs, timings, fixed=False),
        predicted=predicted_speedup(costs, timings),
        measured=measured_pooled_speedup(timings),
    )


@dataclass(frozen=True)
class Interval:
    """One fitted or predicted figure with its bootstrap interval (an ``evidence.measure`` estimate)."""

    point: float
    ci_low: float | None
    ci_high: float | None
    confidence_level: float

    def to_dict(self) -> dict[str, object]:
        return {"point": self.point, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class SpeedupExplanation:
    """A paired run's fitted costs, predicted and measured pooled speedup, and the attribution,
    each figure with a bootstrap interval over pairs."""

    costs: CostParameters
    attribution: Attribution
    prior_cost_ratio: float
    acceptance_rate: float
    intervals: dict[str, Interval]
    confidence_level: float
    n_pairs: int
    n_resamples: int
    seed: int

    def interval(self, name: str) -> Interval:
        return self.intervals[name]

    def summary_line(self) -> str:
        """The block's line: :func:`speedup_model_line` of the fitted costs and both speedups."""
        return speedup_model_line(self.attribution.predicted, self.costs.draft_cost, self.costs.verify_cost,
                                  1000 * self.costs.candidate_fixed_s, 1000 * self.costs.baseline_fixed_s,
                                  self.attribution.measured)

    def recorded_figures(self) -> tuple[tuple[str, Interval, str | None], ...]:
        """(measurement name, figure, unit) for ``evidence.measure``: the names the AC block's
        speedup-model line is rendered from (``contracts.speedup_model``), then the step and
        each attribution factor."""
        units = {"x": ("analytic_speedup", "predicted_speedup", "measured_speedup", "verify_cost"),
                 "target-steps": ("draft_cost", "per_draft_token"),
                 "ms": ("candidate_fixed_ms", "baseline_fixed_ms", "target_step_ms")}
        unit_of = {figure: unit for unit, figures in units.items() for figure in figures}
        names = {"predicted_speedup": PREDICTED_SPEEDUP, "measured_speedup": MEASURED_SPEEDUP,
                 "draft_cost": DRAFT_COST, "verify_cost": VERIFY_COST,
                 "candidate_fixed_ms": CANDIDATE_FIXED_COST, "baseline_fixed_ms": BASELINE_FIXED_COST}
        return tuple((names.get(figure, "model_" + figure.replace(" ", "_").removesuffix("_ms")),
                      interval, unit_of.get(figure))
                     for figure, interval in self.intervals.items())

    def to_dict(self) -> dict[str, object]:
        return {
            "model": "Leviathan et al. 2023 finite horizon with fitted step, draft, verification "
                     "and fixed costs (pytest_specgate.measure.cost_model)",
            "summary": self.summary_line(),
            "parameters": self.costs.to_dict(),
            "prior_cost_ratio": self.prior_cost_ratio,
            "acceptance_rate": self.acceptance_rate,
            "speedup": {"analytic": self.attribution.analytic, "predicted": self.attribution.predicted,
                        "measured_pooled": self.attribution.measured,
                        "measured_over_predicted": self.attribution.measured / self.attribution.predicted},
            "attribution": [{"step": step, "factor": factor} for step, factor
                            in zip(ATTRIBUTION_STEPS, self.attribution.factors, strict=True)],
            "intervals": {name: interval.to_dict() for name, interval in self.intervals.items()},
            "confidence_level": self.confidence_level,
            "n_pairs": self.n_pairs,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "interval_method": "percentile bootstrap over pairs, costs refitted per resample",
        }


def _figures(costs: CostParameters, timings: Sequence[PairTiming],
             attribution: Attribution) -> dict[str, float]:
    factors = dict(zip(ATTRIBUTION_STEPS, attribution.factors, strict=True))
    return {
        "acceptance_rate_from_streams": acceptance_from_streams(costs, timings),
        "target_step_ms": 1000 * costs.target_step_s,
        "draft_cost": costs.draft_cost,
        "verify_cost": costs.verify_cost,
        "per_draft_token": costs.per_draft_token,
        "baseline_fixed_ms": 1000 * costs.baseline_fixed_s,
        "candidate_fixed_ms": 1000 * costs.candidate_fixed_s,
        "analytic_speedup": attribution.analytic,
        "predicted_speedup": attribution.predicted,
        "measured_speedup": attribution.measured,
        "measured_over_predicted": attribution.measured / attribution.predicted,
        **{f"factor {step}": factor for step, factor in factors.items()},
    }


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default rule)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def _bootstrap(timings: Sequence[PairTiming], figures_of: Callable[[Sequence[PairTiming]], dict[str, float]],
               n_resamples: int, seed: int, level: float) -> dict[str, tuple[float | None, float | None]]:
    rng = random.Random(seed)
    drawn: dict[str, list[float]] = {}
    n = len(timings)
    for _ in range(n_resamples):
        resample = [timings[rng.randrange(n)] for _ in range(n)]
        try:
            figures = figures_of(resample)
        except CostModelError:
            continue
        for name, value in figures.items():
            drawn.setdefault(name, []).append(value)
    tail = (1 - level) / 2
    bounds: dict[str, tuple[float | None, float | None]] = {}
    for name, values in drawn.items():
        finite = sorted(value for value in values if math.isfinite(value))
        bounds[name] = ((None, None) if n < 2 or len(finite) < 2
                        else (_percentile(finite, tail), _percentile(finite, 1 - tail)))
    return bounds


def explain_speedup(
    pairs: Sequence[SamplePair],
    gamma: int,
    acceptance_rate: float,
    prior_cost_ratio: float,
    *,
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
    n_resamples: int = COST_MODEL_RESAMPLES,
    seed: int = COST_MODEL_SEED,
) -> SpeedupExplanation:
    """Fit the costs of ``pairs``, predict their pooled speedup and attribute the gap, with intervals.

    The prediction takes each candidate request's rounds from its stream; ``acceptance_rate``
    (accepted / drafted over the candidate requests, from telemetry or an offline count) is
    recorded beside the rate the streams imply, a check that both saw the same drafting.
    Raises :class:`CostModelError` when the data cannot support the fit.
    """
    level = check_confidence_level(confidence_level, "cost model")
    timings = pair_timings(pairs)
    if not timings:
        raise CostModelError("cost model: no pairs to fit")

    def figures_of(sample: Sequence[PairTiming]) -> dict[str, float]:
        costs = fit_costs(sample, gamma)
        return _figures(costs, sample, attribute(costs, sample, prior_cost_ratio))

    costs = fit_costs(timings, gamma)
    attribution = attribute(costs, timings, prior_cost_ratio)
    bounds = _bootstrap(timings, figures_of, n_resamples, seed, level)
    intervals = {name: Interval(value, *bounds.get(name, (None, None)), level)
                 for name, value in _figures(costs, timings, attribution).items()}
    return SpeedupExplanation(costs, attribution, prior_cost_ratio, acceptance_rate, intervals, level,
                              len(timings), n_resamples, seed)


def write_attribution_plot(explanation: SpeedupExplanation, path: Path, *, title: str) -> Path:
    """A waterfall from the analytic to the measured speedup, a bar per factor with its interval
    (Agg canvas, no global backend; no software tag, so equal runs give equal bytes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    attribution = explanation.attribution
    levels = [attribution.analytic, attribution.after_draft, attribution.after_verify, attribution.predicted]
    figure = Figure(figsize=(8, 4.2), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    labels = ["analytic", *ATTRIBUTION_STEPS[:3], "predicted", ATTRIBUTION_STEPS[3], "measured"]
    axes.bar(0, attribution.analytic, color="tab:gray")
    for index, (earlier, later) in enumerate(itertools.pairwise(levels), start=1):
        axes.bar(index, later - earlier, bottom=earlier, color="tab:red" if later < earlier else "tab:green")
    axes.bar(4, attribution.predicted, color="tab:blue")
    axes.bar(5, attribution.measured - attribution.predicted, bottom=attribution.predicted,
             color="tab:red" if attribution.measured < attribution.predicted else "tab:green")
    measured = explanation.interval("measured_speedup")
    error = None
    if measured.ci_low is not None and measured.ci_high is not None:
        error = [[max(0.0, attribution.measured - measured.ci_low)],
                 [max(0.0, measured.ci_high - attribution.measured)]]
    axes.bar(6, attribution.measured, color="tab:purple", yerr=error, capsize=4)
    for index, factor in enumerate(attribution.factors[:3], start=1):
        axes.annotate(f"x{factor:.2f}", (index, max(levels[index - 1], levels[index])), ha="center",
                      va="bottom", fontsize=8)
    axes.annotate(f"x{attribution.factors[3]:.2f}", (5, max(attribution.predicted, attribution.measured)),
                  ha="center", va="bottom", fontsize=8)
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=20, fontsize=8)
    axes.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
    axes.set_ylabel("pooled speedup (x)")
    axes.set_ylim(0, 1.15 * max(*levels, attribution.measured, measured.ci_high or 0.0))
    axes.set_title(f"{title}\n{explanation.summary_line()}", fontsize=8)
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})
    return path
