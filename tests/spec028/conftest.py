"""One run of the README's first command, shared by the SPEC-028 bundle and plot tests."""

from __future__ import annotations

import subprocess
import sys

import pytest
from readme_run import REPO, BundleRun, readme_first_command, with_evidence_dir


@pytest.fixture(scope="session")
def readme_bundle(tmp_path_factory: pytest.TempPathFactory) -> BundleRun:
    evidence_dir = tmp_path_factory.mktemp("readme-evidence")
    argv = with_evidence_dir(readme_first_command(), evidence_dir)
    assert argv[0] == "pytest"
    completed = subprocess.run(
        [sys.executable, "-m", *argv, "-p", "no:cacheprovider"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    runs = sorted(path for path in evidence_dir.iterdir() if (path / "manifest.json").exists())
    assert runs, f"no bundle written under {evidence_dir}:\n{completed.stdout}\n{completed.stderr}"
    return BundleRun(argv, completed.returncode, completed.stdout + completed.stderr, runs[-1])
