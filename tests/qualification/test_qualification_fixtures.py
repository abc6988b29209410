"""The fixture glue: where sessions live, MEASURED prices across runs, booting from the engine marker.

The pytester conftest below holds the fixture code ``plugin.py`` is meant to
register, so these run before (and independently of) that wiring.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_specgate.qualification import (
    MEASURED,
    GateSpec,
    QualificationSession,
    qualification_directories,
    qualification_factory,
)

SPECS = """
import json

import pytest

from pytest_specgate.qualification import BudgetExceeded, FaultGates, GateSpec, fault_gate_specs

BOOTS = []


@pytest.mark.engine("mock", draft="specgate-mock-draft")
def test_qualifies(qualification, boot_engine, tmp_path):
    def boot():
        BOOTS.append("boot")
        return boot_engine()

    with qualification(fault_gate_specs(), boot=boot) as session:
        gates = FaultGates(session.booted)
        for spec in fault_gate_specs():
            session.run(spec.name, getattr(gates, spec.name))
        assert session.booted.telemetry().enabled
    receipt = json.loads((tmp_path / "qualification" / "session" / "receipt.json").read_text())
    assert receipt["verdict"] == "QUALIFIED"
    assert BOOTS == ["boot"]


@pytest.mark.engine("mock")
def test_over_budget_never_boots(qualification, boot_engine):
    def boot():
        BOOTS.append("over-budget boot")
        return boot_engine()

    with pytest.raises(BudgetExceeded, match="exceeds the hold limit"):
        with qualification([GateSpec("soak", 6000, kind="measure")], boot=boot):
            pass
    assert "over-budget boot" not in BOOTS
"""


def test_fixture_glue_runs_a_qualification_against_the_mock_in_a_pytest_run(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_glue=SPECS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2)


def test_without_evidence_sessions_live_under_tmp_path(tmp_path: Path) -> None:
    directory, previous = qualification_directories("tests/test_a.py::test_b", tmp_path, None, None)
    assert (directory, previous) == (tmp_path / "qualification", None)


def test_with_evidence_sessions_live_outside_the_bundle_and_price_from_the_previous_run(
    tmp_path: Path,
) -> None:
    evidence = tmp_path / "evidence"
    gates = [GateSpec("smoke", 5, kind="smoke")]
    for run_id in ("20261202T100000Z-aaaaaa", "20261202T110000Z-bbbbbb"):
        with qualification_factory(
            nodeid="acceptance/q.py::test_q", tmp_path=tmp_path, evidence_dir=evidence, run_id=run_id
        ) as factory:
            session: QualificationSession[None] = factory(gates)
            with session:
                session.run("smoke", lambda: {"ok": True})
    runs = sorted(p.name for p in (evidence / "qualification").glob("*/*"))
    assert runs == ["20261202T100000Z-aaaaaa", "20261202T110000Z-bbbbbb"]
    latest = next((evidence / "qualification").glob("*/20261202T110000Z-bbbbbb"))
    receipt = json.loads((latest / "session" / "receipt.json").read_text())
    assert receipt["budget"]["items"][0]["basis"] == MEASURED
    assert receipt["verdict"] == "QUALIFIED"


def test_a_tests_folder_is_its_short_name_and_a_hash_of_its_node_id(tmp_path: Path) -> None:
    nodeid = ("acceptance/qualification/test_qualification_gates.py::"
              "test_engine_changing_output_after_a_reset_is_not_qualified[mock-γ=4]")
    directory, _ = qualification_directories(nodeid, tmp_path, tmp_path / "out", "20261202T100000Z-aaaaaa")
    test_folder = directory.parent.name
    digest = hashlib.sha256(nodeid.encode()).hexdigest()[:8]
    assert test_folder == f"test_engine_changing_output_after_a_rese-{digest}"
    assert directory.parent.parent == tmp_path / "out" / "qualification"
    other, _ = qualification_directories(nodeid.replace("γ=4", "γ=5"), tmp_path, tmp_path / "out", "r")
    assert other.parent.name != test_folder and other.parent.name.startswith("test_engine_changing_")


def test_two_sessions_in_one_test_need_distinct_names(tmp_path: Path) -> None:
    with qualification_factory(nodeid="t", tmp_path=tmp_path) as factory:
        factory([GateSpec("a", 1)])
        with pytest.raises(ValueError, match="already exists in this test; pass name="):
            factory([GateSpec("a", 1)])
        assert factory([GateSpec("a", 1)], name="second").directory == tmp_path / "qualification" / "second"


def test_the_source_commit_is_recorded_when_a_rootdir_is_given(tmp_path: Path) -> None:
    repository = Path(__file__).resolve().parents[2]
    if not (repository / ".git").exists():
        pytest.skip(f"{repository} is not a git checkout")
    with qualification_factory(nodeid="t", tmp_path=tmp_path, rootdir=repository) as factory:
        commit = factory.source_commit
    assert commit is not None and len(commit) == 40
