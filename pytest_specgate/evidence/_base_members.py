"""Which tests belong to each AC at the trusted commit, and the AC's tests a run left out.

A run's own census counts the PR tree's members, so a failing AC-10 test the PR deletes,
relabels to another AC, moves out of the spec paths or hides (``pyvenv.cfg`` in its folder, a
``norecursedirs`` pattern) leaves no trace in the record. The gate therefore takes a census of
the trusted commit itself: the commit is checked out in a temporary ``git worktree`` and
collected in a process of its own (``python -m pytest_specgate.plugin.base_census``) with the
code the gate runs, under the base's own ini file and spec paths. Every test that carries an AC
there must be among that AC's tests in the record, under the same node id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_specgate.contracts.census import BASE_CENSUS_MODULE, BASE_CENSUS_PREFIX
from pytest_specgate.evidence._acrecord import AcRecord

GIT_TIMEOUT_S = 60.0
CENSUS_TIMEOUT_S = 600.0
_RUN_ONLY_ENVIRONMENT = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")
"""Settings of whoever runs the gate that would change what the base census collects."""


@dataclass(frozen=True)
class BaseMembership:
    """The tests carrying each AC at ``commit`` (node id -> AC id), or why that is unknown."""

    commit: str
    carriers: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None

    def members(self, ac_id: str) -> list[str]:
        return sorted(nodeid for nodeid, carried in self.carriers.items() if carried == ac_id)


def base_membership(repo: Path, commit: str, spec_paths: Sequence[str]) -> BaseMembership:
    """The census of ``commit`` (checked out in a temporary worktree of ``repo``, removed after)."""
    with tempfile.TemporaryDirectory(prefix="specgate-base-") as scratch:
        tree = Path(scratch) / "base"
        added = _git(["worktree", "add", "--detach", "--quiet", str(tree), commit], repo)
        if added is not None:
            return BaseMembership(commit, problem=f"cannot check out the trusted commit: {added}")
        try:
            return _collect(tree, commit, spec_paths)
        finally:
            _git(["worktree", "remove", "--force", str(tree)], repo)


def _collect(tree: Path, commit: str, spec_paths: Sequence[str]) -> BaseMembership:
    environment = {name: value for name, value in os.environ.items() if name not in _RUN_ONLY_ENVIRONMENT}
    # -P: the tree's own folder is not put first on sys.path, so the census runs the gate's specgate.
    argv = [sys.executable, "-P", "-m", BASE_CENSUS_MODULE, str(tree), *spec_paths]
    try:
        completed = subprocess.run(argv, cwd=tree, capture_output=True, text=True, env=environment,
                                   timeout=CENSUS_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return BaseMembership(commit, problem=f"the census of the trusted commit did not finish: {error}")
    lines = [line for line in completed.stdout.splitlines() if line.startswith(BASE_CENSUS_PREFIX)]
    if completed.returncode != 0 or not lines:
        said = (completed.stderr.strip().splitlines() or [f"exit status {completed.returncode}"])[-1]
        return BaseMembership(commit, problem=f"the census of the trusted commit failed: {said}")
    result = json.loads(lines[-1].removeprefix(BASE_CENSUS_PREFIX))
    where = ", ".join(result["testpaths"]) or "the rootdir"
    if result["problem"] is not None:
        return BaseMembership(commit, problem=f"the census of {where} at the trusted commit failed: "
                                              f"{result['problem']}")
    if result["errors"]:
        return BaseMembership(commit, problem=f"the census of {where} at the trusted commit could not "
                                              f"collect {', '.join(result['errors'])} (the gate's Python "
                                              "imports the base's conftests and spec modules: install what "
                                              "they import where the gate runs)")
    return BaseMembership(commit, carriers=dict(result["carriers"]))


def _git(arguments: list[str], repo: Path) -> str | None:
    """None when ``git ARGUMENTS`` succeeded, else git's last line of complaint."""
    try:
        completed = subprocess.run(["git", *arguments], cwd=repo, capture_output=True, text=True,
                                   timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot run git: {error}"
    if completed.returncode == 0:
        return None
    said = completed.stderr.strip().splitlines()
    return said[-1] if said else f"git {arguments[0]} exited {completed.returncode}"


def membership_problems(record: AcRecord, membership: BaseMembership) -> list[str]:
    """Each test of the AC at the trusted commit that is not among the record's tests of it."""
    ac_id, short = record.ac.id, membership.commit[:12]
    if membership.problem is not None:
        return [f"which tests belong to {ac_id} at the trusted commit {short} is unknown, so whether this "
                f"run holds them all is unknown: {membership.problem}"]
    ran = {test.nodeid for test in record.tests}
    return [f"{nodeid} is a test of {ac_id} at the trusted commit {short} but not one of this run's "
            f"{ac_id} tests (deleted, relabelled, moved or hidden): land the change to {ac_id}'s tests "
            "in the base branch first"
            for nodeid in membership.members(ac_id) if nodeid not in ran]
