"""Import and start-up cost: ``pytest --version --version`` and ``pytest --collect-only -q``,
plugin on vs off.

pytest 9 answers a lone ``--version`` before it loads any plugin, so that command
cannot cost the plugin anything; ``--version --version`` is the cheapest command
that loads every plugin (it lists them), which is the start-up cost to price.

The collect-only runs use the overhead benchmark's generated 2,000-test suite, so
marker parsing and hardware verdicts of 1,000 marked tests are part of the cost.
The detail column carries ``-X importtime`` of ``pytest_specgate.plugin`` with the
phase modules it registers, and their heaviest imports, which is where a start-up shortfall would come from.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import REPO_ROOT, Row, alternate, pytest_argv, quiet_environment, run_command, slowdown_row
from benchmarks.overhead import generate_suite, suite_size
from pytest_specgate.plugin import pytest_plugins

GOAL_VERSION_RATIO = 1.05
GOAL_COLLECT_RATIO = 1.03
_IMPORTTIME_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")
_IMPORT_PLUGIN = "".join(f"import {name}\n" for name in ("pytest", "pytest_specgate.plugin", *pytest_plugins))
"""Import statements, not ``importlib``: ``-X importtime`` times only those."""


@dataclass(frozen=True)
class ImportCost:
    module: str
    self_us: int
    cumulative_us: int
    top_level: bool


def plugin_import_costs() -> list[ImportCost]:
    """Every module imported by the plugin (its entry module and the modules it registers)
    after pytest itself is loaded."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _IMPORT_PLUGIN],
        cwd=REPO_ROOT,
        env=quiet_environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    costs: list[ImportCost] = []
    after_pytest = False
    for line in completed.stderr.splitlines():
        match = _IMPORTTIME_LINE.match(line)
        if match is None:
            continue
        self_us, cumulative_us, indent, module = match.groups()
        if after_pytest:
            costs.append(ImportCost(module, int(self_us), int(cumulative_us), len(indent) == 1))
        elif module == "pytest":
            after_pytest = True
    return costs


def describe_import_costs(costs: list[ImportCost]) -> str:
    plugin = [cost for cost in costs if cost.top_level and cost.module.startswith("pytest_specgate")]
    heaviest = sorted(costs, key=lambda cost: cost.self_us, reverse=True)[:4]
    listed = ", ".join(f"{cost.module} {cost.self_us / 1000:.1f}ms" for cost in heaviest)
    total = "n/a" if not plugin else f"{sum(cost.cumulative_us for cost in plugin) / 1000:.1f}ms"
    return f"import pytest_specgate.plugin and its modules {total} (heaviest self: {listed})"


def _version_arm(plugin: bool) -> float:
    disabled = () if plugin else ("-p", "no:specgate")
    return run_command(pytest_argv(*disabled, "--version", "--version"), REPO_ROOT)


def run_version(quick: bool) -> Row:
    arms: dict[str, Callable[[], float]] = {
        "off": lambda: _version_arm(False),
        "on": lambda: _version_arm(True),
    }
    for warm_up in arms.values():
        warm_up()
    times = alternate(arms, 1 if quick else 15)
    ratio = times.median_ratio("on", "off")
    return slowdown_row(
        "start-up: pytest --version --version, loads all plugins (plugin on / off)",
        ratio,
        GOAL_VERSION_RATIO,
        f"{times.describe('on', 'off')}; {describe_import_costs(plugin_import_costs())}",
    )


def run_collect(quick: bool) -> Row:
    with tempfile.TemporaryDirectory(prefix="specgate-bench-startup-") as tmp:
        suite = generate_suite(Path(tmp), suite_size(quick))
        arms: dict[str, Callable[[], float]] = {
            "off": lambda: run_command(suite.plain_argv("--collect-only", "tests"), suite.root),
            "on": lambda: run_command(suite.plugin_argv("--collect-only", "tests"), suite.root),
        }
        if not quick:
            arms["off"]()
        times = alternate(arms, 1 if quick else 5)
    ratio = times.median_ratio("on", "off")
    return slowdown_row(
        f"start-up: pytest --collect-only -q, {suite.tests} tests (plugin on / off)",
        ratio,
        GOAL_COLLECT_RATIO,
        times.describe("on", "off"),
    )
