"""The README's first command writes a bundle with a record for every SPEC-028 requirement."""

from __future__ import annotations

from readme_run import BundleRun

from pytest_specgate.evidence import load_bundle, read_records

SPEC028_REQUIREMENTS = ("FR-1", "FR-4.4", "FR-4.6", "FR-5", "FR-8", "FR-9.5", "AC-9a", "AC-10",
                        "AC-11")
HARDWARE_CANARIES = ("AC-10", "AC-11")


def _record(run: BundleRun, ac: str) -> dict[str, object]:
    records = read_records(load_bundle(run.bundle))
    assert ac in records, f"{ac}: no record in {run.bundle}: {sorted(records)}"
    return dict(records[ac].document)


def test_readme_command_passes_against_the_mock(readme_bundle: BundleRun) -> None:
    assert "--specgate-diagnostic" in readme_bundle.argv
    assert readme_bundle.returncode == 0, readme_bundle.output[-4000:]


def test_every_spec028_requirement_has_a_passed_record(readme_bundle: BundleRun) -> None:
    markdown = (readme_bundle.bundle / "evidence.md").read_text(encoding="utf-8")
    for ac in SPEC028_REQUIREMENTS:
        record = _record(readme_bundle, ac)
        assert record["ac"] == {"id": ac, "spec": "SPEC-028", "title": record["ac"]["title"]}  # type: ignore[index]
        assert record["outcome"] == "passed", f"{ac}: {record['outcome']}: {record['tests']}"
        assert f"## {ac} evidence" in markdown, f"{ac}: no block in evidence.md"
        assert record["measurements"], f"{ac}: the record carries no measured figure"


def test_hardware_canaries_are_diagnostic_and_say_why(readme_bundle: BundleRun) -> None:
    for ac in HARDWARE_CANARIES:
        record = _record(readme_bundle, ac)
        assert record["qualifying"] is False
        assert record["mode"] == "diagnostic"
        reasons = " | ".join(str(reason) for reason in record["not_qualifying_reasons"])  # type: ignore[attr-defined]
        assert "diagnostic run" in reasons, f"{ac}: {reasons}"
        assert "hardware requirement not met" in reasons, f"{ac}: {reasons}"
        assert "built-in mock engine" in reasons, f"{ac}: {reasons}"
        tests = record["tests"]
        assert isinstance(tests, list) and tests[0]["hardware"]["matched"] is False


def test_ac10_records_its_thresholds_and_prompt_digest(readme_bundle: BundleRun) -> None:
    record = _record(readme_bundle, "AC-10")
    figures = {row["name"]: row for row in record["measurements"]}  # type: ignore[attr-defined]
    assert figures["median_speedup"]["at_least"] == 1.4
    assert figures["acceptance_rate"]["at_least"] == 0.30
    assert figures["sustained_last_window_speedup"]["at_least"] == 1.2
    assert figures["greedy_outputs_differing_from_baseline"]["at_most"] == 0
    assert {"expected_speedup", "measured_over_expected_speedup"} <= set(figures)
    assert figures["median_speedup"]["decide"] == "interval"
    assert figures["median_speedup"]["ci_low"] <= figures["median_speedup"]["value"]
    notes = record["tests"][0]["notes"]  # type: ignore[index]
    assert len(notes["prompt_fixture"]["sha256"]) == 64
    assert notes["prompt_fixture"]["id"] == "spec028-code-iso8601-v1"
