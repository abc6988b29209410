"""Measurement accuracy: speedups measured on the mock engine versus the analytic expectation.

The mock drafts with a per-token agreement probability alpha and sleeps
``draft_step_ms`` per drafted token and ``target_step_ms`` per verification
(baseline: per token), which is exactly the cost model of Leviathan et al. 2023.

    python benchmarks/measurement_accuracy.py                # alpha 0.3/0.6/0.9 x gamma 2/4/8
    python benchmarks/measurement_accuracy.py --gammas 4     # the issue's gamma = 4 row only

One line per cell, two comparisons:

- ``median`` (the AC-10 statistic, median over prompts of per-prompt speedups)
  over ``expected(alpha)``, the value for the configured alpha. Off by the
  realized agreement of a finite run and by prompts weighing equally.
- ``pooled`` (all candidate tokens/s over all baseline tokens/s) over
  ``expected(acceptance)``, the value for the acceptance rate telemetry counted
  over the same requests. Like for like: any gap is overhead the measurement
  adds (HTTP, streaming, scheduling) or a bug in the runner or the statistics.
  The goal is within ``--tolerance`` (1%); ``--check`` makes a miss exit 1.

Both expectations are the finite-horizon ones for ``--max-tokens``-token answers
(the mock runs every answer to its budget here): the shortened last drafts of each
request (k = min(gamma, remaining - 1)) are part of the expectation, not an error
of the measurement. What that formula leaves out is the mock's own overhead: a fixed cost
per request (HTTP, tokenisation, the first event) and what a sleep and a round's Python cost
beyond the configured step, which move the ratio toward 1, most where the speedup is largest.

- ``model`` (pooled over the prediction of :mod:`pytest_specgate.measure.cost_model`, fitted
  from the cell's own streams) with its bootstrap interval over pairs, the goal: within
  ``--tolerance`` and an interval narrow enough to tell (half-width under the tolerance). The
  fitted step and draft cost are printed beside the configured ones, and so is the fixed cost
  per request the finite-horizon formula misses, as the factor it costs the speedup.

The machine's load average is printed per cell: the mock's timing is sleeps, and a loaded
host stretches them unevenly.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.backends import boot_function
from pytest_specgate.engines.mock.settings import DEFAULT_DRAFT, DEFAULT_TARGET
from pytest_specgate.measure import (
    ProgressReporter,
    Prompt,
    PromptRunner,
    SpeedupExplanation,
    compare_to_expected,
    engine_arm,
    engine_telemetry,
    expectation,
    explain_speedup,
    load_named_prompt_set,
    run_paired,
)

if TYPE_CHECKING:
    from benchmarks import Row

TOLERANCE = 0.01


@dataclass(frozen=True)
class Cell:
    alpha: float
    gamma: int
    acceptance_rate: float | None
    expected_configured: float
    expected_measured: float | None
    median: float
    ci_low: float | None
    ci_high: float | None
    pooled: float
    model: SpeedupExplanation | None
    load: tuple[float, float]
    """The one-minute load average when the cell started and when it ended."""

    @property
    def model_ratio(self) -> float | None:
        """Pooled speedup over the cost model's prediction."""
        return None if self.model is None else self.model.interval("measured_over_predicted").point

    @property
    def model_resolved(self) -> bool:
        """The interval of pooled / predicted is narrower than +-1% either side (tells 1% apart)."""
        if self.model is None:
            return False
        ratio = self.model.interval("measured_over_predicted")
        return (ratio.ci_low is not None and ratio.ci_high is not None
                and ratio.ci_high - ratio.ci_low < 2 * TOLERANCE)

    @property
    def median_over_configured(self) -> float:
        return self.median / self.expected_configured

    @property
    def pooled_over_measured(self) -> float | None:
        return None if self.expected_measured is None else self.pooled / self.expected_measured


def _mock_config(args: argparse.Namespace, alpha: float | None, gamma: int | None) -> EngineConfig:
    options = {
        "target_step_ms": args.target_step_ms,
        "draft_step_ms": args.target_step_ms * args.cost_ratio,
        "eos_one_in": 0,
        "isolation": args.isolation,
    }
    if alpha is not None:
        options["alpha"] = alpha
    return EngineConfig(
        backend="mock",
        target=DEFAULT_TARGET,
        draft=None if gamma is None else DEFAULT_DRAFT,
        num_draft_tokens=gamma,
        options=tuple(sorted(options.items())),
    )


def measure_cell(
    args: argparse.Namespace,
    baseline_arm: PromptRunner,
    prompts: Sequence[Prompt],
    alpha: float,
    gamma: int,
    workdir: Path,
) -> Cell:
    boot = boot_function("mock")
    load_before = os.getloadavg()[0]
    with boot(_mock_config(args, alpha, gamma), workdir) as candidate:
        progress = ProgressReporter(sys.stderr, label=f"alpha={alpha} gamma={gamma}")
        run = run_paired(
            baseline_arm,
            engine_arm(candidate, max_tokens=args.max_tokens),
            prompts,
            rounds=args.rounds,
            warmup=args.warmup,
            progress=progress,
            candidate_telemetry=engine_telemetry(candidate),
        )
    estimate = run.speedup()
    rate = None if run.acceptance is None else run.acceptance.acceptance_rate
    expected_measured = (
        None
        if rate is None
        else compare_to_expected(
            run.pooled_speedup, rate, gamma, args.cost_ratio, args.max_tokens
        ).expected.speedup
    )
    return Cell(
        alpha,
        gamma,
        rate,
        expectation(alpha, gamma, args.cost_ratio, args.max_tokens).speedup,
        expected_measured,
        estimate.median,
        estimate.ci_low,
        estimate.ci_high,
        run.pooled_speedup,
        None if rate is None else explain_speedup(run.pairs, gamma, rate, args.cost_ratio),
        (load_before, os.getloadavg()[0]),
    )


def _format(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_cell(cell: Cell, args: argparse.Namespace) -> None:
    print(
        f"alpha={cell.alpha:<4} gamma={cell.gamma:<2} "
        f"acceptance={_format(cell.acceptance_rate, '.3f')}  "
        f"median={cell.median:.3f} "
        f"[{_format(cell.ci_low, '.3f')}, {_format(cell.ci_high, '.3f')}] "
        f"/ expected(alpha)={cell.expected_configured:.3f} "
        f"= {cell.median_over_configured:.3f}  "
        f"pooled={cell.pooled:.3f} "
        f"/ expected(acceptance)={_format(cell.expected_measured, '.3f')} "
        f"= {_format(cell.pooled_over_measured, '.3f')}",
        flush=True,
    )
    if cell.model is None:
        print("    model: n/a (no acceptance rate)", flush=True)
        return
    costs, ratio = cell.model.costs, cell.model.interval("measured_over_predicted")
    fixed = cell.model.attribution.factors[2]
    print(
        f"    model: pooled / predicted {cell.model.attribution.predicted:.3f} = {ratio.point:.4f} "
        f"[{_format(ratio.ci_low, '.4f')}, {_format(ratio.ci_high, '.4f')}]; fitted step "
        f"{1000 * costs.target_step_s:.2f} ms (configured {args.target_step_ms:g}), draft "
        f"{costs.draft_cost:.4f} target-steps (configured {args.cost_ratio:g}), verify "
        f"{costs.verify_cost:.3f}x; fixed cost {1000 * costs.candidate_fixed_s:.1f} ms/request "
        f"(baseline {1000 * costs.baseline_fixed_s:.1f} ms), which the finite-horizon formula "
        f"misses: x{fixed:.4f}; load average {cell.load[0]:.1f} -> {cell.load[1]:.1f}",
        flush=True,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.3, 0.6, 0.9])
    parser.add_argument("--gammas", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--cost-ratio", type=float, default=0.1, help="c = draft / target step")
    parser.add_argument("--target-step-ms", type=float, default=20.0)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--prompts", type=int, default=16, help="first N prompts of the fixture")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--isolation", choices=["thread", "subprocess"], default="subprocess")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--check", action="store_true", help="exit 1 when a cell is off")
    return parser.parse_args(argv)


def measure_all(args: argparse.Namespace) -> list[Cell]:
    """Every (gamma, alpha) cell against one shared baseline engine, printed as it lands."""
    prompts = load_named_prompt_set("spec028-code-iso8601-v1").prompts[: args.prompts]
    print(
        f"mock engine: target step {args.target_step_ms} ms, c = {args.cost_ratio}, "
        f"max_tokens {args.max_tokens}, {len(prompts)} prompts x {args.rounds} rounds, "
        f"{args.isolation} isolation",
        flush=True,
    )
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory(prefix="specgate-accuracy-") as tmp:
        workdir = Path(tmp)
        boot = boot_function("mock")
        with boot(_mock_config(args, None, None), workdir) as baseline:
            baseline_arm = engine_arm(baseline, max_tokens=args.max_tokens)
            for gamma in args.gammas:
                for alpha in args.alphas:
                    cell = measure_cell(args, baseline_arm, prompts, alpha, gamma, workdir)
                    print_cell(cell, args)
                    cells.append(cell)
    return cells


def cells_off(cells: Sequence[Cell], tolerance: float) -> list[Cell]:
    """Cells whose pooled speedup is not shown within ``tolerance`` of the cost model's prediction."""
    return [
        cell
        for cell in cells
        if cell.model_ratio is None or abs(cell.model_ratio - 1.0) > tolerance or not cell.model_resolved
    ]


def run(quick: bool) -> Row:
    """The table row of ``python -m benchmarks``: the worst cell's pooled / model prediction.

    Full mode runs every prompt of the fixture once per cell (16 pairs: enough to resolve 1%);
    quick mode (CI) runs one small cell only to prove the benchmark works.
    """
    from benchmarks import Row

    overrides = (
        ["--alphas", "0.6", "--gammas", "4", "--prompts", "2", "--max-tokens", "32",
         "--target-step-ms", "5"]
        if quick
        else []
    )
    args = parse_args(overrides)
    cells = measure_all(args)
    ratios = [cell.model_ratio for cell in cells]
    known = [ratio for ratio in ratios if ratio is not None]
    worst = max(known, key=lambda ratio: abs(ratio - 1.0)) if known else None
    loads = [load for cell in cells for load in cell.load]
    return Row(
        benchmark=(
            f"measurement accuracy: pooled / cost-model speedup, alpha {args.alphas} x gamma "
            f"{args.gammas}, c={args.cost_ratio}, {args.prompts} prompts x {args.rounds} rounds a cell"
        ),
        measured="n/a" if worst is None else f"worst {worst:.4f}",
        goal=f"within ±{args.tolerance:.0%}, resolved",
        met=len(known) == len(cells) and not cells_off(cells, args.tolerance),
        detail=("per cell: " + " ".join(_format(ratio, ".4f") for ratio in ratios)
                + "; finite horizon alone: " + " ".join(_format(c.pooled_over_measured, ".3f") for c in cells)
                + f"; load average {min(loads):.1f} to {max(loads):.1f}"),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cells = measure_all(args)
    off = cells_off(cells, args.tolerance)
    print(
        f"{len(cells) - len(off)}/{len(cells)} cells within ±{args.tolerance:.0%} of the cost model's "
        "prediction with an interval that resolves it"
    )
    return 1 if off and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
