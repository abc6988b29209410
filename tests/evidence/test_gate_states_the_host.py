"""The gate states the host every block points to, whatever a pasted summary says.

evidence.md layout 2 states a run's host line once, in the summary; each block says
``- Host: that of run 1 (`RUN`), in the summary``. The summary is outside every block: the gate
compares no line of it, and an author may paste it edited. Layout 1 showed the host in every
block, so a block claiming ``Apple M4, 16 GB`` over a Linux record was refused (docs/trust.md,
the first route). With the host moved out of the block, a PR body holding the true blocks under
a summary that says ``host Apple M4, 16 GB`` was accepted, and nothing the gate printed named the
host the records state. The gate now prints each run's host line, as it prints the reasons it
recomputed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import TEST_ENV, GitRepo, gate, qualifying_bundle, reseal_bundle

RECORDED_HOST = "linux x86_64, 24 GB, no GPU"
CLAIMED_HOST = "Apple M4, 16 GB, macOS 15.1"


def test_a_summary_claiming_another_host_cannot_hide_the_recorded_one(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    run = written.path.name
    assert f"- Host: that of run 1 (`{run}`), in the summary" in written.markdown
    forged = written.markdown.replace(f"host {RECORDED_HOST}", f"host {CLAIMED_HOST}")
    assert forged != written.markdown and RECORDED_HOST not in forged
    body = tmp_path / "PR.md"
    body.write_text(forged)
    code, lines, err = gate(capsys, f"--pr-body={body}", f"--evidence={written.path}",
                            f"--commit={git_repo.commit}", "--require=AC-10", "--require=AC-11")
    assert (code, lines) == (0, ["specgate gate: accepted AC-10, AC-11"])
    assert f"specgate gate: run {run} ran on {RECORDED_HOST} (each block's host line)" in err.splitlines()


def test_two_bundles_claiming_one_run_with_two_hosts_each_have_theirs_stated(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of the bundle whose AC-11 record states another host (resealed: unsigned evidence
    proves consistency, not honesty) pasted beside the true AC-10 block: the run id has two host
    lines, and the gate states both rather than neither."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    run = written.path.name
    copy = tmp_path / "copy" / run
    shutil.copytree(written.path, copy)

    def claim_m4(record: dict[str, Any]) -> None:
        record["host"]["summary"] = CLAIMED_HOST

    forged = reseal_bundle(copy, {"AC-11": claim_m4})
    body = tmp_path / "PR.md"
    body.write_text(_block(written.markdown, "AC-10") + "\n" + _block(forged, "AC-11"))
    code, _, err = gate(capsys, f"--pr-body={body}", f"--evidence={written.path}", f"--evidence={copy}",
                        f"--commit={git_repo.commit}", "--require=AC-10", "--require=AC-11")
    stated = [line for line in err.splitlines() if line.startswith(f"specgate gate: run {run} ran on ")]
    assert stated == [f"specgate gate: run {run} ran on {host} (each block's host line)"
                      for host in sorted([CLAIMED_HOST, RECORDED_HOST])], (code, err)


def _block(markdown: str, ac_id: str) -> str:
    return f"## {ac_id} evidence" + markdown.split(f"## {ac_id} evidence", 1)[1].split("\n## ", 1)[0]
