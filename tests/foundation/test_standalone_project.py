"""A project that only installs the package: the entry point loads the plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.selection.host_probe import probe_host

M4 = Path(__file__).resolve().parents[2] / "fixtures" / "hosts" / "m4-16gb.json"


@pytest.fixture
def throwaway(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml("""
        [project]
        name = "throwaway"
        version = "0"

        [tool.specgate.hosts.m4-16gb]
        apple = "M4"
        min_memory_gb = 16
    """)
    pytester.makepyfile(
        test_canary="""
        import pytest

        @pytest.mark.hardware("m4-16gb")
        def test_canary():
            pass
    """
    )
    return pytester


def test_profile_from_own_pyproject_skips_here_with_reason(throwaway: pytest.Pytester) -> None:
    here = probe_host()
    if here.apple_chip_family == "M4" and (here.memory_gb or 0) >= 16:
        pytest.skip(f"this host is an M4 with ≥16 GB ({here.summary()}): the spec would run")
    result = throwaway.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*plugins:*specgate*",
            "SKIPPED [[]1[]] test_canary.py:3: specgate: hardware mismatch: "
            "needs Apple M4, memory ≥ 16 GB [[]m4-16gb[]]; unmet: *host has *",
        ]
    )


def test_same_spec_runs_with_m4_host_facts(throwaway: pytest.Pytester) -> None:
    result = throwaway.runpytest_subprocess("-p", "no:cacheprovider", f"--specgate-host-facts={M4}")
    result.assert_outcomes(passed=1)
