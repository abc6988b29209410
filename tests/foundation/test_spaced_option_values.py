"""An option value given with a space that names a path outside the project is refused.

pytest chooses the rootdir before plugin options exist, so ``--specgate-host-facts /x/f.json``
also reads ``/x/f.json`` as a test path: the run silently took another project's settings.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_specgate.examples import host_examples_dir
from pytest_specgate.selection.settings import spaced_outside_values

SPEC = """
import pytest

@pytest.mark.hardware(apple="M4")
def test_needs_m4():
    pass
"""


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    facts = tmp_path_factory.mktemp("elsewhere") / "m4.json"
    shutil.copy(host_examples_dir() / "m4-16gb.json", facts)
    return facts


def test_a_spaced_path_outside_the_project_is_a_usage_error(pytester: pytest.Pytester, outside: Path) -> None:
    pytester.makepyfile(test_spec=SPEC)
    result = pytester.runpytest_subprocess("--specgate-host-facts", str(outside))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --specgate-host-facts {outside}: give the value with '=' "
         f"(--specgate-host-facts={outside}): with a space pytest also reads {outside} as a test path "
         "when it picks the rootdir, and this run took its settings from *"]
    )


def test_the_same_value_with_equals_runs(pytester: pytest.Pytester, outside: Path) -> None:
    pytester.makepyfile(test_spec=SPEC)
    result = pytester.runpytest_subprocess(f"--specgate-host-facts={outside}")
    result.assert_outcomes(passed=1)


def test_spaced_values_inside_the_project_and_non_paths_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "facts.json").write_text("{}")
    args = ["--specgate-host-facts", "facts.json", "--specgate-require", "AC-10", "--specgate-evidence",
            "out", "-k", "/"]
    assert spaced_outside_values(args, tmp_path) == []
    assert spaced_outside_values(["--specgate-evidence", "/"], tmp_path) == [("--specgate-evidence", "/")]
