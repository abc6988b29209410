"""A record string of several lines is redacted as ``evidence.md`` shows it, on one line.

The redactor's keyword rules read one line: a failure message ``db password:\\n  Hunter2Hunter2``
(an assertion message naming what it tried, one value a line) is no assignment to them, and the record
keeps it. ``evidence.md`` shows a message in a reason line and a measurement's name and unit in a
table cell, each with its line breaks read as spaces (``_markdown._cell``): there it is
``db password: Hunter2Hunter2``. Nothing re-reads ``evidence.md`` (the writer trusts the redacted
fields), so the value reached the bundle and every block pasted from it. The judge commands'
clean check reads such strings flattened too (``records_read_clean``); the writer did not.

A string whose flattened form the redactor changes is stored as that form, redacted; any other
keeps its line breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import (
    AC10,
    AC11,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    cli,
    qualifying_bundle,
    reseal_bundle,
)

from pytest_specgate.contracts.census import Census
from pytest_specgate.evidence import WrittenBundle
from pytest_specgate.evidence._redact import build_redactor
from pytest_specgate.evidence.cli_commands import configure_merge_parser, run_merge

PLANTED = "Hunter2Hunter2"
MULTI_LINE = f"AssertionError: login refused\ndb password:\n{PLANTED}"
HONEST = "assert 1 == 2\n +  where 1 = len([0])"
LINE_PASS = build_redactor(None).secrets_only().text


def _bundle(repo: Path, message: str) -> WrittenBundle:
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure(message, 1.5, message, at_least=1.4)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac10.py::test_config", AC10, outcome="failed", message=message)
    run.run_test("acceptance/test_ac11.py::test_small", AC11, outcome="skipped", message=message)
    run.collector.census = Census((".",), run.carriers, problem=message)
    return run.finish()


def test_a_secret_the_markdown_puts_on_one_line_reaches_no_file_of_the_bundle(git_repo: GitRepo) -> None:
    written = _bundle(git_repo.path, MULTI_LINE)
    markdown = (written.path / "evidence.md").read_text()
    assert [line for line in markdown.splitlines() if LINE_PASS(line) != line] == []
    for path in written.path.rglob("*"):
        assert path.is_dir() or PLANTED.encode() not in path.read_bytes(), path
    assert "db password: <SECRET>" in markdown
    assert "the full collection of . failed: AssertionError: login refused db password: <SECRET>" in markdown


def test_a_message_of_several_lines_holding_no_secret_keeps_its_line_breaks(git_repo: GitRepo) -> None:
    written = _bundle(git_repo.path, HONEST)
    records = (written.path / "records.jsonl").read_text()
    assert records.count('assert 1 == 2\\n +  where 1 = len([0])') == 4, records
    assert 'assert 1 == 2\\n +  where 1 = len([0])' in (written.path / "run.json").read_text()
    assert "assert 1 == 2  +  where 1 = len([0])" in (written.path / "evidence.md").read_text()


def test_merge_redacts_a_record_of_an_older_bundle_as_evidence_md_shows_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bundle written before this redaction (resealed here: its record holds the two-line
    message as such a writer stored it) merged into a new one: merge redacts every string of it
    again, and must redact each the way the merged evidence.md shows it."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)

    def plant(record: dict[str, Any]) -> None:
        record["tests"][0]["outcome"] = "failed"
        record["tests"][0]["message"] = MULTI_LINE
        record["measurements"][0]["unit"] = MULTI_LINE

    reseal_bundle(written.path, {"AC-10": plant})
    assert PLANTED.encode() in (written.path / "records.jsonl").read_bytes()
    merged = tmp_path / "merged"
    code, _, err = cli(capsys, configure_merge_parser, run_merge, str(written.path), "--out", str(merged))
    assert (code, err) == (0, "")
    for path in merged.rglob("*"):
        assert path.is_dir() or PLANTED.encode() not in path.read_bytes(), path
    assert "db password: <SECRET>" in (merged / "evidence.md").read_text()
