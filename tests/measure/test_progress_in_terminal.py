"""Long steps show progress through pytest's terminal reporter: after the first few seconds, on
lines of their own, with pytest's file line resumed after them; quiet under -q and on workers."""

from __future__ import annotations

import pytest

SPEC = """
import time

from pytest_specgate.contracts.progress import progress_for


def test_long_step():
    step = progress_for("demo step", 4.0)
    assert step is not None
    step.update(2, 1.5)
    time.sleep(3.2)
    step.update(4, 1.6)
    step.finish(6, 1.7)


def test_after():
    pass
"""


def test_a_long_step_writes_lines_and_hands_the_file_line_back(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_progress_demo=SPEC)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "test_progress_demo.py ",
        "specgate: demo step: 3s/4s elapsed, 4 requests, speedup 1.60x",
        "specgate: demo step: 3s/4s elapsed, 6 requests, speedup 1.70x (done)",
        "test_progress_demo.py ..*[[]100%[]]",
    ])


def test_quiet_under_q_and_silent_without_a_terminal_on_workers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_progress_demo=SPEC.replace("assert step is not None\n", "if step is None:\n"
                                                        "        return\n"))
    quiet = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "-q")
    quiet.assert_outcomes(passed=2)
    assert "specgate: demo step" not in quiet.stdout.str()
    worker = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1")
    worker.assert_outcomes(passed=2)
    assert "specgate: demo step" not in worker.stdout.str()


BUILD_SPEC = """
import functools
import itertools

import pytest

from pytest_specgate.fetching.tiny_models import tiny_model_pair
from pytest_specgate.measure import progress


def test_build(tmp_path, monkeypatch):
    ticks = itertools.count(0.0, 2.0)
    monkeypatch.setattr(progress, "ProgressReporter",
                        functools.partial(progress.ProgressReporter, clock=lambda: next(ticks)))
    tiny_model_pair(tmp_path)
"""


def test_a_tiny_model_build_shows_progress_by_default_and_none_under_q(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_build_demo=BUILD_SPEC)
    # subprocesses: numpy, loaded by the build, cannot be loaded twice in one process
    shown = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    shown.assert_outcomes(passed=1)
    shown.stdout.fnmatch_lines([
        "test_build_demo.py ",
        "specgate: tiny model build: 10s elapsed",
        "specgate: tiny model build: done in 14s",
        "test_build_demo.py .*[[]100%[]]",
    ])
    quiet = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-q")
    quiet.assert_outcomes(passed=1)
    assert "specgate: tiny model build" not in quiet.stdout.str()
