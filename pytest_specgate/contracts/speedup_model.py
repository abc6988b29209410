"""The speedup model's figures as a test records them, and the one line an AC block shows.

A spec records the fitted costs and both speedups as measurements under these names
(``measure.cost_model`` fits them); the evidence renderer finds them in the record and writes
one line, ``predicted 1.71x (draft 0.21 target-steps, verify 2.3x, fixed 180 ms/request,
baseline 150 ms), measured 1.62x``. The line is built only from recorded figures, so the gate,
re-rendering a block from its record, shows the same line the writer did.
"""

from __future__ import annotations

from collections.abc import Mapping

PREDICTED_SPEEDUP = "model_predicted_speedup"
MEASURED_SPEEDUP = "model_measured_speedup"
DRAFT_COST = "model_draft_cost"
VERIFY_COST = "model_verify_cost"
CANDIDATE_FIXED_COST = "model_candidate_fixed_cost"
BASELINE_FIXED_COST = "model_baseline_fixed_cost"
LINE_FIGURES = (PREDICTED_SPEEDUP, DRAFT_COST, VERIFY_COST, CANDIDATE_FIXED_COST, BASELINE_FIXED_COST,
                MEASURED_SPEEDUP)
"""What the line needs, in its order; fixed costs in ms, the draft in target steps."""


def speedup_model_line(predicted: float, draft_cost: float, verify_cost: float, candidate_fixed_ms: float,
                       baseline_fixed_ms: float, measured: float) -> str:
    """``predicted 1.71x (draft 0.21 target-steps, verify 2.3x, fixed 180 ms/request, baseline 150 ms),
    measured 1.62x``: the candidate's fixed cost per request, then the baseline's."""
    return (f"predicted {predicted:.2f}x (draft {draft_cost:.2f} target-steps, verify {verify_cost:.1f}x, "
            f"fixed {candidate_fixed_ms:.0f} ms/request, baseline {baseline_fixed_ms:.0f} ms), "
            f"measured {measured:.2f}x")


def line_from_figures(figures: Mapping[str, float | str]) -> str | None:
    """The line from one test's recorded figures by name; None unless every one is a number."""
    values = [figures.get(name) for name in LINE_FIGURES]
    numbers = [float(value) for value in values if isinstance(value, int | float)]
    return speedup_model_line(*numbers) if len(numbers) == len(LINE_FIGURES) else None
