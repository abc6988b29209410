"""Benchmarks and reliability trials of pytest-specgate, printed as one table.

Run ``python -m benchmarks`` (full) or ``python -m benchmarks --quick`` (CI: small
counts, proves each benchmark runs). Speeds are ratios of runs measured side by
side in one process tree (A B A B), never absolute times: these machines are noisy.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    """One line of the table: what was measured against which goal, and whether it was met."""

    benchmark: str
    measured: str
    goal: str
    met: bool
    detail: str = ""


def slowdown_row(benchmark: str, ratio: float, limit: float, detail: str) -> Row:
    """A row for a ratio that must stay at or under ``limit``; goal and verdict come from one number."""
    return Row(benchmark, f"{ratio:.3f}x", f"<= {limit:.2f}x", ratio <= limit, detail)


@dataclass(frozen=True)
class CycledTimes:
    """Wall times of several commands run in turn, A B A B (or A B C A B C)."""

    times: Mapping[str, tuple[float, ...]]

    def ratios(self, arm: str, baseline: str) -> tuple[float, ...]:
        """arm / baseline within each cycle: how much slower ``arm`` is than its neighbour."""
        return tuple(a / b for a, b in zip(self.times[arm], self.times[baseline], strict=True))

    def median_ratio(self, arm: str, baseline: str) -> float:
        return statistics.median(self.ratios(arm, baseline))

    def describe(self, arm: str, baseline: str) -> str:
        cycles = len(self.times[baseline])
        medians = ", ".join(f"{name} {statistics.median(times):.3f}s" for name, times in self.times.items())
        ratios = " ".join(f"{ratio:.3f}" for ratio in self.ratios(arm, baseline))
        return f"{cycles} cycles; medians: {medians}; {arm}/{baseline} per cycle: {ratios}"


def bytecode_cache() -> Path:
    return Path(tempfile.gettempdir()) / "specgate-bench-pycache"


def quiet_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for measured subprocesses: nothing from an enclosing pytest run
    (PYTEST_ADDOPTS, xdist worker ids) or a hypothesis profile, no colour.

    Bytecode is cached, as on any installed copy (pip compiles it), but outside the source
    tree: with ``PYTHONDONTWRITEBYTECODE`` every run would recompile the plugin from source
    and the benchmark would price the compiler, not the plugin.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "HYPOTHESIS_")) and name != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPYCACHEPREFIX"] = str(bytecode_cache())
    env["PY_COLORS"] = "0"
    env.update(extra or {})
    return env


def run_command(
    argv: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    ok_codes: tuple[int, ...] = (0,),
    timeout_s: float = 900.0,
) -> float:
    """Run ``argv`` to completion and return its wall time; an unexpected exit code raises."""
    started = time.perf_counter()
    completed = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else quiet_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode not in ok_codes:
        tail = "\n".join(completed.stdout.splitlines()[-15:])
        raise RuntimeError(
            f"benchmark command {' '.join(argv)} (in {cwd}) exited {completed.returncode}, "
            f"expected {ok_codes}:\n{tail}"
        )
    return elapsed


def alternate(arms: Mapping[str, Callable[[], float]], cycles: int) -> CycledTimes:
    """Each arm once per cycle, in order: drift of the machine hits every arm of a cycle alike."""
    times: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(cycles):
        for name, run_arm in arms.items():
            times[name].append(run_arm())
    return CycledTimes({name: tuple(values) for name, values in times.items()})


def pytest_argv(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *arguments]
