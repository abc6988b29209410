"""Key custody and the signer as an independent witness of the host.

``specgate sign`` probes the host itself and refuses a bundle whose host facts were simulated or
differ from its own probe. The round trip below follows ``docs/examples/fleet.yml`` with two real
users: the specs run as an unprivileged user created here with ``useradd`` (so it needs root and
skips elsewhere), which cannot read the signing key; the key's owner signs in a later step.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import M4_HOST_FACTS, TEST_ENV, GitRepo, SyntheticRun, cli, reseal_bundle
from test_evidence_signing import load_policy, pem_key, write_policy

from pytest_specgate.contracts.host import HostProvenance
from pytest_specgate.evidence import load_bundle, read_records
from pytest_specgate.evidence._bundle import SIGNATURE_NAME
from pytest_specgate.evidence._redact import build_redactor
from pytest_specgate.evidence._signing import witness_problems
from pytest_specgate.evidence._trust import judge_bundle
from pytest_specgate.evidence.cli_commands import configure_sign_parser, run_sign
from pytest_specgate.examples import host_examples_dir
from pytest_specgate.selection import host_probe

CHECKOUT = Path(__file__).resolve().parents[2]
SPEC = """
import pytest

KEY = {key!r}


@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    # The PR's own code, trying what the issue's conftest did: the key is out of its reach.
    with pytest.raises(PermissionError):
        open(KEY, "rb")
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""


def _probed() -> dict[str, Any]:
    facts: dict[str, Any] = build_redactor(None).value(host_probe.probe_host().to_dict())
    return facts


def test_the_witness_names_every_field_that_differs_and_refuses_simulated_facts(git_repo: GitRepo) -> None:
    here = _probed()
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=here)
    run.run_test("acceptance/test_ac10.py::test_speedup", {"id": "AC-10"})
    records = read_records(load_bundle(run.finish().path))
    assert witness_problems(records, here) == []
    elsewhere = {**here, "os": "plan9", "memory_bytes": -1, "thermal_state": "heavy"}
    assert witness_problems(records, elsewhere) == [
        f"AC-10: host facts differ from this host's own probe: memory_bytes: recorded "
        f"{json.dumps(here['memory_bytes'])}, probed -1; "
        f"os: recorded {json.dumps(here['os'])}, probed \"plan9\""
    ]


def test_sign_refuses_a_bundle_whose_host_facts_came_from_a_file(git_repo: GitRepo, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=_probed(),
                       host_provenance=HostProvenance("file", "gb10.json"))
    run.run_test("acceptance/test_ac10.py::test_speedup", {"id": "AC-10"})
    bundle = run.finish().path
    key = pem_key(tmp_path, "desk")
    code, _, err = cli(capsys, configure_sign_parser, run_sign, str(bundle), f"--key={key.path}")
    assert code == 2 and err.startswith(f"specgate sign: error: {bundle}: refusing to sign: AC-10: host "
                                        "facts from file (gb10.json), not the run's probe")
    assert not (bundle / SIGNATURE_NAME).exists()


def test_sign_refuses_m4_facts_on_another_host(git_repo: GitRepo, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=M4_HOST_FACTS)
    run.run_test("acceptance/test_ac10.py::test_speedup", {"id": "AC-10"})
    bundle = run.finish().path
    if _probed() == M4_HOST_FACTS:
        pytest.skip("this host is the M4 the facts describe")
    key = pem_key(tmp_path, "desk")
    code, _, err = cli(capsys, configure_sign_parser, run_sign, str(bundle), f"--key={key.path}")
    assert code == 2 and "AC-10: host facts differ from this host's own probe: " in err
    assert "apple_chip: recorded \"M4\"" in err


# --- the fleet's two users --------------------------------------------------------------------

def _can_create_users() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("useradd") is not None \
        and shutil.which("runuser") is not None


SYSTEM_PYTHON = Path(f"/usr/bin/python{sysconfig.get_python_version()}")
"""The user running the specs needs an interpreter it may execute; this one may sit in root's home."""


@pytest.fixture
def spec_user() -> Iterator[str]:
    """An unprivileged user of its own (removed afterwards): the fleet's spec runner."""
    name = f"specgate-t{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


def _as(user: str, argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    assignments = [f"{name}={value}" for name, value in {**base, **env}.items()]
    return subprocess.run(["runuser", "-u", user, "--", "env", *assignments, *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.skipif(not _can_create_users(),
                    reason="needs root with useradd and runuser to create the spec user")
def test_fleet_round_trip_with_two_users(spec_user: str, tmp_path: Path) -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    python_path = f"{CHECKOUT}{os.pathsep}{site}"
    if not SYSTEM_PYTHON.is_file():
        pytest.skip(f"no {SYSTEM_PYTHON} the spec user may run")
    # The signer's key: owned by root (this process), mode 0600, in a 0700 folder.
    keys = Path(tempfile.mkdtemp(prefix="specgate-keys-"))
    key = pem_key(keys, "desk")
    os.chmod(keys, 0o700)
    os.chmod(key.path, 0o600)
    # The checkout the specs run in, owned by the spec user (as actions/checkout leaves it).
    work = Path(tempfile.mkdtemp(prefix="specgate-work-"))
    try:
        (work / "test_spec.py").write_text(SPEC.format(key=str(key.path)))
        (work / ".gitignore").write_text("__pycache__/\nout/\n")
        user = pwd.getpwnam(spec_user)
        for path in (work, *work.rglob("*")):
            os.chown(path, user.pw_uid, user.pw_gid)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        for argv in (["git", "init", "-q"], ["git", "add", "."], [*git, "commit", "-q", "-m", "specs"]):
            assert _as(spec_user, argv, work).returncode == 0
        probe = _as(spec_user, [str(SYSTEM_PYTHON), "-c", "import pytest_specgate, cryptography"], work,
                    PYTHONPATH=python_path)
        if probe.returncode != 0:
            pytest.skip(f"the spec user cannot import this venv's packages: {probe.stderr.strip()[-200:]}")

        # Step 1 (spec user): the key is out of reach, and the specs run.
        assert _as(spec_user, ["test", "-r", str(key.path)], work).returncode != 0
        run = _as(spec_user, [str(SYSTEM_PYTHON), "-m", "pytest", "-p", "no:cacheprovider",
                              "--specgate-evidence=out", "test_spec.py"], work, PYTHONPATH=python_path)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        (bundle,) = [path for path in (work / "out").iterdir() if path.is_dir() and path.name[0].isdigit()]
        assert stat.S_IMODE(key.path.stat().st_mode) == 0o600 and key.path.stat().st_uid == 0

        # Step 2 (key owner, its own process): re-probe, then sign.
        signer = [str(Path(sys.executable).parent / "specgate"), "sign", str(bundle), f"--key={key.path}"]
        signed = subprocess.run(signer, capture_output=True, text=True, check=False,
                                env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
        assert signed.returncode == 0, signed.stderr
        policy = load_policy(write_policy(tmp_path, {"desk": (key, [])})).trust
        assert policy is not None
        trust = judge_bundle(bundle, policy, dt.datetime.now(dt.UTC))
        assert trust.problem is None and [s.name for s in trust.signers] == ["desk"]

        # Step 3: host facts changed after the run (re-manifested as an author could): refused.
        (bundle / SIGNATURE_NAME).unlink()
        reseal_bundle(bundle, {"AC-10": lambda record: record["host"]["facts"].update(cpu_count=512)})
        refused = subprocess.run(signer, capture_output=True, text=True, check=False,
                                 env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
        assert refused.returncode == 2
        assert ("refusing to sign: AC-10: host facts differ from this host's own probe: "
                "cpu_count: recorded 512") in refused.stderr
        assert not (bundle / SIGNATURE_NAME).exists()

        # And facts simulated with --specgate-host-facts are refused whatever they say.
        gb10 = host_examples_dir() / "gb10.json"
        simulated = _as(spec_user, [str(SYSTEM_PYTHON), "-m", "pytest", "-p", "no:cacheprovider",
                                    "--specgate-evidence=sim", f"--specgate-host-facts={gb10}",
                                    "test_spec.py"], work, PYTHONPATH=python_path)
        assert simulated.returncode == 0, simulated.stdout[-2000:]
        (sim,) = [path for path in (work / "sim").iterdir() if path.is_dir() and path.name[0].isdigit()]
        refused = subprocess.run([*signer[:2], str(sim), f"--key={key.path}"], capture_output=True, text=True,
                                 check=False, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
        assert refused.returncode == 2 and "AC-10: host facts from file (gb10.json)" in refused.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(keys, ignore_errors=True)


def test_the_fleet_example_runs_the_base_workflow_as_a_fresh_user_and_signs_one_bundle() -> None:
    """docs/examples/fleet.yml (issue #28): the base branch's workflow (pull_request_target or a
    maintainer's dispatch with a reason), a reviewer approves, the PR's code runs as a per-job
    user whose processes end before signing, the signer (the base's specgate, as the key's owner)
    signs one bundle for this head commit and nonce, and the upload folder starts empty.
    tests/evidence/test_fleet_runner.py runs these steps."""
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((CHECKOUT / "docs" / "examples" / "fleet.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"pull_request_target", "workflow_dispatch"}
    assert triggers["workflow_dispatch"]["inputs"]["reason"]["required"] is True
    specs = workflow["jobs"]["specs"]
    assert specs["environment"] == "enrolled-hosts"
    steps = {step["name"]: step for step in specs["steps"]}
    names = list(steps)
    assert not any("actions/checkout" in str(step.get("uses", "")) for step in specs["steps"])
    create = steps["create this job's user and folders (the runner's, not the PR's)"]["run"]
    assert "sudo useradd" in create and 'mkdir -m 0700 "$job/upload"' in create and "NONCE=" in create
    run_specs = steps["run the hardware specs as the job user"]["run"]
    assert run_specs.lstrip().startswith('sudo -u "$JOB_USER" --') and '--specgate-nonce="$4"' in run_specs
    sign = steps["sign exactly this job's bundle (as the key's owner)"]["run"]
    assert '"$SIGNER" sign' in sign and '--commit="$HEAD_SHA" --nonce="$NONCE"' in sign and "sudo" not in sign
    assert 'cp -R -P "$1"' in sign
    assert steps["stop every process of the job user"]["if"] == "always()"
    assert names.index("stop every process of the job user") < names.index(
        "sign exactly this job's bundle (as the key's owner)")
    assert "BASE_SHA" in steps["install specgate from the base commit (the signer's, not the PR's)"]["run"]
    assert steps["remove the job user and its files"]["if"] == "always()"
