"""Fixtures shared by the evidence tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from evidence_testkit import GitRepo, make_git_repo


@pytest.fixture(autouse=True)
def _no_outer_step_summary(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Runs inside these tests must never append to the real CI job summary, nor take the outer CI's
    ``$CI`` (under which the gate requires signatures): a test that wants it sets it."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("CI", raising=False)
    yield


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return make_git_repo(tmp_path)
