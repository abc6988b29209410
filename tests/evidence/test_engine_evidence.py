"""Engines a spec used are recorded in its evidence, and the mock never qualifies."""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import ac_record


def test_engine_is_noted_and_mock_evidence_does_not_qualify(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_spec="""
        import pytest

        @pytest.mark.ac("FR-1", spec="SPEC-028", title="disabled mode")
        @pytest.mark.engine("mock", draft="specgate-mock-draft", num_draft_tokens=3)
        def test_uses_engines(engine, boot_engine, evidence):
            baseline = boot_engine(draft=None, num_draft_tokens=None)
            assert engine.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=4).text
            assert baseline.telemetry().enabled is False
    """
    )
    evidence_dir = pytester.path / "out"
    result = pytester.runpytest(f"--specgate-evidence={evidence_dir}", "--specgate-allow-dirty")
    result.assert_outcomes(passed=1)
    (bundle,) = [path.parent for path in evidence_dir.glob("*/manifest.json")]
    record = ac_record(bundle, "FR-1")
    engines = record["tests"][0]["engines"]
    assert [e["backend"] for e in engines] == ["mock", "mock"]
    assert "draft=specgate-mock-draft" in engines[0]["config"]
    assert engines[0]["versions"], "engine versions must be recorded"
    assert "draft=" not in engines[1]["config"], "the baseline's own configuration is recorded"
    assert record["outcome"] == "passed"
    assert record["qualifying"] is False
    assert any("ran on the built-in mock engine" in reason for reason in record["not_qualifying_reasons"])
    assert len(set(record["not_qualifying_reasons"])) == len(record["not_qualifying_reasons"]), "no repeats"
    markdown = next(evidence_dir.glob("*/evidence.md")).read_text()
    assert "only a real engine's evidence qualifies" in markdown


def test_specs_without_engines_can_qualify(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_spec="""
        import pytest

        @pytest.mark.ac("FR-2")
        def test_plain(evidence):
            evidence.measure("ratio", 1.5, at_least=1.4)
    """
    )
    evidence_dir = pytester.path / "out"
    pytester.runpytest(f"--specgate-evidence={evidence_dir}", "--specgate-allow-dirty")
    record = ac_record(next(Path(evidence_dir).glob("*/manifest.json")).parent, "FR-2")
    assert not any("mock engine" in reason for reason in record["not_qualifying_reasons"])


def test_a_duration_scale_makes_every_record_non_qualifying(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_spec="""
        import pytest

        @pytest.mark.ac("FR-3")
        def test_plain(evidence):
            evidence.measure("ratio", 1.5, at_least=1.4)
    """
    )
    evidence_dir = pytester.path / "out"
    pytester.runpytest(f"--specgate-evidence={evidence_dir}", "--specgate-duration-scale=0.5")
    record = ac_record(next(Path(evidence_dir).glob("*/manifest.json")).parent, "FR-3")
    assert record["qualifying"] is False
    reason = "--specgate-duration-scale 0.5 is not 1: durations were shortened"
    assert reason in record["not_qualifying_reasons"]
