"""No record string is printed as the key of another: a test named ``test_password`` and a
measurement, attachment, failure message or waiver reason ``Hunter2Hunter2`` are each clean alone
(redacted at capture, they stay as they are), and joined as ``test_password: Hunter2Hunter2`` they
read as a credential assignment to every rule that reads a line. Nothing re-reads ``evidence.md``
(the writer trusts the redacted fields), and the judge commands print lines their clean check
found clean past the output's line pass; so the rendered format itself must never join them so.

Every line of ``evidence.md``, of a block pasted into a PR body and of what ``render``, ``gate``,
``waivers``, ``merge`` and ``compare`` print with nothing redacting must be one the output's line
pass leaves as it is, while the planted value is still shown. Layout 1 (kept only to verify
bundles written before) joined them: the same check fails on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import AC10, AC11, TEST_ENV, GitRepo, SyntheticRun, rendered_in_layout
from test_cleared_output import REDACTOR, _commands
from test_speed_path_attacks import _printed_each_way

from pytest_specgate.evidence import WrittenBundle
from pytest_specgate.evidence._markdown import LAYOUT_PER_BLOCK

PLANTED = "Hunter2Hunter2"
OUTPUT_PASS = REDACTOR.secrets_only().text


def _read_as_assignments(text: str) -> list[str]:
    """The lines of ``text`` the output's line pass would change."""
    return [line for line in text.splitlines() if OUTPUT_PASS(line) != line]


def _hiding_the_planted_value(text: str) -> list[str]:
    """The lines of ``text`` showing the planted value that the output's line pass would hide: the
    value read as what a key-like string before it assigns."""
    return [line for line in text.splitlines() if PLANTED in line and PLANTED not in OUTPUT_PASS(line)]


def _planted_bundle(repo: Path) -> WrittenBundle:
    """AC-10: ``test_password`` measured ``Hunter2Hunter2`` below its bound and attached a file of
    that name, ``test_token`` failed saying it; AC-11 (``test_secret``) waived to ``PR-TOKEN``
    for that reason."""
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_password")
    recorder.measure(PLANTED, 1.1, "x", at_least=1.4)
    recorder.attach(PLANTED, b"boot ok\n")
    run.run_test("acceptance/test_ac10.py::test_password", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac10.py::test_token", AC10, outcome="failed", message=PLANTED)
    run.run_test("acceptance/test_ac11.py::test_secret", AC11 | {"waived_to": "PR-TOKEN", "reason": PLANTED})
    return run.finish()


def test_the_planted_strings_are_clean_alone_and_an_assignment_joined() -> None:
    """The premise: each string alone passes, the joins layout 1 and the gate's lines made do not."""
    for string in (PLANTED, "acceptance/test_ac10.py::test_password", "test_password", "PR-TOKEN"):
        assert REDACTOR.text(string) == string
    for joined in (f"waived → PR-TOKEN: {PLANTED}", f"test_password: {PLANTED}",
                   f"acceptance/test_ac10.py::test_password: {PLANTED} = 1.1 x is below at_least=1.4"):
        assert _read_as_assignments(joined) == [joined]


def test_evidence_md_and_its_pasted_blocks_hold_no_joined_assignment(git_repo: GitRepo) -> None:
    written = _planted_bundle(git_repo.path)
    markdown = (written.path / "evidence.md").read_text()
    assert markdown.count(PLANTED) >= 4, markdown
    assert _read_as_assignments(markdown) == []
    assert "  - failed: Hunter2Hunter2 (`test_token`)" in markdown
    assert f"  - [{PLANTED}](<attachments/" in markdown and ") (`test_password`)" in markdown
    assert f"- Waiver: waived → PR-TOKEN, because {PLANTED}" in markdown


def test_layout_1_joined_them_so_the_check_can_fail(git_repo: GitRepo) -> None:
    """The same records in layout 1: the waiver's gate was the key of its reason (and a test's
    name the key of its attachment's, which today's rules do not read through the backticks)."""
    layout_1 = rendered_in_layout(_planted_bundle(git_repo.path).path, LAYOUT_PER_BLOCK)
    assert _read_as_assignments(layout_1) == [f"- Waiver: waived → PR-TOKEN: {PLANTED}"]
    assert f"  - `test_password`: [{PLANTED}](<attachments/" in layout_1


@pytest.mark.parametrize("command", ["render", "gate", "waivers", "merge", "compare"])
def test_no_judge_command_prints_a_record_string_as_a_key(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """Each command with nothing redacting (the line pass a no-op, every record found clean), the
    whole ``evidence.md`` pasted for the gate: no line reads as an assignment, and the commands
    that show the planted value show it; as shipped they print the same."""
    monkeypatch.chdir(tmp_path)
    written = _planted_bundle(git_repo.path)
    arguments = _commands(written, git_repo, tmp_path)[command]
    printed = _printed_each_way(capsys, monkeypatch, arguments)
    code, unredacted = printed[0]
    assert _read_as_assignments(unredacted) == [], unredacted
    if command != "merge":  # merge refuses an --out it wrote already
        assert printed[2] == (code, unredacted)
    if command in ("render", "gate", "waivers"):
        assert PLANTED in unredacted, unredacted


def test_the_gate_on_one_pasted_block_prints_no_record_string_as_a_key(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    written = _planted_bundle(git_repo.path)
    block = "## AC-10 evidence" + written.markdown.split("## AC-10 evidence", 1)[1].split("## AC-11", 1)[0]
    assert _read_as_assignments(block) == [] and PLANTED in block
    body = tmp_path / "PR.md"
    body.write_text("## Summary\n\n" + block)
    arguments = ["gate", f"--pr-body={body}", f"--evidence={written.path}", f"--commit={git_repo.commit}"]
    code, unredacted = _printed_each_way(capsys, monkeypatch, arguments)[0]
    assert code == 1 and _read_as_assignments(unredacted) == [], unredacted
    nodeid = "acceptance/test_ac10.py::test_password"
    assert f"{PLANTED} = 1.1 x is below at_least=1.4 (test {nodeid})" in unredacted
    assert f"failed: {PLANTED} (test acceptance/test_ac10.py::test_token)" in unredacted


def test_the_step_summary_shows_a_tests_reason_whole_with_the_test_after_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$GITHUB_STEP_SUMMARY`` passes the redactor: a reason joined ``test_password: Hunter2…``
    lost its value there; worded with the test after it, the row shows it."""
    monkeypatch.chdir(tmp_path)
    written = _planted_bundle(git_repo.path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    arguments = _commands(written, git_repo, tmp_path)["gate"]
    code, _ = _printed_each_way(capsys, monkeypatch, arguments)[2]
    [row] = [line for line in summary.read_text().splitlines() if line.startswith("| AC-10 |")][-1:]
    assert code == 1
    assert f"{PLANTED} = 1.1 x is below at_least=1.4 (test acceptance/test_ac10.py::test_password)" in row
    assert f"failed: {PLANTED} (test acceptance/test_ac10.py::test_token)" in row


def test_an_engines_strings_are_never_joined_into_a_key_and_its_value(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend and a server name ``api_key:`` before a model and a version ``Hunter2Hunter2``
    (each a string of the record, clean alone): layout 1 joined them with a space in the summary
    (``api_key: Hunter2…``) and the engine line (``the server says: api_key: Hunter2…``). A string
    like ``api_key:`` makes whatever word follows it a value to the line pass (the policy's
    ``api_key: engine …: the record does not say…`` too), so what is checked is that the planted
    value never is."""
    monkeypatch.chdir(tmp_path)
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "api_key:", "model": PLANTED,
                          "identity": {"engine": "api_key:", "version": PLANTED}})
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    written = run.finish()
    assert REDACTOR.text("api_key:") == "api_key:"
    markdown = (written.path / "evidence.md").read_text()
    assert f"| api_key:, model {PLANTED} |" in markdown
    assert f"the server says: api_key: (version {PLANTED})" in markdown
    assert _hiding_the_planted_value(markdown) == []
    arguments = _commands(written, git_repo, tmp_path)["render"]
    code, unredacted = _printed_each_way(capsys, monkeypatch, arguments)[0]
    assert code == 0 and _hiding_the_planted_value(unredacted) == [] and PLANTED in unredacted
    hidden = _hiding_the_planted_value(rendered_in_layout(written.path, LAYOUT_PER_BLOCK))
    assert [line for line in hidden if f"| api_key: {PLANTED} |" in line], hidden
