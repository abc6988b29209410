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
of the measurement. What is left is per-token streaming and sleep overhead, which
moves every ratio toward 1 (raise ``--target-step-ms`` to shrink it).
"""

from __future__ import annotations

import argparse
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
    compare_to_expected,
    engine_arm,
    engine_telemetry,
    expectation,
    load_named_prompt_set,
    run_paired,
)

if TYPE_CHECKING:
    from benchmarks import Row


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
    )


def _format(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_cell(cell: Cell) -> None:
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
    parser.add_argument("--tolerance", type=float, default=0.01)
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
                    print_cell(cell)
                    cells.append(cell)
    return cells


def cells_off(cells: Sequence[Cell], tolerance: float) -> list[Cell]:
    return [
        cell
        for cell in cells
        if cell.pooled_over_measured is None or abs(cell.pooled_over_measured - 1.0) > tolerance
    ]


def run(quick: bool) -> Row:
    """The table row of ``python -m benchmarks``: the worst cell's pooled / expected.

    Full mode takes 8 of the 16 prompts so the whole table fits in its time budget;
    quick mode (CI) runs one small cell only to prove the benchmark works.
    """
    from benchmarks import Row

    overrides = (
        ["--alphas", "0.6", "--gammas", "4", "--prompts", "2", "--max-tokens", "32",
         "--target-step-ms", "5"]
        if quick
        else ["--prompts", "8"]
    )
    args = parse_args(overrides)
    cells = measure_all(args)
    ratios = [cell.pooled_over_measured for cell in cells]
    known = [ratio for ratio in ratios if ratio is not None]
    worst = max(known, key=lambda ratio: abs(ratio - 1.0)) if known else None
    return Row(
        benchmark=(
            f"measurement accuracy: pooled / analytic speedup, alpha {args.alphas} x gamma "
            f"{args.gammas}, c={args.cost_ratio}"
        ),
        measured="n/a" if worst is None else f"worst {worst:.3f}",
        goal=f"within ±{args.tolerance:.0%}",
        met=len(known) == len(cells) and not cells_off(cells, args.tolerance),
        detail="per cell: " + " ".join(_format(ratio, ".3f") for ratio in ratios),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cells = measure_all(args)
    off = cells_off(cells, args.tolerance)
    print(
        f"{len(cells) - len(off)}/{len(cells)} cells within ±{args.tolerance:.0%} "
        "(pooled speedup / expectation for the measured acceptance)"
    )
    return 1 if off and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
