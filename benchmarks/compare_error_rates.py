"""``specgate compare`` on simulated runs: how often it cries wolf, and whether it finds a slowdown.

Each simulated run is AC-10's paired run without HTTP: ``--pairs`` pair speedups, log-normal
around a median of 1.6x with spread ``--sigma`` in log space (0.15: what the mlx pair on these
shared cores shows; 0.05: a quiet machine). Per cell, ``--runs`` pairs of runs (base, new) go
through the library's own ``measure.difference.relative_change`` and ``_compare.classify`` with
the bound ``at_least`` (higher is better):

- same distribution (true change 0): a "regression" is a false alarm. At a 95% interval it must
  happen at most alpha / 2 = 2.5% of the time, at any tolerance;
- a real 10% slowdown of the new run: how often it is called a regression (the power).

The old rule (the new figure outside the base run's own interval) is shown beside it: it ignores
the new run's noise and cries wolf on same-distribution runs.

    python benchmarks/compare_error_rates.py              # 1,000 pairs of runs per cell
    python -m benchmarks --only=compare
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks import Row
from pytest_specgate.contracts.samples import RecordedSamples
from pytest_specgate.evidence._compare import Change, Difference, classify
from pytest_specgate.measure.difference import relative_change
from pytest_specgate.measure.statistics import median_speedup

MEDIAN = 1.6
LEVEL = 0.95
RESAMPLES = 1000
OLD_RULE_RESAMPLES = 400


@dataclass(frozen=True)
class Cell:
    pairs: int
    sigma: float
    slowdown: float
    tolerance: float
    runs: int
    called: float
    old_rule_called: float

    def line(self) -> str:
        what = "false alarm" if self.slowdown == 0 else "found"
        return (f"pairs {self.pairs:3d} sigma {self.sigma:.2f} slowdown {self.slowdown:.0%} "
                f"tolerance {self.tolerance:.0%}: regression {what} {self.called:.1%} "
                f"(old rule {self.old_rule_called:.1%}) over {self.runs} pairs of runs")


def simulate(pairs: int, sigma: float, slowdown: float, tolerance: float, runs: int,
             seed: int = 7) -> Cell:
    import numpy as np

    rng = np.random.default_rng(seed)
    called = old_called = 0
    for run in range(runs):
        base = np.exp(rng.normal(np.log(MEDIAN), sigma, pairs))
        new = np.exp(rng.normal(np.log(MEDIAN * (1 - slowdown)), sigma, pairs))
        change = relative_change(RecordedSamples(tuple(base), "median", "pair speedup"),
                                 RecordedSamples(tuple(new), "median", "pair speedup"),
                                 confidence_level=LEVEL, resamples=RESAMPLES, seed=run)
        found = Difference(change.point, change.low, change.high, "samples")
        called += classify(found, "higher", tolerance) is Change.REGRESSION
        # The old rule: the new median below the base run's own interval, by more than the tolerance.
        estimate = median_speedup(list(base), confidence_level=LEVEL, n_resamples=OLD_RULE_RESAMPLES,
                                  seed=run, method="percentile")
        new_median = float(np.median(new))
        old_called += bool(estimate.ci_low is not None and new_median < estimate.ci_low
                           and new_median / estimate.median - 1 < -tolerance)
    return Cell(pairs, sigma, slowdown, tolerance, runs, called / runs, old_called / runs)


GRID = ((24, 0.05), (24, 0.15), (60, 0.15))
"""Pairs per run and log spread: a quiet machine, these shared cores, and a run four times as long."""


def cells(runs: int, grid: Sequence[tuple[int, float]] = GRID,
          tolerances: Sequence[float] = (0.0, 0.05)) -> list[Cell]:
    return [simulate(pairs, sigma, slowdown, tolerance, runs)
            for pairs, sigma in grid for tolerance in tolerances for slowdown in (0.0, 0.10)]


def row(found: Sequence[Cell]) -> Row:
    false_alarm = max(cell.called for cell in found if cell.slowdown == 0)
    power = max(cell.called for cell in found if cell.slowdown > 0)
    return Row("compare", f"false alarm <= {false_alarm:.1%}; 10% slowdown found up to {power:.0%}",
               f"false alarm <= {(1 - LEVEL) / 2:.1%}", false_alarm <= (1 - LEVEL) / 2,
               "; ".join(cell.line() for cell in found))


def run(quick: bool) -> Row:
    if quick:
        return row(cells(40, grid=((24, 0.05),), tolerances=(0.0,)))
    return row(cells(1000))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args(argv)
    found = cells(args.runs)
    for cell in found:
        print(cell.line())
    result = row(found)
    print(f"{result.measured} | goal {result.goal} | met {result.met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
