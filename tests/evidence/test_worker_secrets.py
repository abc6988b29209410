"""A secret an xdist worker registers is masked on the controller too (its terminal, its bundle,
its CI log), and the values travel sealed: no serialized report holds them in the clear."""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from urllib.parse import quote

import pytest
from evidence_testkit import every_byte_written, git

from pytest_specgate.evidence import SealError, build_redactor, seal, unseal
from pytest_specgate.plugin.worker_secrets import SEALED_REPORT_FIELD, WorkerSecretsReceiver

SECRET = "crimson-lantern-walks-home"
"""No rule or generic detector takes it for a credential: only knowing it masks it."""


def test_the_secret_is_one_only_registration_can_mask() -> None:
    text = f"assert got == {SECRET!r}"
    redactor = build_redactor(Path.cwd(), ())
    assert redactor.text(text) == text
    assert redactor.register_secret(SECRET)
    assert SECRET not in redactor.text(text)


def test_sealed_values_open_with_the_runs_key_and_hold_no_form_of_them() -> None:
    key = secrets.token_hex(32)
    sealed = seal([SECRET, "second-value-123"], key)
    assert unseal(sealed, key) == (SECRET, "second-value-123")
    forms = [SECRET, quote(SECRET), base64.b64encode(SECRET.encode()).decode()[:-2], json.dumps(SECRET)[1:-1]]
    assert not any(form in sealed for form in forms)
    assert seal([SECRET], key) != seal([SECRET], key), "a fresh nonce per message"


@pytest.mark.parametrize("tamper", ["flip a byte", "cut the tag", "another run's key", "not base64",
                                    "not text"])
def test_a_sealed_message_not_made_by_this_runs_key_is_refused(tamper: str) -> None:
    key = secrets.token_hex(32)
    raw = bytearray(base64.b64decode(seal([SECRET], key)))
    sealed: object
    if tamper == "flip a byte":
        raw[20] ^= 1
        sealed = base64.b64encode(bytes(raw)).decode()
    elif tamper == "cut the tag":
        sealed = base64.b64encode(bytes(raw[:-1])).decode()
    elif tamper == "another run's key":
        sealed, key = seal([SECRET], secrets.token_hex(32)), key
    elif tamper == "not base64":
        sealed = "not*base64"
    else:
        sealed = 12
    with pytest.raises(SealError):
        unseal(sealed, key)


def test_the_controller_takes_sealed_values_off_a_report_and_refuses_another_runs(
    pytestconfig: pytest.Config,
) -> None:
    receiver = WorkerSecretsReceiver(pytestconfig)
    report = {"nodeid": "t.py::test", SEALED_REPORT_FIELD: seal([SECRET], receiver.key)}
    hook = receiver.pytest_report_from_serializable(report)
    next(hook)
    assert report == {"nodeid": "t.py::test"}
    foreign = {"nodeid": "t.py::forged", SEALED_REPORT_FIELD: seal([SECRET], secrets.token_hex(32))}
    with pytest.raises(SealError, match=r"^t\.py::forged: a worker.s report is refused: .*tag"):
        next(receiver.pytest_report_from_serializable(foreign))


REGISTERING_SPEC = f"""
import os, pathlib, pytest

FLAG = pathlib.Path(os.environ["SPECGATE_FLAG"])

@pytest.fixture
def credential(evidence):
    evidence.secret({SECRET!r})
    return {SECRET!r}

@pytest.mark.ac("AC-1", title="registers")
def test_registers(credential):
    FLAG.write_text("registered")
    assert credential == "other", "registered " + credential
"""

PRINTING_SPEC = f"""
import os, pathlib, time, pytest

FLAG = pathlib.Path(os.environ["SPECGATE_FLAG"])

@pytest.mark.ac("AC-2", title="prints")
def test_prints_what_another_worker_registered(evidence):
    deadline = time.monotonic() + 60
    while not FLAG.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)
    print("stdout " + {SECRET!r})
    evidence.note("seen", {SECRET!r})
    assert False, "printed " + {SECRET!r}
"""


def test_a_secret_one_worker_registers_is_masked_in_what_another_worker_prints(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SPECGATE_FLAG", str(tmp_path / "flag"))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(test_a_registers=REGISTERING_SPEC, test_b_prints=PRINTING_SPEC)
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist=loadfile", "--specgate-evidence=out", "-rA", "-v", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=2)
    terminal = [*result.outlines, *result.errlines]
    assert any("printed " in line for line in terminal) and any("registered " in line for line in terminal)
    assert f"::add-mask::{SECRET}" in terminal, [line for line in terminal if "add-mask" in line]
    shown = [line for line in terminal if SECRET in line and line != f"::add-mask::{SECRET}"]
    assert shown == []
    written = every_byte_written([*(path for path in (pytester.path / "out").rglob("*") if path.is_file()),
                                  summary])
    assert any(where.endswith("records.jsonl") for where in written)
    assert [where for where, data in written.items() if SECRET.encode() in data] == []
