"""``specgate compare BASE NEW``: a change counts where the whole interval of the difference (from
both runs' samples, else their intervals) lies beyond the tolerance, its direction comes from the
bound, verdict changes come first, and a regression exits 1.

The last test is the issue's must-show: the worked canary run twice on the mock, the second
time with a draft step as slow as a target step, is reported as a regression (exit 1).
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import AC10, PLANTED_HF_TOKEN, TEST_ENV, GitRepo, SyntheticRun, cli, reseal_bundle

from pytest_specgate.cli import main
from pytest_specgate.contracts.samples import RecordedSamples
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._compare import (
    Change,
    Comparison,
    bundle_side,
    compare_records,
    comparison_json,
    tolerance_from_text,
)
from pytest_specgate.evidence.cli_commands import configure_compare_parser, run_compare
from pytest_specgate.measure.sequential import median_confidence_sequence

REPO = Path(__file__).resolve().parents[2]
LEGACY = Path(__file__).parent / "legacy_bundles" / "evidence-v2"
NODE = "acceptance/test_ac10.py::test_speedup"


def _record(value: float, *, at_least: float | None = 1.4, at_most: float | None = None,
            interval: tuple[float, float] | None = None, note: bool = False,
            samples: list[float] | None = None, outcome: str = "passed") -> AcRecord:
    document: dict[str, Any] = json.loads((LEGACY / "AC-10.json").read_text())
    row = {"at_least": at_least, "at_most": at_most, "name": "median_speedup", "nodeid": NODE,
           "passed": True, "unit": "x", "value": value}
    document["measurements"] = [row]
    notes: dict[str, Any] = {}
    if interval is not None and note:
        notes["median_speedup_estimate"] = {"ci_low": interval[0], "ci_high": interval[1]}
    elif interval is not None:
        document["measurements"] += [
            {**copy.deepcopy(row), "name": f"median_speedup_ci95_{end}", "value": value, "at_least": None}
            for end, value in zip(("low", "high"), interval, strict=True)
        ]
    if samples is not None:
        recorded = RecordedSamples(tuple(samples), "median", "pair speedup")
        notes["median_speedup_samples"] = recorded.to_dict()
    if notes:
        document["tests"][0]["notes"] = notes
    document["tests"][0]["outcome"] = outcome
    return AcRecord.built(document)


def _comparison(base: AcRecord, new: AcRecord, tolerance: float = 0.05) -> Comparison:
    side = bundle_side("run", "0" * 64, {"AC-10": base})
    return compare_records({"AC-10": base}, {"AC-10": new}, side, side, tolerance)


def _change(base: AcRecord, new: AcRecord, tolerance: float = 0.05) -> Any:
    (change,) = _comparison(base, new, tolerance).changes
    return change


def _speedups(median: float, n: int = 40, sigma: float = 0.03, seed: int = 1) -> list[float]:
    """Pair speedups as a run draws them: log-normal around ``median``."""
    rng = random.Random(seed)
    return [median * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def test_a_drop_whose_whole_interval_lies_beyond_the_tolerance_is_a_regression() -> None:
    change = _change(_record(1.9, interval=(1.8, 2.0)), _record(1.5))
    assert (change.change, change.fails, round(change.ratio, 3)) == (Change.REGRESSION, True, 0.789)
    # Only the base states an interval: its half-width stands in for the new run's too.
    found = change.difference
    assert found.basis == "intervals" and found.high < -0.05
    half = round(math.hypot(0.1, 0.1) / 1.9, 4)
    assert (round(found.point, 4), round(found.high - found.point, 4)) == (-0.2105, half)


def test_overlapping_intervals_are_no_change_though_the_new_value_leaves_the_base_interval() -> None:
    # The issue's false alarm: 1.65 lies outside the base's 1.7-2.1, but the runs' intervals overlap.
    change = _change(_record(1.9, interval=(1.7, 2.1)), _record(1.65, interval=(1.45, 1.85)))
    assert (change.change, change.fails) == (Change.NO_CHANGE, False)
    assert change.difference.low < -0.05 < change.difference.high


def test_the_interval_can_come_from_a_note_and_from_the_new_run() -> None:
    from_note = _change(_record(1.9, interval=(1.8, 2.0), note=True), _record(1.5))
    assert from_note.change is Change.REGRESSION and from_note.difference.basis == "intervals"
    from_new = _change(_record(1.9), _record(1.5, interval=(1.4, 1.6)))
    assert from_new.change is Change.REGRESSION and from_new.difference.basis == "intervals"
    wide = _change(_record(1.9), _record(1.5, interval=(0.5, 2.5)))
    assert wide.change is Change.NO_CHANGE


def test_samples_of_both_runs_decide_a_real_slowdown_and_same_distribution_noise() -> None:
    base_samples = _speedups(1.6, seed=1)
    slower = _speedups(1.6 * 0.9, seed=2)
    again = _speedups(1.6, seed=3)
    # Recorded intervals that would call the noise a regression are not consulted: samples come first.
    base = _record(statistics.median(base_samples), interval=(1.59, 1.61), samples=base_samples)
    regression = _change(base, _record(statistics.median(slower), samples=slower))
    assert (regression.change, regression.difference.basis) == (Change.REGRESSION, "samples")
    assert -0.13 < regression.difference.point < -0.07 and regression.difference.high < -0.05
    same = _change(base, _record(statistics.median(again), samples=again))
    assert (same.change, same.difference.basis) == (Change.NO_CHANGE, "samples")
    assert same.difference.low < 0 < same.difference.high


def test_samples_on_one_side_only_fall_back_to_intervals() -> None:
    base = _record(1.6, interval=(1.5, 1.7), samples=_speedups(1.6))
    change = _change(base, _record(1.58))
    assert (change.change, change.difference.basis) == (Change.NO_CHANGE, "intervals")


def test_without_an_interval_a_change_beyond_the_tolerance_is_only_changed() -> None:
    assert _change(_record(1.9), _record(1.85)).change is Change.NO_CHANGE
    # Nothing tells this drop from noise: reported, never a regression.
    change = _change(_record(1.9), _record(1.7))
    assert (change.change, change.fails, change.difference.basis) == (Change.CHANGED, False, "values")
    assert _change(_record(1.9), _record(1.7), tolerance=0.2).change is Change.NO_CHANGE


def test_the_bound_gives_the_direction_and_a_figure_without_one_only_changes() -> None:
    assert _change(_record(1.5, interval=(1.45, 1.55)), _record(1.9)).change is Change.IMPROVEMENT
    lower = _change(_record(10.0, at_least=None, at_most=20.0, interval=(9.9, 10.1)),
                    _record(12.0, at_least=None, at_most=20.0))
    assert lower.change is Change.REGRESSION
    assert _change(_record(10.0, at_least=None, at_most=20.0, interval=(9.9, 10.1)),
                   _record(8.0, at_least=None, at_most=20.0)).change is Change.IMPROVEMENT
    unbound = _change(_record(100.0, at_least=None, interval=(99.0, 101.0)), _record(300.0, at_least=None))
    assert (unbound.change, unbound.fails) == (Change.CHANGED, False)


def test_a_change_from_zero_is_judged_absolutely() -> None:
    change = _change(_record(0.0, at_least=None, at_most=0.0, interval=(0.0, 0.5)),
                     _record(2.0, at_least=None, at_most=0.0))
    assert (change.change, change.difference.absolute, change.ratio) == (Change.REGRESSION, True, None)
    # Without an interval, reported but not failed (its verdict change fails the comparison).
    plain = _change(_record(0.0, at_least=None, at_most=0.0), _record(2.0, at_least=None, at_most=0.0))
    assert plain.change is Change.CHANGED
    assert _change(_record(0.0, at_least=None, at_most=0.0),
                   _record(0.0, at_least=None, at_most=0.0)).change is Change.NO_CHANGE


def test_verdict_changes_come_first_and_a_passed_that_fails_is_a_regression(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    speedups = _speedups(1.8, n=24)
    base = _ac10_bundle(git_repo.path, speedups)
    failed = _ac10_bundle(git_repo.path, speedups, outcome="failed")
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(base), str(failed))
    assert code == 1 and "**1 regression**" in out
    assert out.index("Verdict changes:") < out.index("| median_speedup |")
    assert "| AC-10 | PASSED · QUALIFYING | FAILED · NOT QUALIFYING | **REGRESSION** |" in out, out
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(failed), str(base))
    assert code == 0 and "| AC-10 | FAILED · NOT QUALIFYING | PASSED · QUALIFYING | changed |" in out
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(base), str(base), "--json")
    assert code == 0 and json.loads(out)["verdict_changes"] == []


def test_a_qualifying_run_that_no_longer_qualifies_is_a_regression(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    speedups = _speedups(1.8, n=24)
    base = _ac10_bundle(git_repo.path, speedups)
    diagnostic = _ac10_bundle(git_repo.path, speedups, diagnostic=True)
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(base), str(diagnostic), "--json")
    document = json.loads(out)
    assert code == 1 and document["regressions"] == 1
    assert document["verdict_changes"] == [{"ac": "AC-10", "base": "PASSED · QUALIFYING",
                                            "new": "PASSED · NOT QUALIFYING", "regression": True}]


def test_json_has_a_versioned_shape() -> None:
    document = comparison_json(_comparison(_record(1.9, interval=(1.8, 2.0)), _record(1.5)))
    assert document["schema"] == "specgate.compare/2"
    counts = (document["regressions"], document["verdict_changes"], document["counts"]["regression"])
    assert counts == (1, [], 1)
    (row,) = document["measurements"]
    assert row["change"] == "regression" and row["better"] == "higher"
    assert row["difference"]["basis"] == "intervals" and row["difference"]["absolute"] is False


@pytest.mark.parametrize(("text", "expected"), [("0.05", 0.05), ("5%", 0.05), (" 10% ", 0.1), ("0", 0.0)])
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
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(LEGACY), str(LEGACY),
                         "--confidence-level=2")
    assert (code, out) == (2, "") and "--confidence-level: confidence level must be" in err


def test_a_malformed_samples_note_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new"
    shutil.copytree(LEGACY, new)

    def plant(record: dict[str, Any]) -> None:
        record["tests"][0]["notes"] = {"median_speedup_samples": {"statistic": "mode", "values": [1.0]}}

    reseal_bundle(new, {"AC-10": plant})
    base = tmp_path / "base"
    shutil.copytree(new, base)
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(base), str(new))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "note median_speedup_samples: statistic 'mode': expected median, mean or p1..p99" in err


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


def test_the_canary_run_twice_is_no_regression_and_with_a_slower_candidate_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Steps of 10 ms rather than the canary's 3: the mock sleeps for each, and a busy machine's
    # scheduling delays (a millisecond or more under xdist) must stay small beside them, or the
    # same plan run twice can differ by more than its interval (PASSED, then INCONCLUSIVE).
    steps = ("--specgate-engine-option=target_step_ms=10", "--specgate-engine-option=draft_step_ms=1")
    base = _canary_bundle(tmp_path / "base", *steps)
    again = _canary_bundle(tmp_path / "again", *steps)
    # A draft step as slow as a target step: speculation costs more than it saves.
    new = _canary_bundle(tmp_path / "new", steps[0], "--specgate-engine-option=draft_step_ms=10")
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(base), str(again))
    assert (code, err) == (0, "") and "no regression" in out, out
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(base), str(new))
    assert (code, err) == (1, ""), out
    row = next(line for line in out.splitlines() if "| median_speedup |" in line)
    assert row.startswith("| AC-100 | `test_speedup_canary` | median_speedup | ")
    assert row.endswith("; samples) | **REGRESSION** |")
    code, out, _ = cli(capsys, configure_compare_parser, run_compare, str(base), str(new), "--json")
    document = json.loads(out)
    speedup = next(m for m in document["measurements"] if m["measurement"] == "median_speedup")
    assert code == 1 and speedup["change"] == "regression" and speedup["ratio"] < 0.8
    assert speedup["difference"]["basis"] == "samples" and speedup["difference"]["high"] < -0.05


AC10_NODE = "acceptance/spec028/test_spec028_ac10_m4_canary.py::test_ac10_paired_speedup_and_acceptance"


def _ac10_bundle(repo: Path, speedups: list[float], outcome: str = "passed", **options: Any) -> Path:
    """An AC-10 bundle through the real recorder, collector and writer: the median speedup as a
    sequential estimate with the pair speedups noted behind it, as the spec records them."""
    run = SyntheticRun(repo, TEST_ENV, **options)
    recorder = run.recorder(AC10_NODE)
    recorder.measure("median_speedup", median_confidence_sequence(speedups), "x", at_least=1.4,
                     samples=RecordedSamples(tuple(speedups), "median", "pair speedup"))
    run.run_test(AC10_NODE, AC10, recorder=recorder, outcome=outcome,
                 mode="diagnostic" if options.get("diagnostic") else "default")
    return run.finish().path


def test_ac10_of_one_commit_twice_is_no_regression_and_a_planted_10_percent_slowdown_is(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # 48 pairs (AC-10's sequential run at its longest on a 12-prompt plan) of a quiet host's spread.
    base = _ac10_bundle(git_repo.path, _speedups(1.8, n=48, sigma=0.05, seed=11))
    again = _ac10_bundle(git_repo.path, _speedups(1.8, n=48, sigma=0.05, seed=12))
    slower = _ac10_bundle(git_repo.path, _speedups(1.8 * 0.9, n=48, sigma=0.05, seed=13))
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(base), str(again))
    assert (code, err) == (0, "") and "\nno regression (a change counts where its whole 95% interval" in out
    assert "median_speedup |" in out and "; samples) | no change |" in out
    code, out, err = cli(capsys, configure_compare_parser, run_compare, str(base), str(slower))
    assert (code, err) == (1, "") and "**1 regression**" in out
    row = next(line for line in out.splitlines() if "| median_speedup |" in line)
    assert row.startswith("| AC-10 | `test_ac10_paired_speedup_and_acceptance` | median_speedup | ")
    assert row.endswith("; samples) | **REGRESSION** |")


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
    reseal_bundle(new, {"AC-10": lambda record: record["measurements"][0].update(
        value=1.0, ci_low=0.95, ci_high=1.05, confidence_level=0.95, decide="point")})
    summary = tmp_path / "summary.md"
    reported = _compare_step(base, new, summary, "false")
    assert reported.returncode == 0, reported.stderr
    row = ("| AC-10 | `test_speedup` | median_speedup | 1.52 x | 1 x | -34.2% (-38.9% to -29.6%; intervals) "
           "| **REGRESSION** |")
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
    # The wide 1.0-3.0 of the sibling measurements would have made it no change.
    assert change.difference.high < -0.05


def test_a_recorded_interval_is_read_at_the_level_it_was_recorded_at() -> None:
    # 1.9 (1.8-2.0 at 95%, the _ci95 convention) to 1.7: beyond 0 at 95%, not at 99.9%.
    base, new = _record(1.9, interval=(1.8, 2.0)), _record(1.7)
    side = bundle_side("run", "0" * 64, {"AC-10": base})

    def judged(level: float, base: AcRecord = base) -> Any:
        comparison = compare_records({"AC-10": base}, {"AC-10": new}, side, side, 0.0, level)
        return comparison.changes[0]

    at_95, at_999 = judged(0.95), judged(0.999)
    assert at_95.change is Change.REGRESSION and at_999.change is Change.NO_CHANGE
    half_95, half_999 = (found.difference.high - found.difference.point for found in (at_95, at_999))
    assert half_999 / half_95 == pytest.approx(3.2905 / 1.9600, rel=1e-3)
    # The measurement's own 1.8-2.0 stated at 50% is about 1.6-2.2 at 95%: no change.
    document = dict(base.document)
    document["measurements"] = [{**document["measurements"][0], "ci_low": 1.8, "ci_high": 2.0,
                                 "confidence_level": 0.5}]
    assert judged(0.95, AcRecord.built(document)).change is Change.NO_CHANGE


@pytest.mark.parametrize("options", [(), ("--json",)], ids=["markdown", "json"])
def test_compare_redacts_a_secret_a_forged_record_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...]
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(LEGACY, bundle)
    code, clean, _ = cli(capsys, configure_compare_parser, run_compare, str(bundle), str(bundle), *options)
    assert code == 0 and "median_speedup" in clean

    def plant(record: dict[str, Any]) -> None:
        record["measurements"][0]["name"] = f"median_speedup {PLANTED_HF_TOKEN}"

    reseal_bundle(bundle, {"AC-10": plant})
    code, shown, _ = cli(capsys, configure_compare_parser, run_compare, str(bundle), str(bundle), *options)
    assert code == 0 and "median_speedup <" in shown and PLANTED_HF_TOKEN not in shown


@pytest.mark.parametrize(("base", "new", "ratio"),
                         [(5e-324, 1e308, None), (-1.7e308, 1.7e308, -1.0), (1e-300, 10**300, None)],
                         ids=["ratio", "difference", "integer"])
def test_a_change_past_what_a_float_holds_is_reported_not_a_traceback(
    base: float, new: float, ratio: float | None
) -> None:
    """Finite figures the schema accepts whose change overflows (``--json`` cannot write inf)."""
    comparison = _comparison(_record(base, at_least=None), _record(new, at_least=None))
    (change,) = comparison.changes
    assert (change.difference, change.ratio, change.change) == (None, ratio, Change.NOT_A_NUMBER)
    written = json.dumps(comparison_json(comparison), allow_nan=False)
    assert json.loads(written)["measurements"][0]["new"] == new
