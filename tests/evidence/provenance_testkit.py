"""Builders for provenance tests: a committed spec project, its one record, and the gate's verdict.

(A plain module, not a conftest, so the provenance tests import it by its unique name.)
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import ac_record, git

from pytest_specgate.evidence import find_bundles, schema_problems, verify_bundle
from pytest_specgate.evidence.cli_commands import configure_gate_parser, run_gate

SPEC = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""


def commit_project(pytester: pytest.Pytester, **files: str) -> str:
    """The spec (and ``files``) committed in a fresh repository, evidence folder ignored."""
    pytester.makepyfile(test_spec=SPEC)
    for name, text in files.items():
        (pytester.path / name).write_text(text)
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    return git(pytester.path, "rev-parse", "HEAD")


def only_record(directory: Path, ac_id: str = "AC-10") -> tuple[Path, dict[str, Any]]:
    bundles = find_bundles(directory)
    assert len(bundles) == 1 and verify_bundle(bundles[0]) == []
    record: dict[str, Any] = ac_record(bundles[0].path, ac_id)
    assert schema_problems(record) == []
    return bundles[0].path, record


def gate_lines(bundle: Path, commit: str, capsys: pytest.CaptureFixture[str], ac_id: str = "AC-10"
               ) -> tuple[int, list[str]]:
    body = bundle.parent / "PR.md"
    body.write_text((bundle / "evidence.md").read_text())
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    capsys.readouterr()
    code = run_gate(parser.parse_args(["--pr-body", str(body), "--evidence", str(bundle),
                                       "--require", ac_id, "--commit", commit]))
    return code, capsys.readouterr().out.splitlines()


def run_passing(pytester: pytest.Pytester, *options: str) -> tuple[Path, dict[str, Any]]:
    """Run the project's one passing spec with evidence in ``out/``: its bundle and AC-10 record."""
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", *options)
    result.assert_outcomes(passed=1)
    return only_record(pytester.path / "out")


def gate_rejection(bundle: Path, commit: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The gate's ``AC-10: not qualifying: ...`` lines for ``bundle``, one per reason (it must exit 1)."""
    code, lines = gate_lines(bundle, commit, capsys)
    assert code == 1, lines
    found = [line for line in lines if line.startswith("AC-10: not qualifying under specgate.policy/1: ")]
    assert found, lines
    return "\n".join(line.replace(" under specgate.policy/1", "") for line in found)
