"""Plugin overhead on 2,000 trivial tests, next to two anchors measured in the same cycles.

Half of the generated tests carry ``ac`` and ``hardware`` markers and record one
``evidence`` measurement; every marked test has its own AC, so the suite holds 1,000
distinct ACs (one record each in the bundle). The host profile comes from the
generated pyproject and is matched through a host-facts file, so the verdict path
runs for every marked test and nothing is skipped.

Arms, one run each per cycle (A B C D E, repeated), all with the same registered
markers and a stand-in ``evidence`` fixture where the plugin is off:

- ``off``: ``-p no:specgate``;
- ``junitxml``: off plus pytest's own ``--junitxml``, the anchor for writing a report;
- ``empty-plugin``: off plus a plugin that implements specgate's hooks with empty
  bodies, the anchor for what merely having those hooks costs;
- ``on``: the plugin without an evidence folder;
- ``on+junitxml``: the plugin loaded, writing pytest's ``--junitxml`` instead of evidence: the
  fair anchor for the evidence arm (both pay for the plugin's hooks and fixture alike);
- ``on+evidence``: the plugin writing a redacted, hashed bundle.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import REPO_ROOT, CycledTimes, Row, alternate, pytest_argv, run_command, slowdown_row

SUITE_TESTS = 2000
TESTS_PER_FILE = 100
HOST_FACTS = REPO_ROOT / "fixtures" / "hosts" / "linux-x86_64-24gb-nogpu.json"
GOAL_WITH_EVIDENCE = 1.08
GOAL_EVIDENCE_OVER_JUNITXML = 1.05
GOAL_WITHOUT_EVIDENCE = 1.03
COMMON_OPTIONS = ("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")

PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["."]
markers = [
    "hardware(profile=None, **clauses): host requirement (registered here so every arm matches)",
    "ac(id, **fields): acceptance criterion (registered here so every arm matches)",
]

[tool.specgate.hosts.bench-linux]
description = "any Linux host"
os = "linux"
"""

STAND_IN_EVIDENCE = '''\
"""The ``evidence`` fixture where specgate is off, so every arm runs the same test bodies."""

import pytest


class _Evidence:
    def measure(self, name, value, **bounds):
        return None


@pytest.fixture
def evidence():
    return _Evidence()
'''

EMPTY_PLUGIN = '''\
"""specgate's hook shapes with empty bodies: the cost of having the hooks at all."""

import pytest


def pytest_addoption(parser):
    return None


def pytest_configure(config):
    return None


def pytest_unconfigure(config):
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    return None


def pytest_collection_finish(session):
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    return None


def pytest_runtest_logstart(nodeid, location):
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    return (yield)


def pytest_runtest_logreport(report):
    return None


def pytest_sessionfinish(session, exitstatus):
    return None


def pytest_report_header(config):
    return None


def pytest_terminal_summary(terminalreporter, config):
    return None
'''


@dataclass(frozen=True)
class GeneratedSuite:
    """A throwaway project of trivial tests; ``root`` is its rootdir."""

    root: Path
    tests: int

    @property
    def ac_count(self) -> int:
        return self.tests // 2

    @property
    def evidence_root(self) -> Path:
        return self.root.parent / "evidence"

    @property
    def junit_path(self) -> Path:
        return self.root.parent / "junit.xml"

    def plain_argv(self, *extra: str) -> list[str]:
        return pytest_argv(*COMMON_OPTIONS, "-p", "no:specgate", "-p", "stand_in_evidence", *extra)

    def plugin_argv(self, *extra: str) -> list[str]:
        """``--opt=value`` form: pytest takes a separate absolute value for a path when it
        picks the rootdir, which would move the rootdir to this repository."""
        return pytest_argv(*COMMON_OPTIONS, f"--specgate-host-facts={HOST_FACTS}", *extra)


def _test_file(first: int, count: int) -> str:
    lines = ["import pytest", ""]
    for number in range(first, first + count):
        if number % 2:
            lines += [
                f'@pytest.mark.ac("AC-{number // 2 + 1}", spec="SPEC-BENCH")',
                '@pytest.mark.hardware("bench-linux")',
                f"def test_trivial_{number}(evidence):",
                f'    evidence.measure("value", {number}, at_least=0)',
                "",
                "",
            ]
        else:
            lines += [f"def test_trivial_{number}():", f"    assert {number} + 1 == {number + 1}", "", ""]
    return "\n".join(lines)


def generate_suite(parent: Path, tests: int = SUITE_TESTS) -> GeneratedSuite:
    root = parent / "suite"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "stand_in_evidence.py").write_text(STAND_IN_EVIDENCE)
    (root / "empty_plugin.py").write_text(EMPTY_PLUGIN)
    for first in range(0, tests, TESTS_PER_FILE):
        count = min(TESTS_PER_FILE, tests - first)
        (root / "tests" / f"test_generated_{first // TESTS_PER_FILE:03d}.py").write_text(
            _test_file(first, count)
        )
    return GeneratedSuite(root=root, tests=tests)


def _run_plugin_with_evidence(suite: GeneratedSuite) -> float:
    evidence = suite.evidence_root
    shutil.rmtree(evidence, ignore_errors=True)
    elapsed = run_command(suite.plugin_argv("tests", f"--specgate-evidence={evidence}"), suite.root)
    records = sum(len(path.read_bytes().splitlines()) for path in evidence.glob("*/records.jsonl"))
    if records != suite.ac_count:
        raise RuntimeError(
            f"plugin overhead: expected {suite.ac_count} AC records under {evidence}, found {records}"
        )
    return elapsed


def measure_overhead(suite: GeneratedSuite, cycles: int, *, warm: bool = True) -> CycledTimes:
    """One warm-up run writes the test modules' bytecode every arm then reads; then the
    arms take turns, so drift of the machine hits every arm of a cycle alike."""
    arms: dict[str, Callable[[], float]] = {
        "off": lambda: run_command(suite.plain_argv("tests"), suite.root),
        "junitxml": lambda: run_command(
            suite.plain_argv("tests", f"--junitxml={suite.junit_path}"), suite.root
        ),
        "empty-plugin": lambda: run_command(suite.plain_argv("-p", "empty_plugin", "tests"), suite.root),
        "on": lambda: run_command(suite.plugin_argv("tests"), suite.root),
        "on+junitxml": lambda: run_command(
            suite.plugin_argv("tests", f"--junitxml={suite.junit_path}"), suite.root
        ),
        "on+evidence": lambda: _run_plugin_with_evidence(suite),
    }
    if warm:
        arms["off"]()
    return alternate(arms, cycles)


def suite_size(quick: bool) -> int:
    """Quick mode (CI) proves the benchmark runs; a twentieth of the suite is enough for that."""
    return SUITE_TESTS // 20 if quick else SUITE_TESTS


@functools.cache
def _measured(quick: bool) -> tuple[int, int, CycledTimes]:
    """One measurement serves both rows, so their arms come from the same cycles."""
    with tempfile.TemporaryDirectory(prefix="specgate-bench-overhead-") as tmp:
        suite = generate_suite(Path(tmp), suite_size(quick))
        times = measure_overhead(suite, 1 if quick else 5, warm=not quick)
    return suite.tests, suite.ac_count, times


def run_with_evidence(quick: bool) -> Row:
    tests, acs, times = _measured(quick)
    anchor = times.median_ratio("junitxml", "off")
    return slowdown_row(
        f"plugin overhead: {tests} tests, {acs} with ac + hardware markers and one measurement, "
        f"{acs} distinct ACs; plugin + --specgate-evidence / -p no:specgate "
        f"(anchor: pytest --junitxml / off {anchor:.3f}x)",
        times.median_ratio("on+evidence", "off"),
        GOAL_WITH_EVIDENCE,
        times.describe("on+evidence", "off") + f"; junitxml/off {anchor:.3f}x",
    )


def run_without_evidence(quick: bool) -> Row:
    tests, _acs, times = _measured(quick)
    anchor = times.median_ratio("empty-plugin", "off")
    return slowdown_row(
        f"plugin overhead: same {tests} tests, plugin without evidence / off "
        f"(anchor: an empty plugin with the same hooks / off {anchor:.3f}x)",
        times.median_ratio("on", "off"),
        GOAL_WITHOUT_EVIDENCE,
        times.describe("on", "off") + f"; empty-plugin/off {anchor:.3f}x",
    )


def run_evidence_over_junitxml(quick: bool) -> Row:
    """The issue's comparison: both arms load the plugin, one writes evidence, one junitxml."""
    tests, acs, times = _measured(quick)
    return slowdown_row(
        f"evidence against junitxml: {tests} tests, {acs} distinct ACs; plugin + --specgate-evidence / "
        "plugin + --junitxml",
        times.median_ratio("on+evidence", "on+junitxml"),
        GOAL_EVIDENCE_OVER_JUNITXML,
        times.describe("on+evidence", "on+junitxml"),
    )
