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


RERUN = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="acceptance.spec028.test_ac10" name="test_speedup"/>
<testcase classname="acceptance.qualification.test_gates" name="test_pair_qualifies">
  <failure message="pytest_specgate.qualification._faults.RecoveryNotEvidenced: cancel_stream: no counters"/>
</testcase>
<testcase classname="acceptance.spec028.test_fr4" name="test_refuses">
  <failure message="Failed: DID NOT RAISE EngineStartupRefused"/>
</testcase>
<testcase classname="acceptance.spec028.test_fr5" name="test_gate">
  <failure message="Failed: FR-5: acceptance/spec028/test_fr5.py::test_gate[n]: drafted 4 tokens">x</failure>
</testcase>
</testsuite></testsuites>
"""


def test_a_failure_shows_its_requirement_and_miss_not_the_node_id_or_module_path(tmp_path: Path) -> None:
    report = tmp_path / "vllm.xml"
    report.write_text(RERUN)

    outcomes = outcomes_from_junit(report)

    assert outcomes["acceptance.spec028.test_fr5::test_gate"] == Outcome("FAILED", "FR-5: drafted 4 tokens")
    assert outcomes["acceptance.spec028.test_fr4::test_refuses"] == Outcome(
        "FAILED", "DID NOT RAISE EngineStartupRefused")
    assert outcomes["acceptance.qualification.test_gates::test_pair_qualifies"] == Outcome(
        "FAILED", "RecoveryNotEvidenced: cancel_stream: no counters")


def test_results_files_of_one_backend_merge_and_a_later_file_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "first.xml").write_text(REPORT)
    (tmp_path / "rerun.xml").write_text(RERUN)

    assert main([f"--results=vllm={tmp_path / 'first.xml'}", f"--results=vllm={tmp_path / 'rerun.xml'}",
                 "--backend=vllm"]) == 0

    printed = capsys.readouterr().out
    assert "| `spec028.test_ac10::test_speedup` | passed |" in printed
    assert "| `spec028.test_fr1::test_same` | passed |" in printed
    assert "| `spec028.test_fr5::test_gate` | FAILED: FR-5: drafted 4 tokens |" in printed
    assert "vllm: 2 passed, 3 failed, 1 skipped" in printed


@pytest.mark.parametrize(("value", "message"), [
    ("tgi={report}", "--results=tgi={report}: expected BACKEND=FILE with BACKEND one of "
                     "['mock', 'mlx', 'vllm']"),
    ("vllm={missing}", "--results=vllm={missing}: not a readable JUnit report"),
    ("vllm={html}", "--results=vllm={html}: not a JUnit report (root element <html>"),
])
def test_a_bad_results_value_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    paths = {"report": tmp_path / "mlx.xml", "missing": tmp_path / "absent.xml",
             "html": tmp_path / "page.xml"}
    paths["report"].write_text(REPORT)
    paths["html"].write_text("<html/>")

    with pytest.raises(SystemExit) as exited:
        main([f"--results={value.format(**paths)}", "--backend=vllm"])

    assert exited.value.code == 2
    assert message.format(**paths) in capsys.readouterr().err
