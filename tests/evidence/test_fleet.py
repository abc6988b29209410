"""The GitHub Actions fleet flow, minus GitHub: three hosts' runs, merged, gated by the composite action.

Each host is simulated with a shipped example (``--specgate-host-facts=``), so this checks the
flow and the per-AC report, not acceptance: simulated hosts are not the real machines.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from evidence_testkit import ac_record, git

from pytest_specgate.cli import main
from pytest_specgate.evidence import find_bundles, verify_bundle
from pytest_specgate.examples import host_examples_dir

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / ".github" / "actions" / "specgate-gate" / "action.yml"
FLEET = REPO / "docs" / "examples" / "fleet.yml"
HOSTS = {"m4-16gb": "m4-16gb", "m1-8gb-air": "m1-8gb-air-macos26", "gb10": "gb10"}
AC_OF_PROFILE = {"m4-16gb": "AC-10", "m1-8gb-air": "AC-11", "gb10": "AC-12"}


def _project_host_profiles() -> str:
    """This project's own [tool.specgate.hosts] profiles, for the simulated fleet's pyproject."""
    hosts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["specgate"]["hosts"]
    lines = []
    for name, rows in hosts.items():
        lines.append(f"[tool.specgate.hosts.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in rows.items()]
    for profile, ac in AC_OF_PROFILE.items():
        lines += [f'[tool.specgate.acs."{ac}"]', f'profile = "{profile}"']
    return "\n".join(lines) + "\n"


SPECS = "import pytest\n" + "".join(
    f"""
@pytest.mark.ac("{ac}", spec="SPEC-028")
@pytest.mark.hardware("{profile}")
def test_{ac.replace("-", "_").lower()}(evidence):
    evidence.measure("speedup", 1.5, "x", at_least=1.4)
"""
    for profile, ac in AC_OF_PROFILE.items()
)


def _gate_script() -> str:
    """The composite action's `specgate gate` step, as GitHub would run it."""
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load(ACTION.read_text())
    (step,) = [step for step in action["runs"]["steps"] if step["name"] == "specgate gate"]
    script: str = step["run"]
    return script


@pytest.fixture
def fleet_bundles(pytester: pytest.Pytester) -> dict[str, Path]:
    """One run per host of the same commit, each writing its own evidence folder."""
    pytester.makefile(".toml", pyproject=_project_host_profiles())
    pytester.makepyfile(test_fleet_specs=SPECS)
    (pytester.path / ".gitignore").write_text("__pycache__/\nevidence-*/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    folders = {}
    for profile, example in HOSTS.items():
        folder = pytester.path / f"evidence-{profile}"
        result = pytester.runpytest(f"--specgate-host-facts={host_examples_dir() / example}.json",
                                    f"--specgate-evidence={folder}")
        result.assert_outcomes(passed=1, skipped=2)
        (bundle,) = find_bundles(folder)
        folders[profile] = bundle.path
    return folders


def test_three_hosts_merge_and_the_action_gates_each_ac(
    fleet_bundles: dict[str, Path], pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    merged = pytester.path / "merged"
    assert main(["merge", f"--out={merged}", *(str(path.parent) for path in fleet_bundles.values())]) == 0
    out = capsys.readouterr().out.splitlines()
    for profile, ac in AC_OF_PROFILE.items():
        kept = fleet_bundles[profile].name
        pattern = f"{ac}: kept run {kept} (passed, *) over run * (skipped, *), run * (skipped, *): *"
        assert any(fnmatch.fnmatchcase(line, pattern) for line in out), (pattern, out)
        record = ac_record(merged, ac)
        assert record["run"]["id"] == kept
    (bundle,) = find_bundles(merged)
    assert verify_bundle(bundle) == []
    assert {"statement.intoto.json", "receipt.json", "merge.json", "evidence.md"} <= set(bundle.files)

    event = pytester.path / "event.json"
    body = "## Fleet run\r\n\r\n" + (merged / "evidence.md").read_text().replace("\n", "\r\n")
    event.write_text(json.dumps({"pull_request": {"number": 12, "body": body}}))
    commit = git(pytester.path, "rev-parse", "HEAD")
    branch = git(pytester.path, "branch", "--show-current")
    git(pytester.path, "init", "-q", "--bare", "origin.git")
    git(pytester.path, "push", "-q", "origin.git", branch)
    git(pytester.path, "remote", "add", "origin", str(pytester.path / "origin.git"))
    gated = subprocess.run(
        ["bash", "-c", _gate_script()], capture_output=True, text=True, check=False, cwd=pytester.path,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
             "GITHUB_EVENT_PATH": str(event), "SPECGATE_EVIDENCE": str(merged),
             "SPECGATE_REQUIRE": "AC-10 AC-11 AC-12", "SPECGATE_COMMIT": commit, "SPECGATE_GATE": "",
             "SPECGATE_TRUSTED_CONFIG": "", "SPECGATE_BASE_SHA": commit, "SPECGATE_ALLOW_UNSIGNED": "false"},
    )
    lines = gated.stdout.splitlines()
    assert lines[0] == (f"+ specgate gate --pr-body-from-event --evidence={merged} --require=AC-10 "
                        f"--require=AC-11 --require=AC-12 --commit={commit} "
                        f"--trusted-config={commit}")
    trusted = f"{commit}:pyproject.toml ({commit[:12]})"
    assert gated.stderr.splitlines()[-1] == (
        f"specgate gate: trusted config {trusted}; signatures not checked: no trust policy in {trusted}"
    ), "the action trusts the base branch it fetched, not the checkout"
    assert lines[1] == f"specgate gate: policy specgate.policy/1; commit {commit} (from --commit)"
    harness = [f"AC-10, AC-11, AC-12: harness files changed since {commit}: none"]
    if gated.returncode == 0:
        assert lines[2:] == [*harness, "specgate gate: accepted AC-10, AC-11, AC-12"]
    else:
        assert gated.returncode == 1
        assert lines[-1:] == harness
        problems = lines[2:-1]
        named = {ac for line in problems for ac in line.split(":")[0].split(", ")}
        assert named == set(AC_OF_PROFILE.values())
        judged = ("not qualifying under specgate.policy/1: ", "outcome is ", "not qualifying under the")
        assert all(line.split(": ", 1)[1].startswith(judged) for line in problems), lines


def test_the_example_workflow_runs_each_profile_on_its_runner_and_gates_with_the_action() -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(FLEET.read_text())
    specs, gate = workflow["jobs"]["specs"], workflow["jobs"]["gate"]
    assert [row["profile"] for row in specs["strategy"]["matrix"]["include"]] == list(HOSTS)
    assert specs["runs-on"] == ["self-hosted", "${{ matrix.profile }}"]
    (upload,) = [step for step in specs["steps"] if "upload-artifact" in step.get("uses", "")]
    assert "if" not in upload, "only a bundle that was signed is uploaded"
    assert gate["needs"] == "specs"
    runs = [step.get("run", "") for step in gate["steps"]]
    assert any(run.startswith("specgate merge --out=merged ") for run in runs)
    assert gate["steps"][-1]["uses"] == "./.github/actions/specgate-gate"
