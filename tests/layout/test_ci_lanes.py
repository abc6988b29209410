"""The real-engine lanes are defined once, in .ci/lanes, and .ci/run and tox both use them.

A known finding is deselected by node id; one that names no test any more would silently
deselect nothing, so each must name a test that exists.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LANES = REPO / ".ci" / "lanes"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the CI scripts are bash")


def _lanes(*arguments: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(["bash", str(LANES), *arguments], capture_output=True, text=True,
                            check=True, env=env, timeout=60)
    return result.stdout


def _run_arguments(step: str) -> list[str]:
    """The pytest arguments ``.ci/lanes run STEP`` uses (its interpreter replaced by echo)."""
    return _lanes("run", step, env={"PATH": "/usr/bin:/bin", "SPECGATE_LANE_PYTHON": "echo"}).split()


def _names_a_test(nodeid: str) -> bool:
    path, _, rest = nodeid.partition("::")
    function = re.sub(r"\[.*\]$", "", rest.split("::")[-1])
    source = REPO / path
    if not source.is_file():
        return False
    return re.search(rf"^def {re.escape(function)}\(", source.read_text(), re.M) is not None


@pytest.mark.parametrize("lane", ["vllm", "mlx"])
def test_every_known_finding_names_a_test_that_exists(lane: str) -> None:
    deselected = [arg.removeprefix("--deselect=") for arg in _run_arguments(f"{lane}-spec028")
                  if arg.startswith("--deselect=")]
    assert deselected
    assert [nodeid for nodeid in deselected if not _names_a_test(nodeid)] == []
    assert not _names_a_test("acceptance/spec028/test_spec028_fr5_greedy_gate.py::test_gone[n]")


def test_tox_runs_each_lane_step_through_the_lanes_script() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    for lane in ("vllm", "mlx"):
        listed = tox[f"testenv:real-{lane}"]["commands"].splitlines()
        commands = [line.strip() for line in listed if line.strip()]
        steps = _lanes("steps", lane).split()
        assert commands == [f"bash .ci/lanes run {step} {{posargs}}" for step in steps]


def test_ci_run_defines_no_lane_of_its_own() -> None:
    run = (REPO / ".ci" / "run").read_text()
    assert "--deselect" not in run and "-m pytest" not in run
    assert "SPECGATE_CI_SKIP_VLLM" in run and "SPECGATE_CI_BUDGET_S:-2400" in run


def test_ci_runs_the_plugin_hooks_on_the_oldest_and_the_newest_pytest_before_the_lanes() -> None:
    run = (REPO / ".ci" / "run").read_text()
    oldest = run.index("\ncounted_step pytest-oldest .venv/bin/tox -e pytest-oldest --\n")
    newest = run.index("\ncounted_step pytest-newest .venv/bin/tox -e pytest-newest --\n")
    assert oldest < newest < run.index("\n    run_lane vllm ")
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    minimum = re.search(r'"pytest>=([0-9.]+)"', (REPO / "pyproject.toml").read_text())
    assert minimum is not None
    assert f"pytest=={minimum[1]}.*" in tox["testenv:pytest-oldest"]["deps"].split()
    assert tox["testenv:pytest-newest"]["deps"].split()[0] == "pytest"
    assert tox["testenv:pytest-oldest"]["commands"] == tox["testenv:pytest-newest"]["commands"]
    tests = tox["pytest-hooks"]["tests"].split()
    assert "tests/layout/test_pytest_internals.py" in tests
    assert [path for path in tests if not (REPO / path).is_file()] == []


@pytest.mark.parametrize(("tests", "exit_code", "returncode"), [("1", 0, 0), ("0", 0, 1), ("1", 3, 3)])
def test_a_counted_step_fails_ci_when_its_command_fails_or_runs_no_test(
    tmp_path: Path, tests: str, exit_code: int, returncode: int
) -> None:
    """``counted_step`` as .ci/run defines it, on a command that writes a report of ``tests``
    tests and exits ``exit_code``."""
    run = (REPO / ".ci" / "run").read_text()
    functions = run[run.index("junit_counts() {"):run.index("\nlane_step() {")]
    command = f'printf \'<testsuite tests="{tests}"/>\' > out/ci/step.xml; exit {exit_code}'
    (tmp_path / "out" / "ci").mkdir(parents=True)
    step = subprocess.run(["bash", "-c", functions + '\ncd "$1"\ncounted_step step bash -c "$2"',
                           "bash", str(tmp_path), command],
                          capture_output=True, text=True, timeout=60, check=False)
    assert step.returncode == returncode, step.stderr
    assert ("[step] ran no test" in step.stderr) == (tests == "0"), step.stderr


AC10 = "acceptance/spec028/test_spec028_ac10_m4_canary.py"


@pytest.mark.parametrize("step", ["vllm-spec028", "mlx-spec028", "mlx-ac10"])
def test_no_lane_deselects_ac10(step: str) -> None:
    """AC-10 decides on every lane: its sustained window is sized in pairs and its paired run
    stops when its interval decides, so neither is deselected for being slow or noisy."""
    assert [arg for arg in _run_arguments(step) if arg.startswith("--deselect") and "ac10" in arg] == []


def test_the_mlx_lane_runs_ac10_once_in_a_step_of_its_own() -> None:
    """Deciding AC-10 through mlx_lm.server takes about 20 minutes: the rest of SPEC-028 does not
    wait on it, and CI's budget guard can drop that step alone."""
    assert _lanes("steps", "mlx").split()[-1] == "mlx-ac10"
    assert f"--ignore={AC10}" in _run_arguments("mlx-spec028")
    ac10 = _run_arguments("mlx-ac10")
    assert AC10 in ac10 and "--specgate-diagnostic" in ac10 and "--specgate-engine=mlx" in ac10
    assert int(_lanes("cost", "mlx-ac10")) > int(_lanes("cost", "mlx-spec028"))
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("run_lane mlx mlx-spec028 mlx-ac10")


def test_only_the_mlx_ac10_step_sets_diagnostic_bounds(tmp_path: Path) -> None:
    interpreter = tmp_path / "python"
    interpreter.write_text('#!/bin/sh\nenv\necho "$@"\n')
    interpreter.chmod(0o755)
    environment = {"PATH": "/usr/bin:/bin", "SPECGATE_LANE_PYTHON": str(interpreter)}
    shown = {step: _lanes("run", step, env=environment)
             for step in ("mlx-ac10", "mlx-spec028", "mlx-conformance", "vllm-spec028")}
    assert "SPECGATE_AC10_DIAGNOSTIC_BOUNDS=median=" in shown["mlx-ac10"]
    assert [step for step, text in shown.items() if "SPECGATE_AC10_DIAGNOSTIC_BOUNDS" in text] == ["mlx-ac10"]
