"""The speedup model's line in an AC block: rendered from the recorded figures only, so the
gate's re-rendering shows the same line, and a PR body that edits it is rejected."""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import AC10, TEST_ENV, GitRepo, SyntheticRun, gate

from pytest_specgate.contracts.speedup_model import (
    BASELINE_FIXED_COST,
    CANDIDATE_FIXED_COST,
    DRAFT_COST,
    LINE_FIGURES,
    MEASURED_SPEEDUP,
    PREDICTED_SPEEDUP,
    VERIFY_COST,
)
from pytest_specgate.evidence import WrittenBundle

NODEID = "acceptance/test_ac10.py::test_speedup"
LINE = ("- Speedup model: predicted 1.71x (draft 0.21 target-steps, verify 2.3x, "
        "fixed 180 ms/request, baseline 150 ms), measured 1.62x (`test_speedup`)")
FIGURES = {PREDICTED_SPEEDUP: (1.714, "x"), DRAFT_COST: (0.2134, "target-steps"), VERIFY_COST: (2.31, "x"),
           CANDIDATE_FIXED_COST: (180.4, "ms"), BASELINE_FIXED_COST: (150.2, "ms"),
           MEASURED_SPEEDUP: (1.6213, "x")}


def _bundle(repo: Path, figures: dict[str, tuple[float, str]]) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder(NODEID)
    recorder.note_engine({"backend": "mock", "model": "specgate-mock-target"})
    for name, (value, unit) in figures.items():
        recorder.measure(name, value, unit)
    run.run_test(NODEID, AC10, recorder=recorder)
    return run.finish()


def _pr_body(tmp_path: Path, markdown: str) -> Path:
    path = tmp_path / "PR.md"
    path.write_text("## Summary\n\n" + markdown)
    return path


def test_the_block_shows_predicted_and_measured_with_the_fitted_costs(git_repo: GitRepo) -> None:
    markdown = _bundle(git_repo.path, FIGURES).markdown
    assert LINE in markdown.splitlines()


@pytest.mark.parametrize("missing", LINE_FIGURES)
def test_without_every_figure_there_is_no_line(git_repo: GitRepo, missing: str) -> None:
    figures = {name: figure for name, figure in FIGURES.items() if name != missing}
    assert "Speedup model" not in _bundle(git_repo.path, figures).markdown


def test_the_gate_accepts_the_line_as_written_and_rejects_it_edited(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _bundle(git_repo.path, FIGURES)
    arguments = [f"--evidence={written.path}", "--require=AC-10", f"--commit={git_repo.commit}"]
    honest = _pr_body(tmp_path, written.markdown)
    code, out, _ = gate(capsys, f"--pr-body={honest}", *arguments)
    assert "does not show what was judged" not in "\n".join(out), out
    flattering = _pr_body(tmp_path, written.markdown.replace("predicted 1.71x", "predicted 1.61x"))
    code, out, _ = gate(capsys, f"--pr-body={flattering}", *arguments)
    assert code == 1
    assert any("does not show what was judged" in line and "predicted 1.71x" in line for line in out), out
