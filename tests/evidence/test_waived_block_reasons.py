"""A waived AC's pasted block names every reason it did not qualify.

evidence.md layout 2 states the reasons every AC of a run shares once, in the summary; a block
counts them and says "the gate prints them". The gate prints them when it rejects the AC. A
waived AC is different: the gate accepts it (``specgate gate: accepted AC-10``) and prints no
reason, so a PR body holding its block alone (the summary is outside every block, unchecked, and
an author may edit it) showed the reviewer no reason at all: a diagnostic run, a simulated host,
a dirty tree were each only counted. Layout 1 listed them in the block, which the gate checks
line by line. A waived AC's block lists them again, checked as every line is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, gate

from pytest_specgate.evidence import WrittenBundle

DIAGNOSTIC = "diagnostic run: evidence from --specgate-diagnostic never qualifies"


def _diagnostic_run_with_a_waiver(repo: Path) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV, diagnostic=True)
    waived = AC10 | {"waived_to": "PR-B", "reason": "no M4 in CI"}
    run.run_test("acceptance/test_ac10.py::test_speedup", waived)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


def _block(markdown: str, ac_id: str) -> str:
    return f"## {ac_id} evidence" + markdown.split(f"## {ac_id} evidence", 1)[1].split("\n## ", 1)[0]


def _gated(capsys: pytest.CaptureFixture[str], tmp_path: Path, written: WrittenBundle, commit: str,
           block: str) -> tuple[int, list[str]]:
    body = tmp_path / "PR.md"
    body.write_text("## Summary\n\nThe summary above the blocks says: no reason that matters.\n\n" + block)
    trusted = tmp_path / "pyproject.toml"
    trusted.write_text('[tool.specgate]\ngates = ["PR-A", "PR-B"]\n[tool.specgate.acs."AC-10"]\n'
                       '[tool.specgate.acs."AC-11"]\n')
    code, lines, _ = gate(capsys, f"--pr-body={body}", f"--evidence={written.path}", f"--commit={commit}",
                          "--gate=PR-A", f"--trusted-config={trusted}", "--require=AC-10")
    return code, lines


def test_an_accepted_waived_block_shows_the_runs_reasons_itself(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _diagnostic_run_with_a_waiver(git_repo.path)
    block = _block(written.markdown, "AC-10")
    code, lines = _gated(capsys, tmp_path, written, git_repo.commit, block)
    assert (code, lines) == (0, ["specgate gate: accepted AC-10"])
    assert f"  - {DIAGNOSTIC}" in block.splitlines(), block
    assert "(the gate prints them)" not in block


def test_a_waived_block_that_only_counts_the_runs_reasons_is_refused(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The counting line the block used to show is no longer what was judged."""
    written = _diagnostic_run_with_a_waiver(git_repo.path)
    block = _block(written.markdown, "AC-10")
    counted = ("- Qualifying: no (specgate.policy/1), 1 reason: run 1's 1, in the summary "
               "(the gate prints them)")
    listed = f"- Qualifying: no (specgate.policy/1), 1 reason:\n  - {DIAGNOSTIC}\n"
    assert listed in block, block
    edited = block.replace(listed, counted + "\n")
    code, printed = _gated(capsys, tmp_path, written, git_repo.commit, edited)
    assert code == 1 and any("the block does not show what was judged" in line for line in printed), printed


def test_an_unwaived_block_still_counts_the_runs_reasons(git_repo: GitRepo) -> None:
    """AC-11, rejected, keeps the short form: the gate prints its reasons."""
    block = _block(_diagnostic_run_with_a_waiver(git_repo.path).markdown, "AC-11")
    assert "run 1's 1, in the summary (the gate prints them)" in block and DIAGNOSTIC not in block
