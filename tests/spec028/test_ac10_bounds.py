"""AC-10's bounds: the AC's own, or a CI lane's in a diagnostic run only, recorded with their source."""

from __future__ import annotations

import sys

import pytest
from readme_run import REPO

sys.path.insert(0, str(REPO / "acceptance" / "spec028"))
import spec028_backends as backends

from pytest_specgate.contracts.errors import SpecgateInputError


def test_without_a_lane_setting_the_acs_own_bounds_apply() -> None:
    for diagnostic in (False, True):
        bounds = backends.ac10_bounds(None, diagnostic=diagnostic)
        assert (bounds.median_speedup, bounds.sustained_speedup) == (1.4, 1.2)
        assert bounds.source == "SPEC-028 AC-10"


def test_a_diagnostic_run_takes_the_lanes_bounds_and_says_so() -> None:
    bounds = backends.ac10_bounds("median=1.05, sustained=1.0", diagnostic=True)
    assert (bounds.median_speedup, bounds.sustained_speedup) == (1.05, 1.0)
    assert backends.LANE_BOUNDS_VARIABLE in bounds.source and "diagnostic" in bounds.source
    partial = backends.ac10_bounds("sustained=1.1", diagnostic=True)
    assert (partial.median_speedup, partial.sustained_speedup) == (1.4, 1.1)


def test_a_run_that_could_qualify_refuses_lowered_bounds() -> None:
    with pytest.raises(SpecgateInputError, match="only a --specgate-diagnostic run"):
        backends.ac10_bounds("median=1.0", diagnostic=False)


@pytest.mark.parametrize("setting", ["median=fast", "median=0", "median=-1", "mean=1.2", "median"])
def test_a_malformed_setting_names_what_was_expected(setting: str) -> None:
    with pytest.raises(SpecgateInputError, match="expected median=<x>,sustained=<x>"):
        backends.ac10_bounds(setting, diagnostic=True)
