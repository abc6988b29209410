"""A run stopped by a usage error (a bad marker, before any test ran) leaves no bundle: an empty one
would read as a run. A run that ran and failed still writes its bundle."""

from __future__ import annotations

import pytest

BAD_MARKER = """
import pytest

@pytest.mark.hardware(min_memory_gb="lots")
def test_x():
    pass
"""


def test_a_usage_error_leaves_no_bundle_and_no_new_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad=BAD_MARKER)
    result = pytester.runpytest("-p", "no:cacheprovider", "--specgate-evidence=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: test_bad.py::test_x: @pytest.mark.hardware: min_memory_gb must be*"])
    assert not (pytester.path / "out").exists()


def test_a_usage_error_leaves_an_existing_folder_as_it_was(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_good="def test_ok():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider", "--specgate-evidence=out").assert_outcomes(passed=1)
    before = sorted(path.relative_to(pytester.path) for path in (pytester.path / "out").rglob("*"))
    assert any(path.name == "manifest.json" for path in before)
    pytester.makepyfile(test_bad=BAD_MARKER)
    assert pytester.runpytest("-p", "no:cacheprovider", "--specgate-evidence=out").ret == 4
    assert sorted(path.relative_to(pytester.path) for path in (pytester.path / "out").rglob("*")) == before


def test_a_failing_run_still_writes_its_bundle(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fail="def test_no():\n    assert False\n")
    pytester.runpytest("-p", "no:cacheprovider", "--specgate-evidence=out").assert_outcomes(failed=1)
    assert len(list((pytester.path / "out").glob("*/manifest.json"))) == 1
