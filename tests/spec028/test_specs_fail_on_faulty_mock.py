"""Each SPEC-028 FR spec fails when the mock engine violates exactly that requirement.

A spec that passes against a broken engine proves nothing; these runs aim the
specs at a mock with one violation switched on (``--specgate-engine-option``)
and check that the right spec fails, with a message naming its requirement.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

import pytest
from readme_run import REPO

SPECS = "acceptance/spec028"
FR_SPECS = {
    "FR-1": f"{SPECS}/test_spec028_fr1_disabled_mode.py",
    "FR-5": f"{SPECS}/test_spec028_fr5_greedy_gate.py",
    "FR-8": f"{SPECS}/test_spec028_fr8_telemetry.py",
    "FR-9.5": f"{SPECS}/test_spec028_fr9_5_warm_swap.py",
    "AC-9a": f"{SPECS}/test_spec028_ac9a_speculative_failure.py",
}


@dataclass(frozen=True)
class Violation:
    name: str
    breaks: tuple[str, ...]


VIOLATIONS = (
    Violation("corrupt-spec", ("FR-5", "AC-9a")),
    Violation("telemetry-off-by-one", ("FR-8",)),
    Violation("no-reset-on-swap", ("FR-9.5",)),
    Violation("gate-disabled", ("FR-5",)),
    Violation("disabled-drift", ("FR-1",)),
)
_FAILED_LINE = re.compile(r"^FAILED (\S+?)(?:\[| |$)", re.MULTILINE)


@dataclass(frozen=True)
class SpecRun:
    returncode: int
    output: str


def _command(paths: list[str], *options: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", "-rf", *options]


@pytest.fixture(scope="module")
def spec_runs() -> dict[str, SpecRun]:
    """The healthy run (key "") and one run per violation, started together to save time."""
    commands = {"": _command(sorted(FR_SPECS.values()))}
    for violation in VIOLATIONS:
        commands[violation.name] = _command(
            [FR_SPECS[requirement] for requirement in violation.breaks],
            "--specgate-engine-option", f'faults=["{violation.name}"]',
        )
    processes = {key: subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
                 for key, argv in commands.items()}
    runs: dict[str, SpecRun] = {}
    try:
        for key, process in processes.items():
            output, _ = process.communicate(timeout=300)
            runs[key] = SpecRun(process.returncode, output)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    return runs


def test_fr_specs_pass_on_a_healthy_mock(spec_runs: dict[str, SpecRun]) -> None:
    healthy = spec_runs[""]
    assert healthy.returncode == 0, healthy.output[-3000:]
    assert " passed" in healthy.output and "failed" not in healthy.output


@pytest.mark.parametrize("violation", VIOLATIONS, ids=lambda violation: violation.name)
def test_the_violated_requirement_fails_by_name(violation: Violation,
                                                spec_runs: dict[str, SpecRun]) -> None:
    run = spec_runs[violation.name]
    output = run.output
    assert run.returncode == 1, f"{violation.name}: specs did not fail:\n{output[-3000:]}"
    failed_files = {nodeid.split("::")[0] for nodeid in _FAILED_LINE.findall(output)}
    for requirement in violation.breaks:
        assert FR_SPECS[requirement] in failed_files, (
            f"{violation.name} should fail the {requirement} spec; failed: {sorted(failed_files)}"
        )
        assert re.search(rf"^(E\s+)?(AssertionError: )?{re.escape(requirement)}: ", output,
                         re.MULTILINE), (
            f"{violation.name}: no failure message names {requirement}:\n{output[-3000:]}"
        )
