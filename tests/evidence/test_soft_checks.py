"""Soft checks and the dropped-evidence warning, through the real plugin.

A missed threshold must not cut a test short (its later figures and notes belong in the
bundle), and evidence from a test without an ``ac`` marker must not vanish without a word.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import ac_record

from pytest_specgate.contracts.payload import (
    SPEC_PROPERTY,
    UnbundledEvidence,
    spec_payload,
    unbundled_evidence,
)
from pytest_specgate.evidence import find_bundles

SOFT_SPECS = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    evidence.measure("median_speedup", 1.1, "x", at_least=1.4)
    evidence.check(False, "greedy output differs from the baseline at token 3")
    evidence.measure("acceptance_rate", 0.2, at_least=0.3)
    evidence.measure("sustained_speedup", 1.3, "x", at_least=1.2)
    evidence.note("after_the_misses", "still recorded")

@pytest.mark.ac("AC-11")
def test_one_miss(evidence):
    evidence.measure("peak_rss_gb", 9.5, "GB", at_most=7.5)

@pytest.mark.ac("AC-12")
def test_passes(evidence):
    assert evidence.check(True, "never shown")
    evidence.measure("speedup", 1.5, "x", at_least=1.4)

@pytest.mark.ac("AC-13")
def test_miss_then_error(evidence):
    evidence.measure("speedup", 1.1, "x", at_least=1.4)
    assert 1 == 2, "the engine crashed"
"""


def _record(evidence_dir: Path, ac_id: str) -> dict[str, object]:
    (bundle,) = find_bundles(evidence_dir)
    loaded: dict[str, object] = ac_record(bundle.path, ac_id)
    return loaded


def test_missed_thresholds_fail_the_test_at_its_end_naming_the_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_soft=SOFT_SPECS)
    result = pytester.runpytest("--specgate-evidence=out", "--specgate-allow-dirty", "-rf")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "AC-10: test_soft.py::test_canary: measurement median_speedup = 1.1 x is below "
            "at_least=1.4 (and 2 more soft-check misses)",
            "AC-10: greedy output differs from the baseline at token 3",
            "AC-10: measurement acceptance_rate = 0.2 is below at_least=0.3",
        ]
    )
    result.stdout.fnmatch_lines(
        ["AC-11: test_soft.py::test_one_miss: measurement peak_rss_gb = 9.5 GB is above at_most=7.5"]
    )
    result.stdout.fnmatch_lines(["*AssertionError: the engine crashed*",
                                 "E * specgate soft checks missed before this error: measurement speedup "
                                 "= 1.1 x is below at_least=1.4"])
    record = _record(pytester.path / "out", "AC-10")
    rows = {row["name"]: row["passed"] for row in record["measurements"]}  # type: ignore[attr-defined]
    assert rows == {"median_speedup": False, "acceptance_rate": False, "sustained_speedup": True}
    (test,) = record["tests"]  # type: ignore[misc]
    assert test["notes"]["after_the_misses"] == "still recorded"
    assert test["outcome"] == "failed"
    assert record["outcome"] == "failed"


def test_a_miss_in_fixture_teardown_fails_the_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_teardown="""
        import pytest

        @pytest.fixture
        def measured_after(evidence):
            yield
            evidence.measure("leaked_processes", 2, at_most=0)

        @pytest.mark.ac("AC-1")
        def test_it(measured_after):
            pass
        """
    )
    result = pytester.runpytest("-rE")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_it*",
         "AC-1: test_teardown.py::test_it: measurement leaked_processes = 2 is above at_most=0"]
    )


DROPPED_SPECS = """
import pytest

def test_forgot_the_marker(evidence):
    evidence.measure("speedup", 1.5, "x", at_least=1.4)
    evidence.attach("server.log", "ready")
    evidence.note("model", "tiny")

def test_asks_for_evidence_but_records_nothing(evidence):
    pass

@pytest.mark.ac("AC-1")
def test_marked(evidence):
    evidence.measure("speedup", 1.5, "x", at_least=1.4)
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_evidence_without_an_ac_marker_is_named_in_the_summary(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_dropped=DROPPED_SPECS)
    result = pytester.runpytest_subprocess("--specgate-evidence=out", "--specgate-allow-dirty", *workers)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "specgate: 1 test(s) recorded evidence but have no @pytest.mark.ac, so no bundle holds it:",
            "  test_dropped.py::test_forgot_the_marker: measurements speedup; attachments server.log; "
            "notes model",
        ]
    )
    result.stdout.no_fnmatch_line("*test_asks_for_evidence_but_records_nothing:*")
    result.stdout.no_fnmatch_line("*test_marked:*")


def test_without_an_evidence_dir_nothing_is_announced(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_dropped=DROPPED_SPECS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("*no bundle holds it*")


class _Report:
    def __init__(self, payload: dict[str, object]) -> None:
        self.nodeid = str(payload["nodeid"])
        self.user_properties = [(SPEC_PROPERTY, payload)]


def test_plugin_recorded_engines_are_not_evidence_of_the_test() -> None:
    engine_only = spec_payload("t.py::test_engine", ac=None, verdict=None, decision=None,
                               engines=[{"backend": "mock"}])
    noted = spec_payload("t.py::test_noted", ac=None, verdict=None, decision=None,
                         recorded={"measurements": [], "attachments": [], "notes": {"plan": {"rounds": 3}},
                                   "engines": []},
                         engines=[{"backend": "mock"}])
    assert unbundled_evidence([_Report(engine_only), _Report(noted)]) == [
        UnbundledEvidence(nodeid="t.py::test_noted", measurements=(), attachments=(), notes=("plan",))
    ]
