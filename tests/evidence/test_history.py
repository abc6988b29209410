"""``specgate history``: bundles of several commits ordered by commit time, one trend table and
plot per AC figure, and a planted persistent shift found at the commit that made it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest
from evidence_testkit import AC10, TEST_ENV, GitRepo, SyntheticRun, cli

from pytest_specgate.evidence._history import change_points
from pytest_specgate.evidence.cli_commands import configure_history_parser, run_history

NODE = "acceptance/test_ac10.py::test_speedup"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _commit(repo: Path, index: int) -> str:
    (repo / "spec.py").write_text(f"SPEC = {index}\n")
    env = {**os.environ, "GIT_COMMITTER_DATE": f"2026-11-{index + 1:02d}T12:00:00Z",
           "GIT_AUTHOR_DATE": f"2026-11-{index + 1:02d}T12:00:00Z"}
    for arguments in (["add", "."], ["commit", "-q", "-m", f"change {index}"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *arguments],
                       cwd=repo, env=env, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _run(repo: Path, speedup: float) -> Path:
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder(NODE)
    recorder.measure("median_speedup", speedup, "x", at_least=1.4)
    recorder.measure("paired_rounds", 4, "rounds")
    run.run_test(NODE, AC10, recorder=recorder)
    return run.finish().path


def _history(git_repo: GitRepo, values: list[float], *, one_run_per_second: bool = False
             ) -> tuple[list[str], list[Path]]:
    """One commit and one bundle per value; bundles are written newest commit first, so only
    ordering by commit time puts them right. ``one_run_per_second``: each run starts in a second
    of its own (a run's start time is recorded to the second, so runs in one second tie)."""
    commits = [_commit(git_repo.path, index) for index in range(len(values))]
    bundles = []
    for index in reversed(range(len(values))):
        if one_run_per_second and bundles:
            time.sleep(1.01 - time.time() % 1.0)
        subprocess.run(["git", "checkout", "-q", commits[index]], cwd=git_repo.path, check=True)
        bundles.append(_run(git_repo.path, values[index]))
    return commits, bundles


def test_a_planted_shift_is_found_at_the_commit_that_made_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    values = [1.8 * (1 + rng.gauss(0, 0.01)) for _ in range(6)]
    values += [1.6 * (1 + rng.gauss(0, 0.01)) for _ in range(5)]
    commits, _ = _history(git_repo, values)
    out = tmp_path / "history"
    monkeypatch.chdir(git_repo.path)
    code, stdout, err = cli(capsys, configure_history_parser, run_history, str(git_repo.path / "out"),
                            f"--out={out}", "--json")
    assert (code, err) == (0, "")
    document = json.loads(stdout)
    assert document["schema"] == "specgate.history/1" and document["ordered_by"] == "commit time"
    assert [run["commit"] for run in document["runs"]] == commits
    speedup = next(s for s in document["series"] if s["measurement"] == "median_speedup")
    assert [round(point["value"], 6) for point in speedup["points"]] == [round(v, 6) for v in values]
    (shift,) = speedup["change_points"]
    assert (shift["index"], shift["commit"]) == (6, commits[6])
    assert -0.13 < shift["relative"] < -0.09
    rounds = next(s for s in document["series"] if s["measurement"] == "paired_rounds")
    assert rounds["change_points"] == []
    assert (out / speedup["plot"]).read_bytes().startswith(PNG_MAGIC)
    markdown = (out / "history.md").read_text()
    assert f"first at commit {commits[6][:12]}" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| 7 |") and "1.6" in line)
    assert row.endswith("| PASSED · QUALIFYING | ← shift " + f"{shift['relative']:+.1%} |")
    assert json.loads((out / "history.json").read_text()) == document


def test_noise_alone_shows_no_shift_and_an_outlier_is_not_one() -> None:
    rng = random.Random(9)
    for _ in range(50):
        assert change_points([1.8 * (1 + rng.gauss(0, 0.02)) for _ in range(15)], 0.05) == ()
    assert change_points([1.8, 1.81, 1.79, 1.2, 1.8, 1.82, 1.79, 1.8], 0.05) == ()
    # A shift smaller than the tolerance is not reported however clean.
    assert change_points([1.80] * 5 + [1.78] * 5, 0.05) == ()
    assert change_points([1.80] * 5 + [1.60] * 5, 0.05) == (5,)


def test_without_git_knowing_the_commits_runs_are_ordered_by_start_time(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _history(git_repo, [1.8, 1.8, 1.6, 1.6], one_run_per_second=True)
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    code, stdout, _ = cli(capsys, configure_history_parser, run_history, str(git_repo.path / "out"),
                          f"--out={tmp_path / 'h'}", f"--repo={elsewhere}", "--measurement=median_speedup")
    assert code == 0 and "4 runs, ordered by run start time (git does not know " in stdout
    assert "paired_rounds" not in stdout
    # The bundles were run newest commit first, so start time reverses the commits' order.
    (series,) = json.loads((tmp_path / "h" / "history.json").read_text())["series"]
    assert [point["value"] for point in series["points"]] == [1.6, 1.6, 1.8, 1.8]


def test_bad_input_is_one_line(git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _history(git_repo, [1.8])
    code, out, err = cli(capsys, configure_history_parser, run_history, str(git_repo.path / "out"),
                         f"--out={tmp_path / 'h'}", "--measurement=nothing_like_it")
    assert (code, out) == (2, "")
    assert err == "specgate history: error: no bundle records a measurement named nothing_like_it\n"
    code, out, err = cli(capsys, configure_history_parser, run_history, str(tmp_path / "missing"))
    assert (code, out) == (2, "") and err.count("\n") == 1


def test_without_ruptures_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from pytest_specgate.contracts.extras import MissingExtraError

    monkeypatch.setitem(sys.modules, "ruptures", None)
    with pytest.raises(MissingExtraError, match=r"^change-point detection needs ruptures \(not installed\): "
                       r"pip install 'pytest-specgate\[history\]'$"):
        change_points([1.0, 1.0, 1.0, 2.0, 2.0, 2.0], 0.05)
