"""Issue #28: an AC's harness is what its run imported, and a PR that changes it cannot qualify the AC.

The run records every repository file it imported or collected (``source.imported_files``); the
gate, given the trusted commit, lists those that differ from it and rejects the AC for each
("land the harness change first"), unless the trusted ``sut_paths`` names the file as in-process
code under test. Each test here runs the real plugin on a PR commit and the real gate.
"""

from __future__ import annotations

import argparse
import json

import pytest
from evidence_testkit import git

from pytest_specgate.evidence import find_bundles, read_records
from pytest_specgate.evidence.cli_commands import configure_gate_parser, run_gate

PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["."]

[tool.specgate]
spec_paths = ["acceptance"]
{extra}
[tool.specgate.acs."AC-1"]
"""
SPEC = """
import pytest

from helpers.figures import SPEEDUP

@pytest.mark.ac("AC-1", spec="SPEC-1")
def test_speedup(evidence):
    evidence.measure("speedup", SPEEDUP, "x", at_least=1.4)
"""


def _base(pytester: pytest.Pytester, extra: str = "", spec: str = SPEC) -> str:
    pytester.makepyprojecttoml(PYPROJECT.format(extra=extra))
    for path, text in {"acceptance/test_ac1.py": spec, "helpers/__init__.py": "",
                       "helpers/figures.py": "SPEEDUP = 1.5\n", "docs/notes.md": "notes\n"}.items():
        (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / path).write_text(text)
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\nPR.md\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "base")
    return git(pytester.path, "rev-parse", "HEAD")


def _pr_gate(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], base: str,
             changes: dict[str, str]) -> tuple[list[str], dict[str, object]]:
    for path, text in changes.items():
        (pytester.path / path).write_text(text)
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "PR")
    head = git(pytester.path, "rev-parse", "HEAD")
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    (bundle,) = find_bundles(pytester.path / "out")
    record = read_records(bundle)["AC-1"].document
    assert "helpers/figures.py" in record["source"]["imported_files"], record["source"]
    assert "acceptance/test_ac1.py" in record["source"]["imported_files"]
    body = pytester.path / "PR.md"
    body.write_text((bundle.path / "evidence.md").read_text())
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    arguments = [f"--pr-body={body}", f"--evidence={bundle.path}", f"--commit={head}", "--require=AC-1",
                 f"--trusted-config={base}", "--allow-unsigned"]
    capsys.readouterr()
    run_gate(parser.parse_args(arguments))
    lines = capsys.readouterr().out.splitlines()
    run_gate(parser.parse_args([*arguments, "--json"]))
    (judged,) = json.loads(capsys.readouterr().out)["acs"]
    return lines, judged


def _blocked(path: str, base: str) -> str:
    return (f"AC-1: harness file {path} differs from the trusted commit {base[:12]} and this run imported or "
            "collected it: land the harness change first (or name it in the trusted [tool.specgate] "
            "sut_paths if it is in-process code under test)")


def test_a_changed_helper_outside_the_spec_folder_blocks_the_ac(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's route: only a package the spec imports changed; the old list said "none"."""
    base = _base(pytester)
    lines, judged = _pr_gate(pytester, capsys, base, {"helpers/figures.py": "SPEEDUP = 2.41\n"})
    assert _blocked("helpers/figures.py", base) in lines, lines
    assert f"AC-1: harness files changed since {base}: helpers/figures.py" in lines
    assert (judged["harness_changed"], judged["sut_changed"]) == (["helpers/figures.py"], [])


SELF_REMOVING_SPEC = """
import sys

import pytest

from helpers.figures import SPEEDUP

# The helper leaves sys.modules once its figure is read: the import watcher still saw it.
del sys.modules["helpers.figures"], sys.modules["helpers"]

@pytest.mark.ac("AC-1", spec="SPEC-1")
def test_speedup(evidence):
    evidence.measure("speedup", SPEEDUP, "x", at_least=1.4)
"""


def test_a_changed_helper_that_removed_itself_from_sys_modules_still_blocks_the_ac(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The harness is what the run imported, not what sys.modules holds at the end."""
    base = _base(pytester, spec=SELF_REMOVING_SPEC)
    lines, judged = _pr_gate(pytester, capsys, base, {"helpers/figures.py": "SPEEDUP = 2.41\n"})
    assert _blocked("helpers/figures.py", base) in lines, lines
    assert judged["harness_changed"] == ["helpers/figures.py"]


def test_a_file_the_trusted_config_names_as_code_under_test_is_listed_not_blocking(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _base(pytester, 'sut_paths = ["helpers/*.py"]\n')
    lines, judged = _pr_gate(pytester, capsys, base, {"helpers/figures.py": "SPEEDUP = 2.41\n"})
    assert not any(line.startswith("AC-1: harness file ") for line in lines), lines
    assert f"AC-1: harness files changed since {base}: helpers/figures.py (system under test)" in lines
    assert lines[-1] == "specgate gate: accepted AC-1", "an honest run with a changed SUT file qualifies"
    assert (judged["harness_changed"], judged["sut_changed"]) == ([], ["helpers/figures.py"])


@pytest.mark.parametrize("path", ["acceptance/test_ac1.py", "acceptance/conftest.py", "pyproject.toml"])
def test_a_broad_sut_glob_never_exempts_the_spec_a_conftest_or_the_ini(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    base = _base(pytester, 'sut_paths = ["*"]\n')
    old = (pytester.path / path).read_text() if (pytester.path / path).exists() else ""
    lines, judged = _pr_gate(pytester, capsys, base, {path: old + "\n# edited\n"})
    assert _blocked(path, base) in lines, lines
    assert path in judged["harness_changed"] and path not in judged["sut_changed"], judged


def test_a_pr_that_changes_neither_imports_nor_spec_files_has_no_harness_change(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _base(pytester)
    lines, judged = _pr_gate(pytester, capsys, base, {"docs/notes.md": "new notes\n"})
    assert not any(line.startswith("AC-1: harness file ") for line in lines), lines
    assert f"AC-1: harness files changed since {base}: none" in lines
    assert lines[-1] == "specgate gate: accepted AC-1", lines
    assert judged["harness_changed"] == []


@pytest.mark.parametrize("path", ["pyproject.toml", "acceptance/test_ac1.py"])
def test_the_ini_file_and_the_spec_file_are_harness(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    base = _base(pytester)
    lines, _ = _pr_gate(pytester, capsys, base, {path: (pytester.path / path).read_text() + "\n# edited\n"})
    assert _blocked(path, base) in lines, lines


@pytest.mark.parametrize(("path", "text"), [(".pytest.ini", "[pytest]\npythonpath = .\n"),
                                            ("pytest.toml", '[pytest]\npythonpath = ["."]\n'),
                                            ("setup.py", "from setuptools import setup\n\nsetup()\n")])
def test_a_config_file_the_pr_adds_is_harness(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], path: str, text: str
) -> None:
    """pytest prefers .pytest.ini (and, from pytest 9, pytest.toml) to pyproject.toml: a PR that adds
    one replaces the run's settings without editing the base's configuration. ``pip install -e .``
    runs a setup.py before pytest starts: it could rewrite an installed file and its RECORD line
    together, which run provenance would then take as the distribution's own."""
    base = _base(pytester)
    lines, _ = _pr_gate(pytester, capsys, base, {path: text})
    assert _blocked(path, base) in lines, lines
