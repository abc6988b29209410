"""Whatever a PR body pastes of a layout-2 bundle, the reviewer reads every reason and the host.

evidence.md layout 2 moved what every AC of a run shares (its host line, its reasons not to
qualify) out of the blocks into the summary, which no gate check compares. For every block pasted
alone, whatever the gate decides, each reason the policy gives the AC and the AC's host line must
be in what the reviewer is shown as checked: the block itself, or the gate's own lines. The
waived AC (accepted, printing no reason) and the host (printed nowhere) broke this before.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, gate

from pytest_specgate.evidence import WrittenBundle, load_bundle, read_records
from pytest_specgate.evidence._markdown import _host_line, grouped_reasons
from pytest_specgate.evidence._policy import judge

SETUPS = list(itertools.product([False, True], [False, True], [False, True]))


def _bundle(repo: Path, diagnostic: bool, waived: bool, below: bool) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV, diagnostic=diagnostic)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.1 if below else 1.6, "x", at_least=1.4)
    ac10 = AC10 | ({"waived_to": "PR-B", "reason": "no M4 in CI"} if waived else {})
    run.run_test("acceptance/test_ac10.py::test_speedup", ac10, recorder=recorder)
    run.run_test("acceptance/test_ac10.py::test_identity", ac10)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


@pytest.mark.parametrize(("diagnostic", "waived", "below"), SETUPS,
                         ids=[f"diagnostic={d}-waived={w}-below={b}" for d, w, b in SETUPS])
def test_each_block_alone_shows_or_the_gate_prints_every_reason_and_the_host(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    diagnostic: bool, waived: bool, below: bool,
) -> None:
    written = _bundle(git_repo.path, diagnostic, waived, below)
    records = read_records(load_bundle(written.path))
    trusted = tmp_path / "pyproject.toml"
    trusted.write_text('[tool.specgate]\ngates = ["PR-A", "PR-B"]\n[tool.specgate.acs."AC-10"]\n'
                       '[tool.specgate.acs."AC-11"]\n')
    for ac_id, record in records.items():
        block = f"## {ac_id} evidence" + written.markdown.split(f"## {ac_id} evidence", 1)[1]
        block = block.split("\n## ", 1)[0]
        body = tmp_path / f"{ac_id}.md"
        body.write_text(block)
        code, lines, err = gate(capsys, f"--pr-body={body}", f"--evidence={written.path}",
                                f"--commit={git_repo.commit}", "--gate=PR-A", f"--trusted-config={trusted}",
                                f"--require={ac_id}")
        shown = block + "\n" + "\n".join(lines) + "\n" + err
        for why, _ in grouped_reasons(record, judge(record).reasons):
            assert why in shown, (ac_id, code, why, shown)
        assert _host_line(record) in shown, (ac_id, shown)
