"""``at_least`` and ``at_most`` at their boundaries: a value exactly at the threshold meets it.

The README says ``at_least=1.4`` is "at least 1.4" (>=) and ``at_most`` "at most" (<=);
one step past either bound misses. The collector and the gate both judge through
``threshold_verdict``, so the pure function is checked to the last float, and the
plugin end to end with the figures a user reads.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from evidence_testkit import ac_record

from pytest_specgate.contracts.thresholds import threshold_verdict
from pytest_specgate.evidence import find_bundles


@pytest.mark.parametrize(
    ("value", "at_least", "at_most", "verdict"),
    [
        (1.4, 1.4, None, None),
        (math.nextafter(1.4, 0.0), 1.4, None, "is below at_least=1.4"),
        (7.5, None, 7.5, None),
        (math.nextafter(7.5, math.inf), None, 7.5, "is above at_most=7.5"),
        (0.0, 0.0, 0.0, None),
        (math.nextafter(0.0, -1.0), 0.0, 0.0, "is below at_least=0"),
        (math.nextafter(0.0, 1.0), 0.0, 0.0, "is above at_most=0"),
    ],
)
def test_a_value_at_a_bound_meets_it_and_one_step_beyond_misses(
    value: float, at_least: float | None, at_most: float | None, verdict: str | None
) -> None:
    assert threshold_verdict(value, at_least, at_most) == verdict


BOUNDARY_SPECS = """
import pytest

@pytest.mark.ac("AC-1")
def test_exactly_at_least(evidence):
    evidence.measure("median_speedup", 1.4, "x", at_least=1.4)

@pytest.mark.ac("AC-2")
def test_just_below_at_least(evidence):
    evidence.measure("median_speedup", 1.399, "x", at_least=1.4)

@pytest.mark.ac("AC-3")
def test_exactly_at_most(evidence):
    evidence.measure("peak_rss_gb", 7.5, "GB", at_most=7.5)

@pytest.mark.ac("AC-4")
def test_just_above_at_most(evidence):
    evidence.measure("peak_rss_gb", 7.501, "GB", at_most=7.5)
"""


def test_the_plugin_passes_a_figure_at_its_bound_and_fails_one_beyond(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bounds=BOUNDARY_SPECS)

    result = pytester.runpytest("--specgate-evidence=out", "--specgate-allow-dirty", "-rf")

    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "FAILED test_bounds.py::test_just_below_at_least*",
        "FAILED test_bounds.py::test_just_above_at_most*",
    ])
    result.stdout.fnmatch_lines(
        ["AC-2: test_bounds.py::test_just_below_at_least: measurement median_speedup = 1.399 x is below "
         "at_least=1.4"])
    result.stdout.fnmatch_lines(
        ["AC-4: test_bounds.py::test_just_above_at_most: measurement peak_rss_gb = 7.501 GB is above "
         "at_most=7.5"])
    (bundle,) = find_bundles(pytester.path / "out")
    passed = {
        ac: ac_record(bundle.path, ac)["measurements"][0]["passed"]
        for ac in ("AC-1", "AC-2", "AC-3", "AC-4")
    }
    assert passed == {"AC-1": True, "AC-2": False, "AC-3": True, "AC-4": False}


def test_a_measurement_judges_its_figure_once_and_a_changed_figure_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recorder's soft check, the record's row, ``passed`` and the judge all read one verdict."""
    from pytest_specgate.evidence import _acrecord

    real = _acrecord.three_way_verdict
    calls: list[object] = []

    def counted(*args: object) -> object:
        calls.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_acrecord, "three_way_verdict", counted)
    measurement = _acrecord.Measurement("t.py::t", "speedup", 1.5, "x", 1.4, None)
    read = (measurement.verdict, measurement.passed, measurement.miss(), measurement.to_dict()["passed"])
    assert read == (real(1.5, 1.4, None, None, None, "point"), True, None, True)
    assert len(calls) == 1
    below = dataclasses.replace(measurement, value=math.nextafter(1.4, 0.0))
    assert (below.passed, below.miss(), len(calls)) == (False, "is below at_least=1.4", 2)
