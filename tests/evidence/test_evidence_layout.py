"""``evidence.md`` layout 2: what every AC of a run shares (its host line, its reasons not to
qualify) is stated once in the summary; each block names its run and counts those reasons, and the
gate prints them. A bundle whose ``evidence.md`` is in layout 1 (every block self-contained, as
main wrote until now) still verifies; each layout is accepted only exactly as its records render.

Honest setups: render, paste all or some blocks, the gate accepts (or, for a run that does not
qualify, rejects printing the run's reasons). Attacks: a block edited, a block whose run-wide
reasons were dropped or altered, a block claiming to qualify when its run has reasons, a block moved
to another AC, a summary whose stated reasons were altered, a block of the other layout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evidence_testkit import TEST_ENV, GitRepo, cli, gate, qualifying_bundle, rendered_in_layout

from pytest_specgate.evidence import WrittenBundle
from pytest_specgate.evidence._bundle import MANIFEST_NAME, MARKDOWN_NAME, file_entry
from pytest_specgate.evidence._jsonio import pretty_json
from pytest_specgate.evidence._markdown import (
    LAYOUT_PER_BLOCK,
    LAYOUT_RUN_ONCE,
    RUNS_INTRO,
    markdown_layout,
    parse_pr_body,
)
from pytest_specgate.evidence.cli_commands import configure_render_parser, run_render

DIAGNOSTIC = "diagnostic run: evidence from --specgate-diagnostic never qualifies"
HOST_LINE = "specgate gate: run {run} ran on linux x86_64, 24 GB, no GPU (each block's host line)\n"
"""What the gate states on stderr of each run it judged blocks of (layout 2's blocks name it)."""


def _blocks(markdown: str) -> dict[str, str]:
    """Each ``## AC-N evidence`` block of ``markdown`` as text, by AC."""
    parts = markdown.split("\n## ")
    return {part.split(" ", 1)[0]: "## " + part.rstrip("\n") + "\n" for part in parts[1:]
            if part.split(" ", 1)[0].startswith("AC-")}


def _pasted(tmp_path: Path, *blocks: str) -> Path:
    body = tmp_path / "PR.md"
    body.write_text("## Summary\n\nSpeculative decoding for SPEC-028.\n\n" + "\n".join(blocks))
    return body


def _gate(capsys: pytest.CaptureFixture[str], body: Path, written: WrittenBundle | Path, commit: str,
          *required: str) -> tuple[int, list[str], str]:
    evidence = written if isinstance(written, Path) else written.path
    return gate(capsys, f"--pr-body={body}", f"--evidence={evidence}", f"--commit={commit}",
                *(f"--require={ac}" for ac in required))


def _diagnostic(git_repo: GitRepo) -> WrittenBundle:
    """Both ACs of one run, not qualifying for the one reason the run gives them all."""
    return qualifying_bundle(git_repo.path, TEST_ENV, diagnostic=True)


def _rewritten_markdown(bundle: Path, markdown: str) -> None:
    """``evidence.md`` replaced and its manifest entry with it (the bundle digest leaves it out)."""
    (bundle / MARKDOWN_NAME).write_text(markdown)
    manifest = json.loads((bundle / MANIFEST_NAME).read_text())
    manifest["files"][MARKDOWN_NAME] = file_entry(markdown.encode()).to_dict()
    (bundle / MANIFEST_NAME).write_text(pretty_json(manifest))


def _layout_1_markdown(bundle: Path) -> str:
    return rendered_in_layout(bundle, LAYOUT_PER_BLOCK)


def test_the_run_is_stated_once_and_every_block_names_it(git_repo: GitRepo) -> None:
    written = _diagnostic(git_repo)
    run = written.path.name
    assert markdown_layout(written.markdown.encode()) == LAYOUT_RUN_ONCE
    assert written.markdown.startswith(f"## specgate summary\n\n{RUNS_INTRO}\n\n- Run 1 (`{run}`, 2 ACs): "
                                       "host linux x86_64, 24 GB, no GPU; 1 reason not to qualify:\n"
                                       f"  - {DIAGNOSTIC}\n")
    assert written.markdown.count(DIAGNOSTIC) == 1
    assert written.markdown.count("linux x86_64, 24 GB, no GPU") == 1
    for block in _blocks(written.markdown).values():
        assert f"- Host: that of run 1 (`{run}`), in the summary\n" in block
        assert ("- Qualifying: no (specgate.policy/1), 1 reason: run 1's 1, in the summary "
                "(the gate prints them)\n") in block
    assert "| run 1 |" in written.markdown
    assert written.markdown.count("not signed when written") == 1


def test_an_ac_keeps_its_own_reasons_beside_the_count_of_the_runs(git_repo: GitRepo) -> None:
    """AC-10 alone also fails a bound: that reason is its own, listed in its block; the run's
    shared reason is still only counted there."""
    from evidence_testkit import AC10, AC11, SyntheticRun

    run = SyntheticRun(git_repo.path, TEST_ENV, diagnostic=True)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.1, "x", at_least=1.4)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    written = run.finish()
    block = _blocks(written.markdown)["AC-10"]
    own = [line for line in block.splitlines() if line.startswith("  - ")]
    assert "- Qualifying: no (specgate.policy/1), 2 reasons: run 1's 1, in the summary" in block
    assert "(the gate prints them), and 1 of its own:" in block
    assert len(own) == 1 and "median_speedup = 1.1" in own[0] and own[0].endswith("(`test_speedup`)")
    assert DIAGNOSTIC not in block


@pytest.mark.parametrize("pasted", [("AC-10", "AC-11"), ("AC-10",), ("AC-11",)])
def test_rendered_blocks_pasted_all_or_some_are_accepted(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], pasted: tuple[str, ...]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    code, out, err = cli(capsys, configure_render_parser, run_render, str(written.path))
    assert (code, err) == (0, "") and out == written.markdown
    blocks = _blocks(out)
    assert all("- Host: that of run 1" in block for block in blocks.values())
    code, lines, _ = _gate(capsys, _pasted(tmp_path, *(blocks[ac] for ac in pasted)), written,
                           git_repo.commit, *pasted)
    assert (code, lines) == (0, [f"specgate gate: accepted {', '.join(pasted)}"])


def test_the_gate_prints_the_runs_reasons_for_a_block_pasted_alone(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The PR body holds AC-11's block alone (no summary): the block counts the run's reason, and
    the gate's account names it."""
    written = _diagnostic(git_repo)
    block = _blocks(written.markdown)["AC-11"]
    assert DIAGNOSTIC not in block and "linux x86_64" not in block
    code, lines, err = _gate(capsys, _pasted(tmp_path, block), written, git_repo.commit, "AC-11")
    assert code == 1
    assert lines == [f"AC-11: not qualifying under specgate.policy/1: {DIAGNOSTIC}"]
    assert err.count(HOST_LINE.format(run=written.path.name)) == 1, err


def test_the_gate_prints_the_true_reasons_whatever_a_pasted_summary_says(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary is outside every block: an author may edit what it states, but the blocks still
    match and the gate's own lines give the reasons it recomputed."""
    written = _diagnostic(git_repo)
    edited = written.markdown.replace(f"  - {DIAGNOSTIC}\n", "  - none that matter\n")
    code, lines, _ = _gate(capsys, _pasted(tmp_path, edited), written, git_repo.commit, "AC-10", "AC-11")
    assert code == 1 and lines == [f"AC-10, AC-11: not qualifying under specgate.policy/1: {DIAGNOSTIC}"]


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, written: WrittenBundle | Path, commit: str,
             block: str, ac_id: str) -> list[str]:
    """The gate's lines for ``block`` pasted alone, which must not match what was judged."""
    code, lines, _ = _gate(capsys, _pasted(tmp_path, block), written, commit, ac_id)
    assert code == 1
    assert any(line.startswith(f"{ac_id}: the block does not show what was judged") for line in lines), lines
    return lines


def _edited_block(written: WrittenBundle, ac_id: str, old: str, new: str) -> str:
    block = _blocks(written.markdown)[ac_id]
    assert old in block, block
    return block.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the run's reasons dropped from the count, or the line left out altogether
        ("1 reason: run 1's 1,", "0 reasons: run 1's 0,"),
        ("- Qualifying: no (specgate.policy/1), 1 reason: run 1's 1, in the summary (the gate prints them)",
         "- Qualifying: no (specgate.policy/1)"),
        # the run's reason altered into the block, in place of the count
        ("1 reason: run 1's 1, in the summary", "1 reason: a flaky lab switch, in the summary"),
        # claiming to qualify although the run has a reason
        ("**Verdict: PASSED · NOT QUALIFYING**", "**Verdict: PASSED · QUALIFYING**"),
        # the host named outright instead of the run's
        ("- Host: that of run 1", "- Host: Apple M4, 16 GB, macOS 15.1 (run 1"),
    ],
)
def test_a_block_whose_run_wide_facts_were_edited_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str
) -> None:
    written = _diagnostic(git_repo)
    _refused(capsys, tmp_path, written, git_repo.commit, _edited_block(written, "AC-11", old, new), "AC-11")


def test_a_block_claiming_to_qualify_with_its_qualifying_line_too_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = _diagnostic(git_repo)
    block = _edited_block(
        written, "AC-11",
        "- Qualifying: no (specgate.policy/1), 1 reason: run 1's 1, in the summary (the gate prints them)",
        "- Qualifying: yes (specgate.policy/1)",
    ).replace("PASSED · NOT QUALIFYING", "PASSED · QUALIFYING")
    _refused(capsys, tmp_path, written, git_repo.commit, block, "AC-11")


def test_a_measurement_edited_in_a_pasted_block_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    block = _edited_block(written, "AC-10", "| 1.52 x |", "| 1.92 x |")
    lines = _refused(capsys, tmp_path, written, git_repo.commit, block, "AC-10")
    assert "found '| `test_speedup` | median_speedup | 1.92 x" in lines[0]


def test_a_block_moved_to_another_ac_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AC-10's lines under AC-11's heading and digest line: AC-11's record renders other lines."""
    written = _diagnostic(git_repo)
    blocks = _blocks(written.markdown)
    ten, eleven = blocks["AC-10"].splitlines(), blocks["AC-11"].splitlines()
    moved = "\n".join([eleven[0], *ten[1:-1], eleven[-1]]) + "\n"
    _refused(capsys, tmp_path, written, git_repo.commit, moved, "AC-11")
    whole = blocks["AC-10"].replace("## AC-10 evidence", "## AC-11 evidence", 1)
    code, _, err = _gate(capsys, _pasted(tmp_path, whole), written, git_repo.commit, "AC-11")
    assert code == 2 and "digest line names AC-10" in err


def test_a_bundle_written_in_layout_1_still_verifies_and_its_pasted_blocks_are_accepted(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A format-2 bundle as main wrote it before layout 2: ``evidence.md`` self-contained blocks.
    The gate and ``render`` read its layout from it; its blocks pasted pass as they did."""
    written = _diagnostic(git_repo)
    layout_1 = _layout_1_markdown(written.path)
    assert markdown_layout(layout_1.encode()) == LAYOUT_PER_BLOCK
    assert layout_1.count(DIAGNOSTIC) == 2 and RUNS_INTRO not in layout_1
    _rewritten_markdown(written.path, layout_1)
    code, out, err = cli(capsys, configure_render_parser, run_render, str(written.path))
    assert (code, err, out) == (0, "", layout_1)
    code, lines, err = _gate(capsys, _pasted(tmp_path, _blocks(layout_1)["AC-10"]), written, git_repo.commit,
                             "AC-10")
    assert (code, lines) == (1, [f"AC-10: not qualifying under specgate.policy/1: {DIAGNOSTIC}"])
    assert err.count(HOST_LINE.format(run=written.path.name)) == 1
    qualifying = qualifying_bundle(git_repo.path, TEST_ENV)
    _rewritten_markdown(qualifying.path, _layout_1_markdown(qualifying.path))
    body = _pasted(tmp_path, (qualifying.path / MARKDOWN_NAME).read_text())
    code, lines, _ = _gate(capsys, body, qualifying, git_repo.commit, "AC-10", "AC-11")
    assert (code, lines) == (0, ["specgate gate: accepted AC-10, AC-11"])


def test_each_layout_is_accepted_only_exactly_as_rendered(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A block of the other layout than the bundle's ``evidence.md`` is refused, and an
    ``evidence.md`` that mixes them (layout 2's summary over layout 1's blocks) fails the bundle."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    layout_1 = _layout_1_markdown(written.path)
    _refused(capsys, tmp_path, written, git_repo.commit, _blocks(layout_1)["AC-10"], "AC-10")
    summary = written.markdown.split("\n## AC-10 evidence")[0]
    mixed = summary + "\n## AC-10 evidence" + layout_1.split("\n## AC-10 evidence", 1)[1]
    assert parse_pr_body(mixed, "evidence.md")
    _rewritten_markdown(written.path, mixed)
    code, lines, _ = _gate(capsys, _pasted(tmp_path, mixed), written, git_repo.commit, "AC-10", "AC-11")
    assert code == 1
    assert lines[0].endswith("evidence.md is not what its records render (edited after writing)"), lines


def test_render_names_the_signer_once_for_a_signed_bundle(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_evidence_signing import pem_key

    from pytest_specgate.evidence import build_redactor
    from pytest_specgate.evidence._markdown import NOT_SIGNED
    from pytest_specgate.evidence._signing import load_signing_key, sign_bundle

    written = qualifying_bundle(git_repo.path, TEST_ENV)
    assert written.markdown.count(NOT_SIGNED) == 1
    key = load_signing_key(pem_key(tmp_path, "desk").path, {})
    sign_bundle(written.path, key, build_redactor(None))
    code, out, _ = cli(capsys, configure_render_parser, run_render, str(written.path))
    signer = f"Signer of every AC here: {key.keyid} (claimed; the gate verifies)\n"
    assert code == 0 and out == written.markdown.replace(f"Signer of every AC here: {NOT_SIGNED}\n", signer)


def _two_ac_run(repo: Path, first: str, second: str, *, diagnostic: bool) -> WrittenBundle:
    from evidence_testkit import AC10, SyntheticRun

    run = SyntheticRun(repo, TEST_ENV, diagnostic=diagnostic)
    for ac_id in (first, second):
        run.run_test(f"acceptance/test_{ac_id.lower().replace('-', '')}.py::test_it", AC10 | {"id": ac_id})
    return run.finish()


def test_a_merged_bundle_states_each_runs_facts_once_and_each_block_names_its_own_run(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs merged (a diagnostic one of AC-10 and AC-11, a clean one of AC-12 and AC-13): the
    summary lists both, each block names the run its record came from, the clean run's blocks are
    accepted and the diagnostic run's rejected with its reason; a block naming the other run is
    refused."""
    from pytest_specgate.evidence.cli_commands import configure_merge_parser, run_merge

    diagnostic = _two_ac_run(git_repo.path, "AC-10", "AC-11", diagnostic=True)
    clean = _two_ac_run(git_repo.path, "AC-12", "AC-13", diagnostic=False)
    merged = tmp_path / "merged"
    code, _, err = cli(capsys, configure_merge_parser, run_merge, str(diagnostic.path), str(clean.path),
                       f"--out={merged}")
    assert (code, err) == (0, "")
    markdown = (merged / MARKDOWN_NAME).read_text()
    number = {run: 1 + sorted((diagnostic.path.name, clean.path.name)).index(run)
              for run in (diagnostic.path.name, clean.path.name)}
    runs = {line.split("`")[1]: line for line in markdown.splitlines() if line.startswith("- Run ")}
    host = "2 ACs): host linux x86_64, 24 GB, no GPU"
    assert runs[diagnostic.path.name].endswith(f"{host}; 1 reason not to qualify:")
    assert runs[clean.path.name].endswith(host)
    assert markdown.count(DIAGNOSTIC) == 1
    blocks = _blocks(markdown)
    for ac_id, run in (("AC-10", diagnostic), ("AC-11", diagnostic), ("AC-12", clean), ("AC-13", clean)):
        named = f"run {number[run.path.name]} (`{run.path.name}`)"
        assert f"- Host: that of {named}, in the summary" in blocks[ac_id]
    body = _pasted(tmp_path, blocks["AC-12"], blocks["AC-13"])
    code, lines, err = _gate(capsys, body, merged, git_repo.commit, "AC-12", "AC-13")
    assert (code, lines) == (0, ["specgate gate: accepted AC-12, AC-13"])
    assert err.count(HOST_LINE.format(run=clean.path.name)) == 1
    assert diagnostic.path.name not in err, "no block of the diagnostic run was pasted"
    body = _pasted(tmp_path, *blocks.values())
    _, _, err = _gate(capsys, body, merged, git_repo.commit, *blocks)
    assert [err.count(HOST_LINE.format(run=run.path.name)) for run in (diagnostic, clean)] == [1, 1]
    code, lines, _ = _gate(capsys, _pasted(tmp_path, blocks["AC-11"]), merged, git_repo.commit, "AC-11")
    assert (code, lines) == (1, [f"AC-11: not qualifying under specgate.policy/1: {DIAGNOSTIC}"])
    other = number[diagnostic.path.name]
    moved = blocks["AC-12"].replace(f"that of run {number[clean.path.name]} (`{clean.path.name}`)",
                                    f"that of run {other} (`{diagnostic.path.name}`)")
    _refused(capsys, tmp_path, merged, git_repo.commit, moved, "AC-12")
