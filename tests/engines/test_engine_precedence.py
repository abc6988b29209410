"""Which backend runs: a marker that names one pins it, the command line chooses for the rest,
a conflict is a warning naming the test, and the evidence says which backend ran and why."""

from __future__ import annotations

import pytest

from pytest_specgate.contracts.engine_config import RunEngineOptions
from pytest_specgate.engines.config import engine_choice_from
from pytest_specgate.evidence import find_bundles, read_records

SPECS = """
import pytest

@pytest.mark.ac("FR-1")
@pytest.mark.engine("mock", alpha=0.5)
def test_pinned(engine, evidence):
    assert engine.backend == "mock"

@pytest.mark.ac("FR-2")
@pytest.mark.engine(alpha=0.5)
def test_unpinned(engine, evidence):
    assert engine.backend == "mock"
"""


@pytest.mark.parametrize(
    ("marker", "args", "run", "backend", "reason"),
    [
        ({}, (), RunEngineOptions(), "mock", "default: no marker or option names a backend; mock"),
        ({}, (), RunEngineOptions("vllm"), "vllm", "--specgate-engine=vllm"),
        ({}, (), RunEngineOptions(endpoint="http://127.0.0.1:9"), "endpoint",
         "--specgate-endpoint: implies the endpoint backend"),
        ({}, ("mlx",), RunEngineOptions(), "mlx", "marker: @pytest.mark.engine names mlx"),
        ({}, ("mlx",), RunEngineOptions("mlx"), "mlx", "marker: @pytest.mark.engine names mlx"),
        ({"backend": "mock"}, (), RunEngineOptions("vllm"), "mock",
         "marker: @pytest.mark.engine names mock, which wins over --specgate-engine=vllm"),
        ({"backend": "mock"}, (), RunEngineOptions(endpoint="http://127.0.0.1:9"), "mock",
         "marker: @pytest.mark.engine names mock, which wins over --specgate-endpoint"),
    ],
)
def test_one_rule_decides_the_backend_and_says_why(
    marker: dict[str, object], args: tuple[object, ...], run: RunEngineOptions, backend: str, reason: str
) -> None:
    choice = engine_choice_from(marker, run, args)
    assert (choice.config.backend, choice.reason()) == (backend, reason)
    assert (choice.conflict() is not None) == ("wins over" in reason)


def test_a_marker_that_keeps_a_test_off_the_asked_backend_is_a_warning_and_recorded(
    pytester: pytest.Pytester,
) -> None:
    pinned_both = SPECS.replace("@pytest.mark.engine(alpha=0.5)\n", '@pytest.mark.engine("mock")\n')
    pytester.makepyfile(test_specs=pinned_both)
    out = pytester.path / "out"
    result = pytester.runpytest("-p", "no:cacheprovider", "--specgate-engine=vllm",
                                f"--specgate-evidence={out}", "--specgate-allow-dirty")
    result.assert_outcomes(passed=2)
    assert str(result.stdout).count("PytestWarning: specgate:") == 2
    result.stdout.fnmatch_lines([
        "*PytestWarning: specgate: test_specs.py::test_pinned: @pytest.mark.engine names 'mock', so this "
        "test runs on mock, not on --specgate-engine=vllm (a marker that names a backend pins it; drop the "
        "backend from the marker to let the command line choose)",
    ])
    (bundle,) = find_bundles(out)
    (engine,) = read_records(bundle)["FR-1"].document["tests"][0]["engines"]
    assert engine["backend"] == "mock"
    assert engine["selected_by"] == (
        "marker: @pytest.mark.engine names mock, which wins over --specgate-engine=vllm")


def test_without_a_conflict_there_is_no_warning_and_the_record_names_the_option(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_specs=SPECS)
    out = pytester.path / "out"
    result = pytester.runpytest("-p", "no:cacheprovider", "--specgate-engine=mock",
                                f"--specgate-evidence={out}", "--specgate-allow-dirty")
    result.assert_outcomes(passed=2)
    (bundle,) = find_bundles(out)
    records = read_records(bundle)
    assert records["FR-1"].document["tests"][0]["engines"][0]["selected_by"] == (
        "marker: @pytest.mark.engine names mock")
    unpinned_engine = records["FR-2"].document["tests"][0]["engines"][0]
    assert unpinned_engine["selected_by"] == "--specgate-engine=mock"
