"""Attacks on this session's fast paths, each compared with the slow path it skips.

The judge commands print lines built from records that ``records_read_clean`` found clean past
the output's line pass; the gate quotes a record's strings through ``shown_on_one_line``, which
turns a control character into an escape (``\\r`` becomes the two characters ``\\`` ``r``). The
line pass reads the escaped line (and ``render --json`` JSON's ``\\u001b``), so a token cut by a
control character, which no rule sees in the record, is one run again once shown, and the pass
hid it; the clean check must read what is shown, or the shortcut prints what the pass hid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import AC10, TEST_ENV, GitRepo, SyntheticRun, reseal_bundle
from test_cleared_output import REDACTOR, _commands, _specgate

from pytest_specgate import cli
from pytest_specgate.contracts.validation import shown_on_one_line
from pytest_specgate.evidence import WrittenBundle, load_bundle, read_records
from pytest_specgate.evidence.cli_commands import records_read_clean

HEX_SECRET = "2b00042f7481c7b056c4b410d28f33cf"
"""A secret of the scanners' corpus (tests/evidence/data/secret_corpus.json)."""
CONTROLS = {"CR": "\r", "ESC": "\x1b", "NUL": "\x00", "LINE SEPARATOR": "\u2028"}
CUT_BY_CONTROLS = [HEX_SECRET[:12] + control + HEX_SECRET[12:] for control in CONTROLS.values()]
"""The secret cut by one control character: each piece alone is no credential, and the rules
leave it as it is; shown on one line the control is an escape and the pass finds the secret."""


@pytest.mark.parametrize("cut", CUT_BY_CONTROLS, ids=list(CONTROLS))
def test_a_secret_cut_by_a_control_character_is_caught_once_shown(cut: str) -> None:
    """The premise: the record's string is left alone, its shown form is not."""
    output_pass = REDACTOR.secrets_only().text
    assert REDACTOR.text(cut) == cut
    assert output_pass(shown_on_one_line(cut)) != shown_on_one_line(cut)


def _printed_each_way(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                      arguments: list[str]) -> list[tuple[int, str]]:
    """Exit code and output of the command three ways: nothing redacting (the line pass a no-op,
    every record found clean), through the line pass alone (every record found unclean), and as
    shipped."""
    printed = []
    with monkeypatch.context() as unredacted:
        unredacted.setattr(cli, "_output_redactor", lambda: lambda line: line)
        unredacted.setattr("pytest_specgate.evidence.cli_commands.records_read_clean", lambda *_: True)
        printed.append(_specgate(capsys, *arguments))
    with monkeypatch.context() as line_pass:
        line_pass.setattr("pytest_specgate.evidence.cli_commands.records_read_clean", lambda *_: False)
        printed.append(_specgate(capsys, *arguments))
    printed.append(_specgate(capsys, *arguments))
    return printed


def _only_the_pass_hides(printed: list[tuple[int, str]], code: int, shown: str, hidden: str) -> None:
    """``shown`` is printed with nothing redacting; ``hidden`` neither through the line pass nor as
    shipped; each time the command exits ``code``."""
    (unredacted_code, unredacted), *redacted = printed
    assert unredacted_code == code and shown in unredacted, unredacted
    for redacted_code, output in redacted:
        assert redacted_code == code and hidden not in output, output


def _printed_whole_and_never_as_a_key(printed: list[tuple[int, str]], code: int, shown: str) -> None:
    """``shown`` (a test's name after what it gave) is printed with nothing redacting, no line of
    that output is one the line pass would change, and each way prints the same."""
    output_pass = REDACTOR.secrets_only().text
    (unredacted_code, unredacted), *_ = printed
    assert unredacted_code == code and shown in unredacted, unredacted
    assert all(output_pass(line) == line for line in unredacted.splitlines()), unredacted
    assert printed == [(code, unredacted)] * 3


def _bundle_with_message(repo: Path, message: str) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "mock", "model": "specgate-mock-target"})
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac10.py::test_failing", AC10, outcome="failed", message="assert 1 == 2")
    written = run.finish()

    def forge(record: dict[str, Any]) -> None:
        [failed] = [test for test in record["tests"] if test["outcome"] == "failed"]
        failed["message"] = message

    reseal_bundle(written.path, {"AC-10": forge})
    return written


@pytest.mark.parametrize("cut", CUT_BY_CONTROLS, ids=list(CONTROLS))
def test_the_clean_check_reads_a_string_as_the_gate_shows_it(git_repo: GitRepo, cut: str) -> None:
    written = _bundle_with_message(git_repo.path, f"failed with {cut}")
    record = read_records(load_bundle(written.path))["AC-10"]
    assert not records_read_clean(REDACTOR, [record])
    coloured = _bundle_with_message(git_repo.path, "assert 1 == 2: \x1b[31mexpected 2\x1b[0m\r\n")
    assert records_read_clean(REDACTOR, [read_records(load_bundle(coloured.path))["AC-10"]])


@pytest.mark.parametrize("command", ["gate", "gate trusted"])
@pytest.mark.parametrize("control", ["ESC", "NUL"])
def test_a_secret_cut_by_a_control_character_is_not_printed_by_the_gate(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str, control: str,
) -> None:
    """The failing test's message quotes the cut secret; the gate prints it among the reasons
    its record gives. Through the line pass (every record found unclean) it is hidden, so the
    cleared output must hide it too."""
    monkeypatch.chdir(tmp_path)
    cut = HEX_SECRET[:12] + CONTROLS[control] + HEX_SECRET[12:]
    written = _bundle_with_message(git_repo.path, f"failed with {cut}")
    arguments = _commands(written, git_repo, tmp_path)[command]
    tail = HEX_SECRET[12:]
    _only_the_pass_hides(_printed_each_way(capsys, monkeypatch, arguments), 1, tail, tail)


BASE64_SECRET = "Ks14IReLcYgADhoXk56ZzXI="
"""Another secret of the scanners' corpus: cut by ESC it is clean as the gate shows it too
(``\\x1b``), but not as JSON writes it (``\\u001b``)."""


@pytest.mark.parametrize("control", ["ESC", "NUL"])
def test_a_secret_cut_by_a_control_character_is_not_printed_by_render_json(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    control: str,
) -> None:
    """``render --json`` prints the failing test's message among the reasons, JSON-escaped: the
    line pass hid the secret there, so the cleared output must."""
    monkeypatch.chdir(tmp_path)
    cut = BASE64_SECRET[:12] + CONTROLS[control] + BASE64_SECRET[12:]
    assert REDACTOR.text(cut) == cut
    written = _bundle_with_message(git_repo.path, f"failed with {cut}")
    arguments = _commands(written, git_repo, tmp_path)["render json"]
    tail = BASE64_SECRET[12:]
    _only_the_pass_hides(_printed_each_way(capsys, monkeypatch, arguments), 0, tail, tail)


WAIVER_PASSWORD = "Hunter2Hunter2"
"""A value no rule takes for a credential alone; after a ``TOKEN:`` key the keyword rules do."""


@pytest.mark.parametrize("command", ["render", "render json"])
def test_a_waiver_target_is_never_the_key_of_its_reason(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """Layout 1's waiver line joined two record strings, ``waived → PR-TOKEN: Hunter2Hunter2``, a
    key and its value to the line pass, which hid the reason. Layout 2 words it ``waived →
    PR-TOKEN, because Hunter2Hunter2``: printed whole each way, no line of it a credential."""
    monkeypatch.chdir(tmp_path)
    assert REDACTOR.text("PR-TOKEN") == "PR-TOKEN" and REDACTOR.text(WAIVER_PASSWORD) == WAIVER_PASSWORD
    output_pass = REDACTOR.secrets_only().text
    assert output_pass(f"waived → PR-TOKEN: {WAIVER_PASSWORD}") != f"waived → PR-TOKEN: {WAIVER_PASSWORD}"
    run = SyntheticRun(git_repo.path, TEST_ENV)
    waived = AC10 | {"waived_to": "PR-TOKEN", "reason": WAIVER_PASSWORD}
    run.run_test("acceptance/test_ac10.py::test_speedup", waived)
    arguments = _commands(run.finish(), git_repo, tmp_path)[command]
    _printed_whole_and_never_as_a_key(_printed_each_way(capsys, monkeypatch, arguments), 0,
                                      f"PR-TOKEN, because {WAIVER_PASSWORD}")


@pytest.mark.parametrize("command", ["gate", "gate trusted"])
def test_a_node_id_is_never_the_key_of_a_measurement_name_in_the_gates_lines(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """The policy words a test's reason ``<node id>: <measurement> = 1.2 x is below …``: a test
    named ``test_password`` and a measurement named ``Hunter2Hunter2`` are clean apart, and a key
    and its value joined so (the line pass hid the name). The gate prints the reason first and
    the test after it; a forged record stating other reasons changes nothing."""
    monkeypatch.chdir(tmp_path)
    output_pass = REDACTOR.secrets_only().text
    assert output_pass(f"test_password: {WAIVER_PASSWORD} = 1.2") != f"test_password: {WAIVER_PASSWORD} = 1.2"
    run = SyntheticRun(git_repo.path, TEST_ENV)
    nodeid = "acceptance/test_ac10.py::test_password"
    recorder = run.recorder(nodeid)
    recorder.measure(WAIVER_PASSWORD, 1.2, "x", at_least=1.4)
    run.run_test(nodeid, AC10, recorder=recorder)
    written = run.finish()

    def forge(record: dict[str, Any]) -> None:
        record["not_qualifying_reasons"] = ["a bound was not met"]

    reseal_bundle(written.path, {"AC-10": forge})
    arguments = _commands(written, git_repo, tmp_path)[command]
    _printed_whole_and_never_as_a_key(_printed_each_way(capsys, monkeypatch, arguments), 1,
                                      f"{WAIVER_PASSWORD} = 1.2 x is below at_least=1.4 (test {nodeid})")


def test_a_node_id_is_never_the_key_of_an_attachment_name_in_a_rendered_block(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The policy words an attachment missing from the bundle ``attachment <node id>: <name> is
    missing …``; the block shows it as its test's reason, the test after it."""
    monkeypatch.chdir(tmp_path)
    run = SyntheticRun(git_repo.path, TEST_ENV)
    nodeid = "acceptance/test_ac10.py::test_password"
    recorder = run.recorder(nodeid)
    recorder.attach(WAIVER_PASSWORD, b"boot ok\n")
    run.run_test(nodeid, AC10, recorder=recorder)
    written = run.finish()

    def forge(record: dict[str, Any]) -> None:
        record["attachments"][0]["stored"] = False
        record["not_qualifying_reasons"] = ["an attachment is missing"]

    reseal_bundle(written.path, {"AC-10": forge})
    arguments = _commands(written, git_repo, tmp_path)["render"]
    shown = f"  - attachment {WAIVER_PASSWORD} is missing from the bundle (`test_password`)"
    _printed_whole_and_never_as_a_key(_printed_each_way(capsys, monkeypatch, arguments), 0, shown)
