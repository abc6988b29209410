"""Issue #28: which tests belong to an AC is decided at the trusted commit, not by the PR's tree.

Each route runs the real plugin on a PR commit that took a failing AC-1 test out of AC-1 (deleted,
relabelled, moved, hidden), then the real gate with ``--trusted-config=<base commit>``: the gate
takes the census of the base in a temporary worktree and names the test the run left out. The
honest PR (the base's tests untouched) gets no such line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from evidence_testkit import gate, git

from pytest_specgate.evidence import find_bundles, load_bundle
from pytest_specgate.evidence._base_members import BaseMembership, base_membership, membership_problems
from pytest_specgate.evidence._bundle import read_ac_record

PYPROJECT = """\
[tool.pytest.ini_options]
norecursedirs = [".*", "build"]

[tool.specgate]
spec_paths = ["acceptance"]

[tool.specgate.acs."AC-1"]
[tool.specgate.acs."AC-2"]
"""
PASSING = """
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-1")
def test_fast():
    pass
"""
FAILING = """
import pytest

@pytest.mark.ac("{ac}", spec="SPEC-1")
def test_slow():
    assert 1.1 >= 1.4
"""
SLOW_NODE = "acceptance/sub/test_slow.py::test_slow"


def _base(pytester: pytest.Pytester) -> str:
    pytester.makepyprojecttoml(PYPROJECT)
    (pytester.path / "acceptance" / "sub").mkdir(parents=True)
    (pytester.path / "acceptance" / "test_fast.py").write_text(PASSING)
    (pytester.path / "acceptance" / "sub" / "test_slow.py").write_text(FAILING.format(ac="AC-1"))
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\nPR.md\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "base")
    return git(pytester.path, "rev-parse", "HEAD")


def _pr_run_and_gate(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], base: str,
                     message: str) -> list[str]:
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "--allow-empty", "-m", message)
    head = git(pytester.path, "rev-parse", "HEAD")
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    (bundle,) = find_bundles(pytester.path / "out")
    body = pytester.path / "PR.md"
    body.write_text("## Summary\n\n" + (bundle.path / "evidence.md").read_text())
    capsys.readouterr()
    code, lines, _ = gate(capsys, f"--pr-body={body}", f"--evidence={bundle.path}", f"--commit={head}",
                          "--require=AC-1", f"--trusted-config={base}", "--allow-unsigned")
    assert code == 1, lines  # these runs never qualify (their host is the probe's, not signed)
    return lines


def _left_out(base: str) -> str:
    return (f"AC-1: {SLOW_NODE} is a test of AC-1 at the trusted commit {base[:12]} but not one of this "
            "run's AC-1 tests (deleted, relabelled, moved or hidden): land the change to AC-1's tests in "
            "the base branch first")


def test_the_honest_pr_holds_every_base_member(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _base(pytester)
    (pytester.path / "README.md").write_text("docs only\n")
    lines = _pr_run_and_gate(pytester, capsys, base, "docs")
    assert not any("at the trusted commit" in line for line in lines), lines
    assert any(line.startswith("AC-1: outcome is failed") for line in lines), lines


def _delete(root: Path) -> None:
    (root / "acceptance" / "sub" / "test_slow.py").unlink()


def _relabel(root: Path) -> None:
    (root / "acceptance" / "sub" / "test_slow.py").write_text(FAILING.format(ac="AC-2"))


def _move(root: Path) -> None:
    (root / "tools").mkdir()
    (root / "acceptance" / "sub" / "test_slow.py").rename(root / "tools" / "test_slow.py")


def _hide_with_pyvenv(root: Path) -> None:
    (root / "acceptance" / "sub" / "pyvenv.cfg").write_text("home = /usr\n")


def _hide_with_norecursedirs(root: Path) -> None:
    (root / "pyproject.toml").write_text(PYPROJECT.replace('[".*", "build"]', '[".*", "build", "sub"]'))


@pytest.mark.parametrize(
    "route", [_delete, _relabel, _move, _hide_with_pyvenv, _hide_with_norecursedirs],
    ids=["deleted", "relabelled", "moved", "hidden-pyvenv", "hidden-norecursedirs"],
)
def test_a_base_member_the_run_left_out_is_named(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], route: object
) -> None:
    base = _base(pytester)
    assert callable(route)
    route(pytester.path)
    lines = _pr_run_and_gate(pytester, capsys, base, route.__name__)
    assert _left_out(base) in lines, lines


def test_a_base_whose_census_fails_leaves_membership_unknown_and_rejects(pytester: pytest.Pytester) -> None:
    base = _base(pytester)
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    (bundle,) = find_bundles(pytester.path / "out")
    record = read_ac_record(load_bundle(bundle.path), "AC-1")
    (pytester.path / "acceptance" / "conftest.py").write_text("raise RuntimeError('base conftest broke')\n")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "broken base")
    broken = git(pytester.path, "rev-parse", "HEAD")
    membership = base_membership(pytester.path, broken, ("acceptance",))
    assert membership.problem is not None and "base conftest broke" in membership.problem
    honest = base_membership(pytester.path, base, ("acceptance",))
    assert honest.members("AC-1") == [SLOW_NODE, "acceptance/test_fast.py::test_fast"]
    assert git(pytester.path, "worktree", "list").count("\n") == 0, "the temporary worktree is removed"
    assert membership_problems(record, BaseMembership(base, problem="it broke")) == [
        f"which tests belong to AC-1 at the trusted commit {base[:12]} is unknown, so whether this run holds "
        "them all is unknown: it broke"]


def test_the_base_census_reads_the_config_file_pytest_reads(pytester: pytest.Pytester) -> None:
    """A pyproject.toml without a pytest section (packaging only) does not hide the base's tox.ini:
    its python_files decide which files hold AC tests, as they do for pytest run in the base."""
    (pytester.path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (pytester.path / "tox.ini").write_text("[pytest]\npython_files = check_*.py\n")
    (pytester.path / "acceptance").mkdir()
    (pytester.path / "acceptance" / "check_slow.py").write_text(FAILING.format(ac="AC-1"))
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "base")
    base = git(pytester.path, "rev-parse", "HEAD")
    membership = base_membership(pytester.path, base, ("acceptance",))
    assert membership.members("AC-1") == ["acceptance/check_slow.py::test_slow"], membership


def test_a_base_spec_the_gates_python_cannot_import_names_the_file(pytester: pytest.Pytester) -> None:
    _base(pytester)
    (pytester.path / "acceptance" / "test_engine.py").write_text("import not_installed_here\n")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "a spec needing a package the gate lacks")
    membership = base_membership(pytester.path, git(pytester.path, "rev-parse", "HEAD"), ("acceptance",))
    assert membership.problem == (
        "the census of acceptance at the trusted commit could not collect acceptance/test_engine.py (the "
        "gate's Python imports the base's conftests and spec modules: install what they import where the "
        "gate runs)")
