"""An AC's spec and title are never joined as a key and its value in evidence.md.

Layout 1's ``- Criterion: SPEC TITLE`` put the spec right before the title: a spec
``db_password:`` (or ``--token``) and a title ``Hunter2Hunter2x`` are each clean, redacted alone
where the marker's text entered, and joined they read as a credential to every rule that reads a
line; nothing re-reads ``evidence.md``, so the value reached the bundle and every pasted block.
Layout 2 shows the title, then the spec after a word of its own: ``TITLE (spec SPEC)``.
"""

from __future__ import annotations

import json

import pytest
from evidence_testkit import AC10, TEST_ENV, GitRepo, SyntheticRun, cli, rendered_in_layout

from pytest_specgate.evidence import load_bundle, read_records
from pytest_specgate.evidence._bundle import MANIFEST_NAME, MARKDOWN_NAME, file_entry
from pytest_specgate.evidence._jsonio import pretty_json
from pytest_specgate.evidence._markdown import LAYOUT_PER_BLOCK
from pytest_specgate.evidence._redact import build_redactor
from pytest_specgate.evidence.cli_commands import configure_render_parser, records_read_clean, run_render

REDACTOR = build_redactor(None)
LINE_PASS = REDACTOR.secrets_only().text
VALUE = "Hunter2Hunter2x"


@pytest.mark.parametrize(
    ("spec", "title"), [("db_password:", VALUE), ("--token", VALUE), (VALUE, "db_password:")]
)
def test_the_spec_is_never_the_key_of_the_title(git_repo: GitRepo, spec: str, title: str) -> None:
    assert REDACTOR.text(spec) == spec and REDACTOR.text(title) == title
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10 | {"spec": spec, "title": title})
    written = run.finish()
    assert f"- Criterion: {title} (spec {spec})" in written.markdown.splitlines()
    assert [line for line in written.markdown.splitlines() if LINE_PASS(line) != line] == []
    layout_1 = rendered_in_layout(written.path, LAYOUT_PER_BLOCK)
    joined = f"- Criterion: {spec} {title}"
    assert joined in layout_1.splitlines() and (LINE_PASS(joined) != joined or spec == VALUE)


def test_a_spec_or_a_title_alone_is_shown_as_it_is(git_repo: GitRepo) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10 | {"spec": None, "title": "canary"})
    run.run_test("acceptance/test_ac11.py::test_small", {"id": "AC-11", "spec": "SPEC-028", "title": None})
    markdown = run.finish().markdown
    assert "- Criterion: canary\n" in markdown and "- Criterion: spec SPEC-028\n" in markdown


def test_render_of_a_layout_1_bundle_still_redacts_the_joined_line(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bundle written in layout 1 still verifies and renders as written: the judge's clean
    check reads the spec and title as that layout joins them, so render hides the value."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10 | {"spec": "password:", "title": "hunter2x"})
    bundle = run.finish().path
    layout_1 = rendered_in_layout(bundle, LAYOUT_PER_BLOCK)
    assert "- Criterion: password: hunter2x" in layout_1.splitlines()
    (bundle / MARKDOWN_NAME).write_text(layout_1)
    manifest = json.loads((bundle / MANIFEST_NAME).read_text())
    manifest["files"][MARKDOWN_NAME] = file_entry(layout_1.encode()).to_dict()
    (bundle / MANIFEST_NAME).write_text(pretty_json(manifest))
    code, shown, _ = cli(capsys, configure_render_parser, run_render, str(bundle))
    assert code == 0 and "password: <" in shown and "hunter2x" not in shown


def test_the_judges_clean_check_reads_the_criterion_line_as_layout_2_shows_it(git_repo: GitRepo) -> None:
    """A title ``--token`` and a spec ``Hunter2Hunter2x``: each clean, and so is layout 1's join
    ``Hunter2Hunter2x --token``; layout 2's ``--token (spec Hunter2Hunter2x)`` is a flag and its
    value to the line pass, so the record is not read clean and the output takes the pass."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10 | {"spec": VALUE, "title": "--token"})
    records = read_records(load_bundle(run.finish().path))
    line = "- Criterion: --token (spec Hunter2Hunter2x)"
    assert LINE_PASS(line) != line
    assert not records_read_clean(REDACTOR, records.values())


def test_render_of_a_layout_1_bundle_hides_a_value_its_engine_line_joins(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Layout 1 joins an engine's backend and model, and the server's name and version, with a
    space (``api_key: Hunter2…``): each string is clean alone, so the judge's clean check must read
    those joins too, or render prints a layout-1 bundle's lines past the line pass as they are."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "mock", "model": "tiny:target",
                          "identity": {"engine": "api_key:", "version": VALUE}})
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    bundle = run.finish().path
    layout_1 = rendered_in_layout(bundle, LAYOUT_PER_BLOCK)
    assert f"api_key: {VALUE}" in layout_1
    (bundle / MARKDOWN_NAME).write_text(layout_1)
    manifest = json.loads((bundle / MANIFEST_NAME).read_text())
    manifest["files"][MARKDOWN_NAME] = file_entry(layout_1.encode()).to_dict()
    (bundle / MANIFEST_NAME).write_text(pretty_json(manifest))
    code, shown, _ = cli(capsys, configure_render_parser, run_render, str(bundle))
    assert code == 0 and f"api_key: {VALUE}" not in shown and "api_key: <" in shown
