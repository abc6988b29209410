"""The spec table: JUnit reports of the acceptance runs become one markdown row per spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.spec_table import Outcome, main, markdown_table, outcomes_from_junit

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="acceptance.spec028.test_fr1" name="test_same"/>
<testcase classname="acceptance.spec028.test_fr8" name="test_counts">
  <skipped type="pytest.skip" message="FR-8 telemetry cannot be checked on the mlx backend: no counters"/>
</testcase>
<testcase classname="acceptance.spec028.test_ac10" name="test_speedup">
  <failure message="AC-10: median_speedup 1.1x, expected &gt;= 1.4x&#10;second line">trace</failure>
</testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_keep_the_reason_and_the_failed_requirement(tmp_path: Path) -> None:
    report = tmp_path / "mlx.xml"
    report.write_text(REPORT)

    outcomes = outcomes_from_junit(report)

    assert outcomes == {
        "acceptance.spec028.test_fr1::test_same": Outcome("passed"),
        "acceptance.spec028.test_fr8::test_counts": Outcome(
            "skipped", "FR-8 telemetry cannot be checked on the mlx backend: no counters"),
        "acceptance.spec028.test_ac10::test_speedup": Outcome(
            "FAILED", "AC-10: median_speedup 1.1x, expected >= 1.4x"),
    }


def test_the_table_has_a_row_per_spec_a_column_per_backend_and_totals(tmp_path: Path) -> None:
    report = tmp_path / "mlx.xml"
    report.write_text(REPORT)

    table = markdown_table({"mlx": outcomes_from_junit(report), "vllm": "no --vllm-python given"})

    lines = table.splitlines()
    assert lines[0] == "| spec | mlx | vllm |"
    assert "| `spec028.test_ac10::test_speedup` | FAILED: AC-10: median_speedup 1.1x, expected >= 1.4x " \
           "| not run: no --vllm-python given |" in lines
    assert lines[-1] == "mlx: 1 passed, 1 failed, 1 skipped"


def test_rendering_earlier_reports_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mock.xml").write_text(REPORT)

    assert main(["--from-junit", f"--junit-dir={tmp_path}", "--backend=mock", "--backend=mlx"]) == 0

    printed = capsys.readouterr().out
    assert "| spec | mock | mlx |" in printed
    assert f"not run: no {tmp_path / 'mlx.xml'}" in printed
