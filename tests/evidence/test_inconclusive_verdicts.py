"""Three-way verdicts: a figure judged on its confidence interval is passed, failed or inconclusive.

An inconclusive figure never qualifies: the AC's outcome is ``inconclusive`` and the gate refuses
it naming the interval and the bound; ``decide="point"`` is recorded and shown.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, ac_record, gate

from pytest_specgate.contracts.thresholds import three_way_verdict
from pytest_specgate.evidence import AcRecord, EvidenceRecorder, judge
from pytest_specgate.evidence._recorder import soft_failure_message
from pytest_specgate.evidence.cli_commands import configure_gate_parser, run_gate
from pytest_specgate.measure import median_speedup

SPEEDUPS = [1.31, 1.38, 1.41, 1.44, 1.52, 1.36, 1.47, 1.40, 1.43]


@pytest.mark.parametrize(
    ("value", "low", "high", "at_least", "at_most", "verdict"),
    [
        (1.5, 1.42, 1.6, 1.4, None, "passed"),
        (1.41, 1.25, 1.57, 1.4, None, "inconclusive"),
        (1.2, 1.1, 1.3, 1.4, None, "failed"),
        (1.5, None, 1.6, 1.4, None, "inconclusive"),
        (0.9, 0.8, 1.0, None, 1.1, "passed"),
        (1.05, 0.95, 1.15, None, 1.1, "inconclusive"),
        (1.3, 1.2, 1.4, None, 1.1, "failed"),
        (1.5, 1.42, 1.6, 1.4, 1.55, "inconclusive"),
        (1.5, 1.42, 1.6, 1.61, 1.55, "failed"),
    ],
)
def test_interval_against_bounds(
    value: float, low: float | None, high: float | None, at_least: float | None, at_most: float | None,
    verdict: str,
) -> None:
    assert three_way_verdict(value, at_least, at_most, low, high, "interval").verdict == verdict


def test_point_rule_judges_the_point_only() -> None:
    assert three_way_verdict(1.41, 1.4, None, 1.25, 1.57, "point").verdict == "passed"
    assert three_way_verdict(1.39, 1.4, None, 1.25, 1.57, "point").verdict == "failed"


def _bundle_with(git_repo: GitRepo, decide: str | None) -> tuple[Path, str]:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    nodeid = "acceptance/test_ac10.py::test_speedup"
    recorder = run.recorder(nodeid)
    estimate = median_speedup(SPEEDUPS)
    recorder.measure("median_speedup", estimate, "x", at_least=estimate.median,
                     **({} if decide is None else {"decide": decide}))
    misses = recorder.take_new_misses()
    if misses:
        message = soft_failure_message(nodeid, "AC-10", misses, inconclusive=True)
        run.run_test(nodeid, AC10, recorder=recorder, outcome="failed", message=message)
    else:
        run.run_test(nodeid, AC10, recorder=recorder)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    bundle = run.finish()
    return bundle.path, bundle.markdown


def test_bound_at_its_own_median_is_inconclusive_and_the_gate_refuses_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, markdown = _bundle_with(git_repo, None)
    record = ac_record(path, "AC-10")
    row = record["measurements"][0]
    assert (row["decide"], row["verdict"], row["passed"]) == ("interval", "inconclusive", False)
    assert row["ci_low"] < row["value"] == row["at_least"] < row["ci_high"]
    verdict = judge(AcRecord.from_json(record, "AC-10.json"))
    assert (verdict.outcome, verdict.qualifying) == ("inconclusive", False)
    assert record["outcome"] == "inconclusive"
    assert "| median_speedup | 1.41 x [" in markdown and "95% | ≥ 1.41 | INCONCLUSIVE |" in markdown
    body = tmp_path / "PR.md"
    body.write_text(markdown)
    code, out, _ = gate(capsys, f"--commit={record['source']['commit']}", "--pr-body", str(body),
                        "--evidence", str(path), "--require", "AC-10")
    assert code == 1
    text = "\n".join(out)
    assert "AC-10: outcome is inconclusive, not passed" in text
    interval = f"[{row['ci_low']:g}, {row['ci_high']:g}]"
    assert f"median_speedup = 1.41 x is inconclusive at 95% confidence: has an interval {interval} " \
           "that straddles at_least=1.41" in text


def test_gate_json_names_the_inconclusive_outcome_with_interval_and_bound(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, markdown = _bundle_with(git_repo, None)
    commit = ac_record(path, "AC-10")["source"]["commit"]
    body = tmp_path / "PR.md"
    body.write_text(markdown)
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    code = run_gate(parser.parse_args([f"--commit={commit}", "--pr-body", str(body), "--evidence",
                                       str(path), "--require", "AC-10", "--json"]))
    result = json.loads(capsys.readouterr().out)
    (ac,) = result["acs"]
    assert (code, result["accepted"], ac["outcome"], ac["qualifying"]) == (1, False, "inconclusive", False)
    assert any("is inconclusive at 95% confidence: has an interval [" in why
               and "straddles at_least=1.41" in why for why in ac["reasons"])


def test_point_rule_is_recorded_and_shown(git_repo: GitRepo) -> None:
    path, markdown = _bundle_with(git_repo, "point")
    record = ac_record(path, "AC-10")
    row = record["measurements"][0]
    assert (row["decide"], row["verdict"]) == ("point", "passed")
    assert record["outcome"] == "passed"
    assert "(judged on the point) | ≥ 1.41 | pass |" in markdown


def test_an_inconclusive_figure_beside_another_failure_stays_failed(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    estimate = median_speedup(SPEEDUPS)
    recorder.measure("median_speedup", estimate, "x", at_least=estimate.median)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder, outcome="failed",
                 message="AssertionError: the server crashed")
    record = ac_record(run.finish().path, "AC-10")
    assert record["outcome"] == "failed"


def test_an_interval_below_the_qualifying_level_never_qualifies(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", median_speedup(SPEEDUPS, confidence_level=0.5), "x", at_least=1.0)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    record = ac_record(run.finish().path, "AC-10")
    assert any("at confidence level 0.5, below the 0.95 that qualifies" in why
               for why in record["not_qualifying_reasons"])


INCONCLUSIVE_SPEC = """
import pytest
from pytest_specgate.measure import median_speedup

SPEEDUPS = [1.31, 1.38, 1.41, 1.44, 1.52, 1.36, 1.47, 1.40, 1.43]

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_bound_at_its_own_median(evidence, confidence_level):
    estimate = median_speedup(SPEEDUPS, confidence_level=confidence_level)
    evidence.measure("median_speedup", estimate, "x", at_least=estimate.median)

@pytest.mark.ac("AC-11")
def test_point_rule(evidence, confidence_level):
    estimate = median_speedup(SPEEDUPS, confidence_level=confidence_level)
    evidence.measure("median_speedup", estimate, "x", at_least=estimate.median, decide="point")
"""


def test_through_the_plugin_the_test_and_its_ac_are_inconclusive(pytester: pytest.Pytester) -> None:
    from pytest_specgate.evidence import find_bundles

    pytester.makepyfile(test_inconclusive=INCONCLUSIVE_SPEC)
    result = pytester.runpytest("--specgate-evidence=out", "--specgate-allow-dirty", "-rf",
                                "--specgate-confidence-level=0.99", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*inconclusive: AC-10: test_inconclusive.py::test_bound_at_its_own_median: "
                                 "measurement median_speedup = 1.41 x has an interval * that straddles "
                                 "at_least=1.41*"])
    (bundle,) = find_bundles(pytester.path / "out")
    ac10 = ac_record(bundle.path, "AC-10")
    ac11 = ac_record(bundle.path, "AC-11")
    assert ac10["outcome"] == "inconclusive"
    assert ac10["measurements"][0]["confidence_level"] == 0.99
    assert (ac11["outcome"], ac11["measurements"][0]["decide"]) == ("passed", "point")


def test_a_bad_confidence_level_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inconclusive=INCONCLUSIVE_SPEC)
    result = pytester.runpytest("--specgate-confidence-level=95", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*--specgate-confidence-level: expected a number between 0 and 1 "
                                 "(e.g. 0.95), got '95'*"])


def test_decide_interval_needs_an_estimate(git_repo: GitRepo) -> None:
    recorder = SyntheticRun(git_repo.path, TEST_ENV).recorder("t.py::t")
    with pytest.raises(ValueError, match="decide='interval' needs an estimate"):
        recorder.measure("x", 1.0, at_least=1.0, decide="interval")
    with pytest.raises(ValueError, match="decide must be one of interval, point"):
        recorder.measure("x", median_speedup(SPEEDUPS), decide="mean")  # type: ignore[arg-type]


def test_an_estimate_below_the_runs_level_is_a_soft_check_miss(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = EvidenceRecorder("t.py::t", run.collector.redactor, None, confidence_level=0.99)
    recorder.measure("x", median_speedup(SPEEDUPS), at_least=1.0)
    assert recorder.misses == ("measurement x: its interval has confidence level 0.95, below the "
                               "run's 0.99 (--specgate-confidence-level)",)


def test_a_test_reported_passed_with_an_undecided_figure_is_inconclusive(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    estimate = median_speedup(SPEEDUPS)
    recorder.measure("median_speedup", estimate, "x", at_least=estimate.median)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)  # claims passed
    record = ac_record(run.finish().path, "AC-10")
    assert (record["tests"][0]["outcome"], record["outcome"]) == ("passed", "inconclusive")
