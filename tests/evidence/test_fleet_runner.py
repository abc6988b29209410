"""Issue #28: the fleet's runner steps, run as written in docs/examples/fleet.yml, keep the key.

The steps of the ``specs`` job run here with bash, in order, as GitHub runs them: the runner (this
root process, the signing key's owner, whose key is 0600 in a 0700 folder) creates a fresh user
per job; the PR's checkout and specs run as that user. ``sudo`` is a shim over ``runuser`` (what
the runner's sudoers allows). The two steps that install packages from the network are replaced
(the job user runs this checkout's specgate, the signer is this checkout's ``specgate``); the
upload step is an action, so the test reads the folder it would upload. Needs root (CI is root)
to create users; skips elsewhere.

Each PR is a real commit of a real repository fetched by the job user. The attacks: a conftest
that plants a symlink to the key in its bundle, one that swaps in a bundle made for another
commit (without this job's nonce), and a process an earlier job left behind that keeps trying to
plant a forged bundle. Each time the key stays in its folder and the upload folder holds nothing
but this job's own signed bundle, or nothing at all.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import AC10, TEST_ENV, SyntheticRun, git, make_git_repo
from test_evidence_signing import pem_key

from pytest_specgate.evidence._bundle import SIGNATURE_NAME, STATEMENT_NAME
from pytest_specgate.evidence._redact import build_redactor
from pytest_specgate.selection import host_probe

CHECKOUT = Path(__file__).resolve().parents[2]
FLEET = CHECKOUT / "docs" / "examples" / "fleet.yml"
SYSTEM_PYTHON = Path(f"/usr/bin/python{sysconfig.get_python_version()}")
REPLACED_STEPS = {
    "install the pull request's specgate for the job user",
    "install specgate from the base commit (the signer's, not the PR's)",
    "upload the signed bundle",
}
SUDO_SHIM = """#!/bin/bash
# sudo [-u USER] [--] COMMAND...: as USER through runuser, else as this (root) process.
user=
while [ $# -gt 0 ]; do
  case "$1" in
    -u) user=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "sudo shim: unsupported option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ -n "$user" ]; then exec runuser -u "$user" -- "$@"; fi
exec "$@"
"""
HONEST_SPEC = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    with pytest.raises(PermissionError):
        open({key!r}, "rb")
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""
PLANT_LINK = """
from pathlib import Path

def pytest_unconfigure(config):
    evidence = config.getoption("specgate_evidence", None)  # None in the plugin's census run
    for bundle in Path(evidence).iterdir() if evidence else ():
        (bundle / "attachments").mkdir(exist_ok=True)
        (bundle / "attachments" / "key.pem").symlink_to({key!r})
"""
SWAP_BUNDLE = """
import shutil
from pathlib import Path

def pytest_unconfigure(config):
    evidence = config.getoption("specgate_evidence", None)  # None in the plugin's census run
    for bundle in Path(evidence).iterdir() if evidence else ():
        shutil.rmtree(bundle)
        shutil.copytree({foreign!r}, bundle)
"""
LEFTOVER = """
import subprocess
import sys

DAEMON = '''
import os, time
from pathlib import Path
Path({pidfile!r}).write_text(str(os.getpid()))
target = Path({evidence!r}) / "20990101T000000Z-f0f0f0"
while True:
    try:
        target.mkdir(parents=True, exist_ok=True)
        (target / "manifest.json").write_text("forged")
    except OSError:
        pass
    time.sleep(0.05)
'''


def pytest_unconfigure(config):
    if config.getoption("specgate_evidence", None) is None:  # the plugin's census run
        return
    subprocess.Popen([sys.executable, "-c", DAEMON], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


def _can_create_users() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and all(
        shutil.which(tool) for tool in ("useradd", "userdel", "runuser", "pkill", "pgrep", "install"))


pytestmark = pytest.mark.skipif(not _can_create_users(),
                                reason="needs root with useradd, userdel, runuser, pkill and pgrep")


@dataclass
class Runner:
    """One self-hosted runner: its temp folder, its home (with the key), the repository it serves."""

    root: Path
    key: Path
    origin: Path
    shim: Path

    @property
    def temp(self) -> Path:
        return self.root / "runner-temp"


@pytest.fixture
def runner() -> Iterator[Runner]:
    root = Path(tempfile.mkdtemp(prefix="specgate-fleet-"))
    os.chmod(root, 0o755)
    try:
        home = root / "runner-home"
        keys = home / ".config" / "specgate"
        keys.mkdir(parents=True)
        key = pem_key(keys, "desk")
        key.path.rename(keys / "signing-key")
        os.chmod(keys, 0o700)
        os.chmod(keys / "signing-key", 0o600)
        (root / "runner-temp").mkdir(mode=0o755)
        shim = root / "bin"
        shim.mkdir(mode=0o755)
        (shim / "sudo").write_text(SUDO_SHIM)
        os.chmod(shim / "sudo", 0o755)
        origin = root / "origin.git"
        git(root, "init", "-q", "--bare", str(origin))
        yield Runner(root, keys / "signing-key", origin, shim)
    finally:
        for line in Path("/etc/passwd").read_text().splitlines():
            if line.startswith("sg") and ":/nonexistent:" in line:
                subprocess.run(["pkill", "-KILL", "-u", line.split(":")[0]], check=False)
                subprocess.run(["userdel", line.split(":")[0]], check=False)
        shutil.rmtree(root, ignore_errors=True)


def _pr_commit(runner: Runner, files: Mapping[str, str]) -> str:
    """A commit of the PR (its specs and conftest), pushed to the repository the runner fetches from."""
    work = runner.root / "author"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    git(work, "init", "-q")
    (work / ".gitignore").write_text("__pycache__/\n.venv/\n.pytest_cache/\n")
    for name, text in files.items():
        (work / name).write_text(text)
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "PR")
    head = git(work, "rev-parse", "HEAD")
    git(work, "push", "-q", str(runner.origin), f"HEAD:refs/pull/{head}/head")
    return head


def _expanded(text: str, values: Mapping[str, str]) -> str:
    """``${{ expr }}`` replaced by what GitHub would put there; an expression not listed fails."""
    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda match: values[match.group(1)], text)


@dataclass
class Job:
    """What one run of the ``specs`` job's steps left: each step's result and the job's folders."""

    results: dict[str, subprocess.CompletedProcess[str]]
    env: dict[str, str]

    @property
    def upload(self) -> Path:
        return Path(self.env["JOB"]) / "upload"


def _run_job(runner: Runner, head: str, run_id: str, *, stop_after: str | None = None) -> Job:
    """The ``specs`` job's steps, in order, with bash (-e, pipefail), as GitHub runs ``run:`` steps."""
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load(FLEET.read_text())["jobs"]["specs"]
    values = {
        "matrix.profile": "m4-16gb", "matrix.engine": "mock", "runner.temp": str(runner.temp),
        "github.event.pull_request.number || inputs.pr": "7",
        "github.event.pull_request.head.sha || inputs.head_sha": head,
        "github.event.pull_request.base.sha || inputs.base_sha": head,
        "inputs.reason || format('label {0} added by {1}', github.event.label.name, github.actor)":
            "label run-on-enrolled-hosts added by a maintainer",
    }
    github_env = runner.root / f"github-env-{run_id}"
    github_env.write_text("")
    site = sysconfig.get_paths()["purelib"]
    env = {
        "PATH": f"{runner.shim}:{os.environ['PATH']}", "HOME": str(runner.key.parents[2]),
        "RUNNER_TEMP": str(runner.temp), "GITHUB_ENV": str(github_env), "GITHUB_RUN_ID": run_id,
        "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SERVER_URL": f"file://{runner.root}",
        "GITHUB_REPOSITORY": runner.origin.name, "PYTHONDONTWRITEBYTECODE": "1",
        **{name: _expanded(str(value), values) for name, value in job["env"].items()},
        "SPECS": "-p no:cacheprovider test_spec.py",
        "SIGNER": str(Path(sys.executable).parent / "specgate"),
    }
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    failed = False
    for step in job["steps"]:
        name = step["name"]
        if name in REPLACED_STEPS:
            if name.startswith("install the pull request's"):
                _job_python(env, site)
            continue
        if failed and step.get("if") != "always()":
            continue
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                env=env, capture_output=True, text=True, timeout=300, check=False)
        results[name] = result
        for line in github_env.read_text().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
        failed = failed or result.returncode != 0
        if name.startswith("create this job's user") and not failed:
            _may_fetch_from_root(env)
        if name == stop_after:
            break
    return Job(results, env)


def _may_fetch_from_root(env: Mapping[str, str]) -> None:
    """The bare repository here is root's, which the job user's git refuses to read from; GitHub
    serves it over https instead. The job user's global git config says it may."""
    config = Path(env["JOB"]) / "home" / ".gitconfig"
    config.write_text("[safe]\n\tdirectory = *\n")
    user = pwd.getpwnam(env["JOB_USER"])
    os.chown(config, user.pw_uid, user.pw_gid)


def _job_python(env: Mapping[str, str], site: str) -> None:
    """What the replaced install step gives the job user: a Python that imports this checkout's
    specgate (the network is not reachable here)."""
    python = Path(env["JOB"]) / "work" / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{CHECKOUT}:{site}" exec {SYSTEM_PYTHON} "$@"\n')
    python.chmod(0o755)
    user = pwd.getpwnam(env["JOB_USER"])
    for path in (python.parents[1], python.parent, python):
        os.chown(path, user.pw_uid, user.pw_gid)


def _key_stays(runner: Runner, *folders: Path) -> None:
    """The key is where it was, as it was, and its bytes are in no file of ``folders``."""
    secret = runner.key.read_bytes()
    assert stat.S_IMODE(runner.key.stat().st_mode) == 0o600 and runner.key.stat().st_uid == 0
    assert stat.S_IMODE(runner.key.parent.stat().st_mode) == 0o700
    for folder in folders:
        for path in folder.rglob("*") if folder.exists() else ():
            assert not path.is_symlink(), path
            if path.is_file():
                assert secret not in path.read_bytes(), path


def _skip_unless_the_job_user_can_run_python() -> None:
    if not SYSTEM_PYTHON.is_file():
        pytest.skip(f"no {SYSTEM_PYTHON} a job user may run")


def _statement(bundle: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((bundle / STATEMENT_NAME).read_text())
    return document


def test_an_honest_job_uploads_only_its_own_signed_bundle_and_leaves_nothing(runner: Runner) -> None:
    _skip_unless_the_job_user_can_run_python()
    head = _pr_commit(runner, {"test_spec.py": HONEST_SPEC.format(key=str(runner.key))})
    job = _run_job(runner, head, "101", stop_after=SIGN)
    assert all(result.returncode == 0 for result in job.results.values()), {
        name: result.stderr[-1500:] for name, result in job.results.items() if result.returncode}
    (bundle,) = job.upload.iterdir()
    assert (bundle / SIGNATURE_NAME).is_file()
    assert _statement(bundle)["predicate"]["nonce"] == job.env["NONCE"]
    assert _statement(bundle)["subject"][0]["digest"]["gitCommit"] == head
    _key_stays(runner, job.upload, Path(job.env["JOB"]))
    user = job.env["JOB_USER"]
    cleanup = _cleanup(job)
    assert cleanup.returncode == 0, cleanup.stderr
    assert not Path(job.env["JOB"]).exists()
    with pytest.raises(KeyError):
        pwd.getpwnam(user)


SIGN = "sign exactly this job's bundle (as the key's owner)"


def _reached(job: Job, name: str) -> subprocess.CompletedProcess[str]:
    """The result of step ``name``, which every step before it let the job reach."""
    assert name in job.results, {step: result.stderr[-1500:] for step, result in job.results.items()
                                 if result.returncode}
    return job.results[name]


def _cleanup(job: Job) -> subprocess.CompletedProcess[str]:
    """The job's last step (``if: always()``), run after the test looked at what the job left."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           _step("remove the job user and its files")],
                          env=job.env, capture_output=True, text=True, timeout=60, check=False)


def _step(name: str) -> str:
    yaml = pytest.importorskip("yaml")
    (step,) = [step for step in yaml.safe_load(FLEET.read_text())["jobs"]["specs"]["steps"]
               if step["name"] == name]
    script: str = step["run"]
    return script


def test_a_link_to_the_key_planted_in_the_bundle_never_leaves_and_nothing_is_uploaded(runner: Runner) -> None:
    _skip_unless_the_job_user_can_run_python()
    head = _pr_commit(runner, {"test_spec.py": HONEST_SPEC.format(key=str(runner.key)),
                               "conftest.py": PLANT_LINK.format(key=str(runner.key))})
    job = _run_job(runner, head, "102", stop_after=SIGN)
    sign = _reached(job, SIGN)
    assert sign.returncode != 0
    assert "refusing to sign a bundle holding attachments/key.pem (a symlink)" in sign.stderr, sign.stderr
    assert list(job.upload.iterdir()) == [], "the upload folder holds nothing after a refusal"
    _key_stays(runner, job.upload)
    assert _cleanup(job).returncode == 0


def test_a_bundle_for_another_commit_without_this_jobs_nonce_is_refused(
    runner: Runner, tmp_path: Path
) -> None:
    _skip_unless_the_job_user_can_run_python()
    here = build_redactor(None).value(host_probe.probe_host().to_dict())
    other = make_git_repo(tmp_path)
    forged_run = SyntheticRun(other.path, TEST_ENV, host_facts=here)
    forged_run.run_test("acceptance/test_ac10.py::test_speedup", AC10)
    foreign = shutil.copytree(forged_run.finish().path, runner.root / "foreign")
    for path in (foreign, *foreign.rglob("*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    head = _pr_commit(runner, {"test_spec.py": HONEST_SPEC.format(key=str(runner.key)),
                               "conftest.py": SWAP_BUNDLE.format(foreign=str(foreign))})
    job = _run_job(runner, head, "103", stop_after=SIGN)
    sign = _reached(job, SIGN)
    assert sign.returncode != 0
    assert (f"refusing to sign: not this job's bundle: the bundle is for commit {other.commit}, not this "
            f"job's {head}; the bundle carries nonce None, not the nonce this job passed to pytest"
            ) in sign.stderr
    assert list(job.upload.iterdir()) == []
    _key_stays(runner, job.upload)
    assert _cleanup(job).returncode == 0


def test_a_process_left_by_an_earlier_job_changes_nothing_in_the_next(runner: Runner) -> None:
    _skip_unless_the_job_user_can_run_python()
    drop = runner.root / "drop"
    drop.mkdir(mode=0o777)
    drop.chmod(0o777)
    pidfile = drop / "daemon.pid"
    evidence = runner.temp / "specgate-job" / "evidence"
    head = _pr_commit(runner, {"test_spec.py": HONEST_SPEC.format(key=str(runner.key)),
                               "conftest.py": LEFTOVER.format(pidfile=str(pidfile), evidence=str(evidence))})
    earlier = _run_job(runner, head, "104")
    assert pidfile.is_file(), "the earlier job's spec started its daemon"
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists(), "the job user's processes end with its job"
    honest = _pr_commit(runner, {"test_spec.py": HONEST_SPEC.format(key=str(runner.key))})
    job = _run_job(runner, honest, "105", stop_after=SIGN)
    assert job.env["JOB_USER"] != earlier.env["JOB_USER"]
    assert all(result.returncode == 0 for result in job.results.values()), {
        name: result.stderr[-1500:] for name, result in job.results.items() if result.returncode}
    assert [path.name for path in Path(job.env["JOB"], "evidence").iterdir()] == [
        path.name for path in job.upload.iterdir()], "only this job's bundle, nothing planted"
    (bundle,) = job.upload.iterdir()
    assert _statement(bundle)["predicate"]["nonce"] == job.env["NONCE"]
    _key_stays(runner, job.upload)
    assert _cleanup(job).returncode == 0
