"""``specgate compare BASE NEW``: a change counts outside the recorded interval (else beyond the
tolerance), its direction comes from the bound, and a regression beyond the tolerance exits 1.

The last test is the issue's must-show: the worked canary run twice on the mock, the second
time with a draft step as slow as a target step, is reported as a regression (exit 1).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import ac_record, cli, reseal_bundle

from pytest_specgate.cli import main
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._compare import (
    Change,
    bundle_side,
    compare_records,
    comparison_json,
    tolerance_from_text,
)
from pytest_specgate.evidence.cli_commands import configure_compare_parser, run_compare

REPO = Path(__file__).resolve().parents[2]
LEGACY = Path(__file__).parent / "legacy_bundles" / "evidence-v2"
NODE = "acceptance/test_ac10.py::test_speedup"


def _record(value: float, *, at_least: float | None = 1.4, at_most: float | None = None,
            interval: tuple[float, float] | None = None, note: bool = False) -> AcRecord:
    document: dict[str, Any] = ac_record(LEGACY, "AC-10")
    row = {"at_least": at_least, "at_most": at_most, "name": "median_speedup", "nodeid": NODE,
           "passed": True, "unit": "x", "value": value}
    document["measurements"] = [row]
    if interval is not None and note:
        document["tests"][0]["notes"] = {"median_speedup_estimate": {"ci_low": interval[0],
                                                                      "ci_high": interval[1]}}
    elif interval is not None:
        document["measurements"] += [
            {**copy.deepcopy(row), "name": f"median_speedup_ci95_{end}", "value": value, "at_least": None}
            for end, value in zip(("low", "high"), interval, strict=True)
        ]
    return AcRecord.built(document)


def _change(base: AcRecord, new: AcRecord, tolerance: float = 0.05) -> Any:
    side = bundle_side("run", "0" * 64, {"AC-10": base})
    comparison = compare_records({"AC-10": base}, {"AC-10": new}, side, side, tolerance)
    (change,) = comparison.changes
    return change


def test_a_drop_outside_the_base_interval_is_a_regression_and_fails() -> None:
    change = _change(_record(1.9, interval=(1.8, 2.0)), _record(1.5))
    assert (change.change, change.fails, round(change.ratio, 3)) == (Change.REGRESSION, True, 0.789)
    assert (change.interval.low, change.interval.high, change.interval.of) == (1.8, 2.0, "base")


def test_a_change_inside_the_interval_is_no_change_even_beyond_the_tolerance() -> None:
    change = _change(_record(1.9, interval=(1.6, 2.2)), _record(1.7))
    assert (change.change, change.fails) == (Change.NO_CHANGE, False)


def test_the_interval_can_come_from_a_note_and_from_the_new_run() -> None:
    from_note = _change(_record(1.9, interval=(1.8, 2.0), note=True), _record(1.5))
    assert from_note.change is Change.REGRESSION
    assert from_note.interval.source == "note median_speedup_estimate"
    from_new = _change(_record(1.9), _record(1.5, interval=(1.4, 1.6)))
    assert from_new.change is Change.REGRESSION and from_new.interval.of == "new"


def test_without_an_interval_the_tolerance_decides() -> None:
    assert _change(_record(2.0), _record(1.95)).change is Change.NO_CHANGE
    assert _change(_record(2.0), _record(1.8)).change is Change.REGRESSION
    assert _change(_record(2.0), _record(2.2)).change is Change.IMPROVEMENT


def test_a_regression_within_the_tolerance_is_reported_but_does_not_fail() -> None:
    change = _change(_record(2.0, interval=(1.99, 2.01)), _record(1.95))
    assert (change.change, change.fails) == (Change.REGRESSION, False)


def test_the_bound_gives_the_direction_and_a_figure_without_one_only_changes() -> None:
    lower_is_better = _change(_record(10, at_least=None, at_most=20), _record(15, at_least=None, at_most=20))
    assert lower_is_better.change is Change.REGRESSION
    unbounded = _change(_record(10, at_least=None), _record(15, at_least=None))
    assert (unbounded.change, unbounded.fails) == (Change.CHANGED, False)


def test_json_has_a_versioned_shape() -> None:
    base, new = _record(1.9, interval=(1.8, 2.0)), _record(1.5)
    side = bundle_side("run", "0" * 64, {"AC-10": base})
    document = comparison_json(compare_records({"AC-10": base}, {"AC-10": new}, side, side))
    assert document["schema"] == "specgate.compare/1" and document["regressions_beyond_tolerance"] == 1
    assert document["measurements"][0] == {  # type: ignore[index]
        "ac": "AC-10", "test": NODE, "measurement": "median_speedup", "unit": "x", "base": 1.9, "new": 1.5,
        "ratio": 1.5 / 1.9, "better": "higher",
        "interval": {"low": 1.8, "high": 2.0, "of": "base",
                     "source": "measurements median_speedup_ci95_low/ci95_high"},
        "change": "regression", "beyond_tolerance": True,
    }


@pytest.mark.parametrize(
    ("text", "expected"), [("0.05", 0.05), ("5%", 0.05), ("0", 0.0)]
)
def test_tolerance_reads_a_fraction_or_a_percentage(text: str, expected: float) -> None:
    assert tolerance_from_text(text) == pytest.approx(expected)


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(LEGACY), str(LEGACY),
                         "--tolerance=lots")
    assert (code, out) == (2, "") and err == (
        "specgate compare: error: --tolerance 'lots': expected a fraction such as 0.05 or a percentage "
        "such as 5%\n"
    )
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(LEGACY), str(tmp_path))
    assert (code, out) == (2, "") and err.count("\n") == 1 and err.startswith("specgate compare: error: ")


def _canary_bundle(evidence: Path, *options: str) -> Path:
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "acceptance/examples/test_speedup_canary.py", "-p",
         "no:cacheprovider", "-n", "0", "--specgate-diagnostic", "--specgate-duration-scale=0.01",
         f"--specgate-evidence={evidence}", *options],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    bundles = [path for path in evidence.iterdir() if (path / "manifest.json").is_file()]
    assert len(bundles) == 1, completed.stdout[-3000:] + completed.stderr[-3000:]
    return bundles[0]


def test_the_canary_with_a_slower_candidate_is_a_regression_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _canary_bundle(tmp_path / "base")
    # A draft step as slow as a target step: speculation costs more than it saves.
    new = _canary_bundle(tmp_path / "new", "--specgate-engine-option=draft_step_ms=3.0")
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(base), str(new))
    assert (code, err) == (1, ""), out
    row = next(line for line in out.splitlines() if "| median_speedup |" in line)
    assert row.startswith("| AC-100 | `test_speedup_canary` | median_speedup | ")
    assert row.endswith("| **REGRESSION** (beyond 5%) |") and "| base " in row
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(base), str(new), "--json")
    document = json.loads(out)
    speedup = next(m for m in document["measurements"] if m["measurement"] == "median_speedup")
    assert code == 1 and speedup["change"] == "regression" and speedup["ratio"] < 0.8
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(base), str(base))
    assert code == 0 and "no regression beyond 5%" in out


def _compare_step(base: Path, new: Path, summary: Path, fails: str) -> subprocess.CompletedProcess[str]:
    """The composite action's optional compare step, as GitHub would run it."""
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((REPO / ".github" / "actions" / "specgate-gate" / "action.yml").read_text())
    steps = action["runs"]["steps"]
    (step,) = [step for step in steps if step["name"] == "specgate compare with the base branch"]
    assert step["if"] == "inputs.compare-base != ''"
    return subprocess.run(
        ["bash", "-c", step["run"]], capture_output=True, text=True, check=False,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
             "GITHUB_STEP_SUMMARY": str(summary), "SPECGATE_EVIDENCE": f"{new} {base}",
             "SPECGATE_COMPARE_BASE": str(base), "SPECGATE_COMPARE_TOLERANCE": "0.05",
             "SPECGATE_COMPARE_FAILS": fails},
    )


def test_the_action_puts_the_comparison_with_the_base_bundle_in_the_step_summary(tmp_path: Path) -> None:
    base, new = tmp_path / "base", tmp_path / "new"
    shutil.copytree(LEGACY, base)
    shutil.copytree(LEGACY, new)
    reseal_bundle(new, {"AC-10": lambda record: record["measurements"][0].update(value=1.0)})
    summary = tmp_path / "summary.md"
    reported = _compare_step(base, new, summary, "false")
    assert reported.returncode == 0, reported.stderr
    row = ("| AC-10 | `test_speedup` | median_speedup | 1.52 x | 1 x | 0.658 | — "
           "| **REGRESSION** (beyond 5%) |")
    assert row in summary.read_text()
    assert reported.stdout.splitlines()[-1] == (
        "specgate compare: regression reported in the step summary (compare-fails is not true)"
    )
    assert _compare_step(base, new, summary, "true").returncode == 1


def test_help_prints(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["compare", "--help"])
    assert exited.value.code == 0 and "(default 0.05, i.e. 5%; '5%' works too)" in " ".join(
        capsys.readouterr().out.split()
    )


def test_the_measurements_own_interval_comes_first() -> None:
    base = _record(1.9, interval=(1.0, 3.0))
    document = dict(base.document)
    document["measurements"] = [
        {**document["measurements"][0], "ci_low": 1.85, "ci_high": 1.95, "confidence_level": 0.95}
    ]
    change = _change(AcRecord.built(document), _record(1.7))
    assert change.change is Change.REGRESSION
    assert change.interval.source == "the measurement's interval (95%)"
