"""xdist scaling: the mocked acceptance suite at ``-n 0`` and ``-n 2``, time ratio.

The suite is whatever ``acceptance/`` holds when this runs, with the durations
shortened (``--specgate-duration-scale 0.02``) and in diagnostic mode, exactly as
the README's quick start runs it. Quick mode runs one pair over one small
directory only: it proves the suite runs under both, its ratio says little.
"""

from __future__ import annotations

from benchmarks import REPO_ROOT, Row, alternate, pytest_argv, run_command

GOAL_RATIO = 1.6
QUICK_PATHS = ("acceptance/smoke",)
SUITE_OPTIONS = (
    "--specgate-diagnostic",
    "--specgate-duration-scale",
    "0.02",
    "-q",
    "-p",
    "no:cacheprovider",
)


def _run(paths: tuple[str, ...], workers: int) -> float:
    return run_command(pytest_argv(*paths, *SUITE_OPTIONS, "-n", str(workers)), REPO_ROOT)


def run(quick: bool) -> Row:
    paths = QUICK_PATHS if quick else ("acceptance",)
    times = alternate(
        {"n0": lambda: _run(paths, 0), "n2": lambda: _run(paths, 2)}, 1 if quick else 3
    )
    speedup = times.median_ratio("n0", "n2")
    return Row(
        benchmark=f"xdist scaling: {' '.join(paths)}, time at -n 0 / time at -n 2",
        measured=f"{speedup:.2f}x",
        goal=f">= {GOAL_RATIO:.1f}x",
        met=speedup >= GOAL_RATIO,
        detail=times.describe("n0", "n2"),
    )
