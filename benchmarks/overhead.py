"""Plugin overhead: 2,000 trivial tests with the plugin off (``-p no:specgate``) and on.

Half of the generated tests carry ``hardware`` and ``ac`` markers (a host profile
from the generated pyproject, matched by a host-facts file, so the verdict path
runs for every one of them and nothing is skipped). The plugin side also writes
an evidence bundle. Both sides register the markers in the ini file, so the
plain side pays no unknown-marker warnings the plugin side would not.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import REPO_ROOT, CycledTimes, Row, alternate, pytest_argv, run_command, slowdown_row

SUITE_TESTS = 2000
TESTS_PER_FILE = 100
AC_IDS = 10
HOST_FACTS = REPO_ROOT / "fixtures" / "hosts" / "linux-x86_64-24gb-nogpu.json"
GOAL_RATIO = 1.03
COMMON_OPTIONS = ("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")

PYPROJECT = """\
[tool.pytest.ini_options]
markers = [
    "hardware(profile=None, **clauses): host requirement (registered here so both sides match)",
    "ac(id, **fields): acceptance criterion (registered here so both sides match)",
]

[tool.specgate.hosts.bench-linux]
description = "any Linux host"
os = "linux"
"""


@dataclass(frozen=True)
class GeneratedSuite:
    """A throwaway project of trivial tests; ``root`` is its rootdir."""

    root: Path
    tests: int

    @property
    def evidence_root(self) -> Path:
        return self.root.parent / "evidence"

    def plain_argv(self, *extra: str) -> list[str]:
        return pytest_argv(*COMMON_OPTIONS, "-p", "no:specgate", *extra)

    def plugin_argv(self, *extra: str) -> list[str]:
        """``--opt=value`` form: pytest takes a separate absolute value for a path when it
        picks the rootdir, which would move the rootdir to this repository."""
        return pytest_argv(*COMMON_OPTIONS, f"--specgate-host-facts={HOST_FACTS}", *extra)


def _test_file(first: int, count: int) -> str:
    lines = ["import pytest", ""]
    for number in range(first, first + count):
        if number % 2:
            lines += [
                f'@pytest.mark.ac("AC-{number % AC_IDS + 1}", spec="SPEC-BENCH")',
                '@pytest.mark.hardware("bench-linux")',
            ]
        lines += [f"def test_trivial_{number}():", f"    assert {number} + 1 == {number + 1}", "", ""]
    return "\n".join(lines)


def generate_suite(parent: Path, tests: int = SUITE_TESTS) -> GeneratedSuite:
    root = parent / "suite"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    for first in range(0, tests, TESTS_PER_FILE):
        count = min(TESTS_PER_FILE, tests - first)
        (root / "tests" / f"test_generated_{first // TESTS_PER_FILE:03d}.py").write_text(
            _test_file(first, count)
        )
    return GeneratedSuite(root=root, tests=tests)


def _run_plain(suite: GeneratedSuite) -> float:
    return run_command(suite.plain_argv("tests"), suite.root)


def _run_plugin_without_evidence(suite: GeneratedSuite) -> float:
    return run_command(suite.plugin_argv("tests"), suite.root)


def _run_plugin(suite: GeneratedSuite) -> float:
    evidence = suite.evidence_root
    shutil.rmtree(evidence, ignore_errors=True)
    elapsed = run_command(suite.plugin_argv("tests", f"--specgate-evidence={evidence}"), suite.root)
    if not any(evidence.rglob("manifest.json")):
        raise RuntimeError(f"plugin overhead: the run wrote no evidence bundle under {evidence}")
    return elapsed


def measure_overhead(suite: GeneratedSuite, cycles: int, *, warm: bool = True) -> CycledTimes:
    """One warm-up run writes the rewritten test modules' bytecode every arm then reads;
    then the arms take turns.

    The middle arm (plugin on, no evidence) splits the overhead into the marker and
    verdict path and the evidence writer.
    """
    arms: dict[str, Callable[[], float]] = {
        "off": lambda: _run_plain(suite),
        "on-no-evidence": lambda: _run_plugin_without_evidence(suite),
        "on+evidence": lambda: _run_plugin(suite),
    }
    if warm:
        _run_plain(suite)
    return alternate(arms, cycles)


def suite_size(quick: bool) -> int:
    """Quick mode (CI) proves the benchmark runs; a twentieth of the suite is enough for that."""
    return SUITE_TESTS // 20 if quick else SUITE_TESTS


def run(quick: bool) -> Row:
    cycles = 1 if quick else 5
    with tempfile.TemporaryDirectory(prefix="specgate-bench-overhead-") as tmp:
        suite = generate_suite(Path(tmp), suite_size(quick))
        times = measure_overhead(suite, cycles, warm=not quick)
    ratio = times.median_ratio("on+evidence", "off")
    without_evidence = times.median_ratio("on-no-evidence", "off")
    return slowdown_row(
        f"plugin overhead ({suite.tests} tests, plugin + evidence / plugin off)",
        ratio,
        GOAL_RATIO,
        f"plugin without --specgate-evidence {without_evidence:.3f}x; "
        + times.describe("on+evidence", "off"),
    )
