"""Issue #28: ``specgate sign`` signs exactly one bundle, the one this job made, and never follows a link.

A spec user can put anything in its evidence folder: a symlink into the key owner's folder, a
FIFO, a bundle made for another commit or by another job. The signer refuses each before it reads
a file, naming what it found; the job's own bundle (this commit, this job's nonce) is signed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from evidence_testkit import AC10, M4_HOST_FACTS, TEST_ENV, GitRepo, SyntheticRun, cli
from test_evidence_signing import pem_key

from pytest_specgate.contracts.host import host_facts_from_dict
from pytest_specgate.evidence._bundle import SIGNATURE_NAME, STATEMENT_NAME
from pytest_specgate.evidence.cli_commands import configure_sign_parser, run_sign
from pytest_specgate.selection import host_probe

NONCE = "0123456789abcdef0123456789abcdef"
OTHER_COMMIT = "f0" * 20


@pytest.fixture(autouse=True)
def _desk_m4(monkeypatch: pytest.MonkeyPatch) -> None:
    """The signer's own probe finds the desk M4 the bundles' facts describe."""
    monkeypatch.setattr(host_probe, "probe_host", lambda: host_facts_from_dict(M4_HOST_FACTS, where="M4"))


def _bundle(repo: Path, nonce: str | None = NONCE) -> Path:
    run = SyntheticRun(repo, TEST_ENV, host_facts=M4_HOST_FACTS, job_nonce=nonce)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10)
    return run.finish().path


def _sign(capsys: pytest.CaptureFixture[str], bundle: Path, key: Path, *extra: str) -> tuple[int, str]:
    code, _, err = cli(capsys, configure_sign_parser, run_sign, str(bundle), f"--key={key}", *extra)
    return code, err.strip()


def test_the_job_nonce_is_in_the_statement_and_the_jobs_own_bundle_is_signed(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(git_repo.path)
    assert json.loads((bundle / STATEMENT_NAME).read_text())["predicate"]["nonce"] == NONCE
    key = pem_key(tmp_path, "desk")
    assert _sign(capsys, bundle, key.path, f"--commit={git_repo.commit}", f"--nonce={NONCE}") == (0, "")
    assert (bundle / SIGNATURE_NAME).is_file()


def test_a_bundle_for_another_commit_or_with_another_nonce_is_refused(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = pem_key(tmp_path, "desk")
    bundle = _bundle(git_repo.path)
    code, err = _sign(capsys, bundle, key.path, f"--commit={OTHER_COMMIT}", f"--nonce={NONCE}")
    assert (code, err) == (2, f"specgate sign: error: {bundle}: refusing to sign: not this job's bundle: the "
                              f"bundle is for commit {git_repo.commit}, not this job's {OTHER_COMMIT}")
    code, err = _sign(capsys, bundle, key.path, f"--commit={git_repo.commit}", f"--nonce={'9' * 32}")
    assert (code, err) == (2, f"specgate sign: error: {bundle}: refusing to sign: not this job's bundle: the "
                              f"bundle carries nonce {NONCE!r}, not the nonce this job passed to pytest")
    earlier = _bundle(git_repo.path, nonce=None)
    code, err = _sign(capsys, earlier, key.path, f"--nonce={NONCE}")
    assert code == 2
    assert err.endswith("the bundle carries nonce None, not the nonce this job passed to pytest")
    assert not (bundle / SIGNATURE_NAME).exists() and not (earlier / SIGNATURE_NAME).exists()
    with pytest.raises(SystemExit) as refused:
        _sign(capsys, bundle, key.path, "--nonce=short")
    assert refused.value.code == 2 and "'short': expected 16 to 128 characters" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["attachments/key.pem", "evidence.md", "nested/deeper/link"])
def test_a_symlink_anywhere_in_the_bundle_is_refused_before_anything_reads_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """The issue's route: a link the spec user made into the key owner's folder, copied by the signer."""
    key = pem_key(tmp_path, "desk")
    bundle = _bundle(git_repo.path)
    link = bundle / where
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.exists():
        link.unlink()
    link.symlink_to(key.path)
    code, err = _sign(capsys, bundle, key.path, f"--nonce={NONCE}")
    assert (code, err) == (2, f"specgate sign: error: {bundle}: refusing to sign a bundle holding {where} (a "
                              "symlink): a bundle holds only regular files and folders")
    assert not (bundle / SIGNATURE_NAME).exists()


def test_a_fifo_in_the_bundle_or_a_linked_bundle_folder_is_refused(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = pem_key(tmp_path, "desk")
    bundle = _bundle(git_repo.path)
    os.mkfifo(bundle / "attachments-fifo")
    code, err = _sign(capsys, bundle, key.path)
    assert code == 2
    assert err.endswith("holding attachments-fifo (a special file): a bundle holds only regular files and "
                        "folders")
    (bundle / "attachments-fifo").unlink()
    linked = tmp_path / "linked"
    linked.symlink_to(bundle)
    code, err = _sign(capsys, linked, key.path)
    assert (code, err) == (2, f"specgate sign: error: {linked}: not a folder (a symlink is never followed): "
                              "refusing to sign it")
    assert _sign(capsys, bundle, key.path)[0] == 0, "the same bundle without them signs"


def test_the_pytest_option_records_the_nonce_and_refuses_a_malformed_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    bad = pytester.runpytest("--specgate-evidence=out", "--specgate-nonce=a b")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--specgate-nonce='a b': expected 16 to 128 characters of [[]A-Za-z0-9_-[]]*"])


@pytest.mark.parametrize("nonce", ["Zx9_Qm3-Lp7vRt2WsY8kNb", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"])
def test_a_url_safe_nonce_the_option_accepts_is_signed(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], nonce: str
) -> None:
    """``--specgate-nonce`` takes 16 to 128 of [A-Za-z0-9_-] (``secrets.token_urlsafe``), not only hex: the
    signer's redaction check must not read such a nonce as a leaked key."""
    bundle = _bundle(git_repo.path, nonce=nonce)
    key = pem_key(tmp_path, "desk")
    assert _sign(capsys, bundle, key.path, f"--commit={git_repo.commit}", f"--nonce={nonce}") == (0, "")
