"""What the census (the second, full collection behind "complete means the whole AC") costs.

A generated project of 2,000 tests in 40 files (half of them carrying an ``ac`` marker) is
collected by pytest, and then the census is taken in the same process, as the evidence writer
does at the session's end. Two selections, alternated per cycle in fresh processes:

- ``whole``: the run collected every file, so the census collects none again (it reuses the
  run's own ``pytest_itemcollected``) and costs one pytest configuration and a directory walk;
- ``one-file``: the run collected one file of 40, so the census collects (and imports) the
  other 39.

The figures are the census's time over the run's own collection of the whole project (from the
``whole`` arm): after a whole run at most a quarter of it; after a one-file run, when the census
has to collect nearly everything, at most 1.1 times it (one collection plus a configuration).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import REPO_ROOT, Row, quiet_environment

FILES = 40
TESTS_PER_FILE = 50
GOAL_AFTER_WHOLE_RUN = 0.25
GOAL_AFTER_PARTIAL_RUN = 1.1
DRIVER = """
import json, sys, time
import pytest
from pytest_specgate.plugin.hookspecs import SpecgateHookSpecs
from pytest_specgate.plugin.census import RunCollection, take_census

class Timer:
    def __init__(self):
        self.run = RunCollection()
    def pytest_collection(self, session):
        self.started = time.perf_counter()
    def pytest_itemcollected(self, item):
        self.run.add(item)
    def pytest_collection_finish(self, session):
        self.collected = time.perf_counter() - self.started
        started = time.perf_counter()
        census = take_census(session.config, SpecgateHookSpecs, self.run)
        self.census = time.perf_counter() - started
        self.carriers = len(census.carriers)

timer = Timer()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[timer])
print("CENSUS " + json.dumps({"code": int(code), "collected": timer.collected, "census": timer.census,
                              "carriers": timer.carriers}))
"""


def _project(root: Path) -> None:
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["specs"]\n')
    specs = root / "specs"
    specs.mkdir()
    for index in range(FILES):
        body = ["import pytest\n"]
        for test in range(TESTS_PER_FILE):
            marker = f'@pytest.mark.ac("AC-{index}-{test % 5}")\n' if test % 2 == 0 else ""
            body.append(f"{marker}def test_{test}():\n    assert {test} >= 0\n")
        (specs / f"test_spec_{index:02d}.py").write_text("\n".join(body))


def _measure(root: Path, *selection: str) -> dict[str, float]:
    completed = subprocess.run([sys.executable, "-c", DRIVER, *selection], cwd=root, check=False,
                               env=quiet_environment({"PYTHONPATH": str(REPO_ROOT)}),
                               capture_output=True, text=True, timeout=600)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("CENSUS ")]
    if not lines:
        raise RuntimeError(f"census driver printed no result:\n{completed.stdout[-2000:]}"
                           f"{completed.stderr[-2000:]}")
    result: dict[str, float] = json.loads(lines[-1].removeprefix("CENSUS "))
    expected = FILES * TESTS_PER_FILE // 2
    if result["carriers"] != expected:
        raise RuntimeError(f"the census counted {result['carriers']} AC tests, expected {expected}")
    return result


def run(quick: bool) -> Row:
    cycles = 2 if quick else 5
    root = Path(tempfile.mkdtemp(prefix="specgate-census-"))
    try:
        _project(root)
        whole, one = [], []
        for _ in range(cycles):
            whole.append(_measure(root))
            one.append(_measure(root, "specs/test_spec_00.py"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    collect = statistics.median(result["collected"] for result in whole)
    census_whole = statistics.median(result["census"] for result in whole)
    census_one = statistics.median(result["census"] for result in one)
    after_whole, after_partial = census_whole / collect, census_one / collect
    detail = (f"{FILES * TESTS_PER_FILE} tests in {FILES} files, {cycles} cycles (medians): the run's "
              f"collection {collect:.3f}s; census after it {census_whole:.3f}s ({after_whole:.2f}x); "
              f"census after a one-file run {census_one:.3f}s ({after_partial:.2f}x, collects the "
              f"{FILES - 1} other files; goal <= {GOAL_AFTER_PARTIAL_RUN:.1f}x)")
    met = after_whole <= GOAL_AFTER_WHOLE_RUN and after_partial <= GOAL_AFTER_PARTIAL_RUN
    goal = f"<= {GOAL_AFTER_WHOLE_RUN:.2f}x after a whole run, <= {GOAL_AFTER_PARTIAL_RUN:.1f}x after 1 file"
    return Row("census", f"{after_whole:.2f}x / {after_partial:.2f}x", goal, met, detail)
