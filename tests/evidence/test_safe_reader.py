"""Every reader of a file someone else wrote, against every file that is not what it claims to be.

Each command (``render``, ``gate``, ``sign``, ``merge``, ``waivers``, ``hosts --host-facts``, the
gate's ``--pr-body-from-event`` payload and the plugin's ``--specgate-host-facts``) is run as its own
process against a symlink out of the bundle, a FIFO, a character device (``/dev/zero``'s), a file
past the size limit and JSON nested 100,000 deep. Each must end in one line naming the file and a
nonzero exit, never a hang (the process has a timeout), a traceback or a read of what the link
points at.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from evidence_testkit import TEST_ENV, make_git_repo, qualifying_bundle

from pytest_specgate.contracts.safe_read import (
    _CHUNK,
    MAX_DOCUMENT_BYTES,
    SafeReadError,
    digest_regular_file,
    read_regular_file,
)
from pytest_specgate.evidence._bundle import MANIFEST_NAME
from pytest_specgate.selection.host_probe import probe_host

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST_FACTS = REPO_ROOT / "fixtures" / "hosts" / "linux-x86_64-24gb-nogpu.json"
DEEP = 100_000
TIMEOUT_S = 60
DEEP_ARRAY = "[" * DEEP + "]" * DEEP


@dataclass(frozen=True)
class Case:
    """A way a file can lie, and the words of the one line that must refuse it."""

    name: str
    says: str


CASES = [
    Case("symlink", "is a symbolic link; expected a regular file"),
    Case("fifo", "is a FIFO; expected a regular file"),
    Case("device", "is a character device; expected a regular file"),
    Case("oversize", f"specgate reads at most {MAX_DOCUMENT_BYTES} bytes"),
    Case("deep", "JSON nested deeper than 100 levels"),
]


def plant(case: Case, target: Path, valid: bytes, deep: str) -> None:
    """Replace ``target`` by the case; a symlink points at a valid copy outside its folder."""
    target.unlink(missing_ok=True)
    if case.name == "symlink":
        outside = target.parent.parent / f"outside-{target.name}"
        outside.write_bytes(valid)
        target.symlink_to(outside)
    elif case.name == "fifo":
        os.mkfifo(target)
    elif case.name == "device":
        try:
            os.mknod(target, stat.S_IFCHR | 0o644, os.makedev(1, 5))
        except PermissionError:
            pytest.skip("creating a device node needs root")
    elif case.name == "oversize":
        with target.open("wb") as handle:
            handle.truncate(MAX_DOCUMENT_BYTES + 1)
    else:
        target.write_text(deep)


@dataclass(frozen=True)
class Command:
    """One reader: the file it reads and how it is run (``argv`` after ``python``, extra env)."""

    name: str
    target: Callable[[Path], Path]
    argv: Callable[[Path], list[str]]
    deep: str = DEEP_ARRAY
    env: Callable[[Path], dict[str, str]] = lambda _work: {}
    usage_exit: int = 2


def _specgate(*arguments: str) -> list[str]:
    return ["-c", "from pytest_specgate.cli import main; raise SystemExit(main())", *arguments]


def _bundle(work: Path) -> Path:
    return work / "bundle"


def _manifest(work: Path) -> Path:
    return _bundle(work) / MANIFEST_NAME


def _facts(work: Path) -> Path:
    return work / "input" / "facts.json"


def _event(work: Path) -> Path:
    return work / "input" / "event.json"


COMMIT = "0" * 40
COMMANDS = [
    Command("render", _manifest, lambda w: _specgate("render", str(_bundle(w)))),
    Command(
        "gate", _manifest,
        lambda w: _specgate("gate", "--pr-body", str(w / "pr.md"), "--evidence", str(_bundle(w)),
                            "--commit", COMMIT),
    ),
    Command("sign", _manifest, lambda w: _specgate("sign", str(_bundle(w)), "--key", str(w / "key.pem"))),
    Command("merge", _manifest, lambda w: _specgate("merge", str(_bundle(w)), "--out", str(w / "merged"))),
    Command("waivers", _manifest, lambda w: _specgate("waivers", str(_bundle(w)))),
    Command(
        "hosts --host-facts", _facts, lambda w: _specgate("hosts", "--host-facts", str(_facts(w))),
        deep='{"os": "linux", "arch": "x86_64", "extra": ' + DEEP_ARRAY + "}",
    ),
    Command(
        "gate --pr-body-from-event", _event,
        lambda w: _specgate(
            "gate", "--pr-body-from-event", "--evidence", str(_bundle(w)), "--commit", COMMIT
        ),
        deep='{"pull_request": {"body": ' + DEEP_ARRAY + "}}",
        env=lambda w: {"GITHUB_EVENT_PATH": str(_event(w))},
    ),
    Command(
        "pytest --specgate-host-facts", _facts,
        lambda w: ["-m", "pytest", "-p", "no:cacheprovider", "-q", f"--specgate-host-facts={_facts(w)}",
                   "test_spec.py"],
        deep='{"os": "linux", "arch": "x86_64", "extra": ' + DEEP_ARRAY + "}",
        usage_exit=int(pytest.ExitCode.USAGE_ERROR),
    ),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A verified bundle, its PR body, a signing key, a host-facts file and an event payload."""
    root = tmp_path_factory.mktemp("pristine")
    repo = make_git_repo(root)
    # This host's own facts: `specgate sign` re-probes the host and refuses any others.
    written = qualifying_bundle(repo.path, TEST_ENV, host_facts=probe_host().to_dict())
    shutil.copytree(written.path, root / "bundle")
    (root / "pr.md").write_text(written.markdown)
    key = Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    (root / "key.pem").write_bytes(key)
    (root / "input").mkdir()
    shutil.copy(HOST_FACTS, root / "input" / "facts.json")
    event = {"pull_request": {"number": 1, "body": written.markdown}}
    (root / "input" / "event.json").write_text(json.dumps(event))
    shutil.rmtree(repo.path)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (root / "test_spec.py").write_text(
        "import pytest\n\n@pytest.mark.hardware(min_memory_gb=1)\ndef test_needs_memory():\n    pass\n"
    )
    return root


def run_reader(command: Command, work: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **command.env(work)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    try:
        return subprocess.run(
            [sys.executable, *command.argv(work)], cwd=work, env=env, capture_output=True, text=True,
            timeout=TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command.name} hung for {TIMEOUT_S} s on {command.target(work)}")


SIGN_REFUSES_FIRST = {"symlink": "(a symlink)", "fifo": "(a special file)", "device": "(a special file)"}
"""``specgate sign`` refuses a link or special file anywhere in the bundle before reading any
file, naming it inside the bundle (a fleet signer must not read through a planted link)."""


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@pytest.mark.parametrize("command", COMMANDS, ids=[command.name for command in COMMANDS])
def test_every_reader_refuses_in_one_line(
    command: Command, case: Case, pristine: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    shutil.copytree(pristine, work)
    target = command.target(work)
    plant(case, target, target.read_bytes(), command.deep)

    completed = run_reader(command, work)

    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert completed.returncode == command.usage_exit, completed.stderr + completed.stdout
    assert len(lines) == 1, completed.stderr
    named, says = str(target), case.says
    if command.name == "sign" and case.name in SIGN_REFUSES_FIRST:
        named = f"{target.parent}: refusing to sign a bundle holding {target.name}"
        says = SIGN_REFUSES_FIRST[case.name]
    assert named in lines[0] and says in lines[0], lines[0]
    assert "Traceback" not in completed.stdout + completed.stderr
    assert not (work / "merged").exists()


def test_the_readers_accept_the_pristine_inputs(pristine: Path, tmp_path: Path) -> None:
    """Each command above succeeds on the untouched files, so the refusals come from the planted case."""
    work = tmp_path / "work"
    shutil.copytree(pristine, work)
    for command in COMMANDS:
        completed = run_reader(command, work)
        assert completed.returncode in (0, 1), (command.name, completed.stderr)
        assert "error" not in completed.stderr.lower(), (command.name, completed.stderr)


def test_a_wrong_field_of_a_large_host_facts_file_is_one_short_line(tmp_path: Path) -> None:
    """Read whole (under the limit) and refused by its shape: the message shows the value cut short."""
    from pytest_specgate.contracts.host import HostFactsError
    from pytest_specgate.selection.host_probe import load_host_facts

    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"os": "linux", "arch": "x86_64", "extra": list(range(1_000_000))}))
    with pytest.raises(HostFactsError) as refused:
        load_host_facts(facts)
    assert str(refused.value).endswith("field 'extra' must be dict, got list [0, 1, 2, 3, 4, 5, ...]")
    assert len(str(refused.value)) < 200 + len(str(facts))


@pytest.mark.parametrize("size", [_CHUNK - 1, _CHUNK, _CHUNK + 1, 3 * _CHUNK + 7])
def test_digest_and_read_cover_every_chunk(tmp_path: Path, size: int) -> None:
    """Two files that differ only in their last byte, past the first chunk when there is one."""
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    first, second = tmp_path / "first.bin", tmp_path / "second.bin"
    first.write_bytes(body)
    second.write_bytes(body[:-1] + bytes([body[-1] ^ 0xFF]))

    assert digest_regular_file(first) == (hashlib.sha256(body).hexdigest(), size)
    assert digest_regular_file(second)[0] != digest_regular_file(first)[0]
    assert read_regular_file(first) == body
    assert read_regular_file(second)[-1] != body[-1]


@pytest.mark.parametrize("reader", [digest_regular_file, read_regular_file])
def test_the_limit_admits_its_own_size_and_refuses_one_byte_more(
    tmp_path: Path, reader: Callable[..., object]
) -> None:
    limit = 2 * _CHUNK + 1
    at_limit, over = tmp_path / "at-limit.bin", tmp_path / "over.bin"
    at_limit.write_bytes(b"a" * limit)
    over.write_bytes(b"a" * (limit + 1))

    reader(at_limit, "the attachment", limit=limit)
    with pytest.raises(SafeReadError, match=f"over.bin: the attachment holds {limit + 1} bytes; "
                                            f"specgate reads at most {limit} bytes of it"):
        reader(over, "the attachment", limit=limit)


def test_a_refusal_without_a_name_for_the_file_calls_it_the_file(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"a" * 11)
    for reader in (digest_regular_file, read_regular_file):
        with pytest.raises(SafeReadError, match=r"big.bin: the file holds 11 bytes; specgate reads at most"):
            reader(big, limit=10)


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs /proc (st_size 0, text inside)")
@pytest.mark.parametrize("reader", [digest_regular_file, read_regular_file])
def test_a_file_longer_than_its_size_said_is_refused_once_its_chunks_pass_the_limit(
    reader: Callable[..., object]
) -> None:
    """fstat says 0 bytes (as for a file still growing) and the kernel hands the text out a page
    at a time: the bytes of every chunk read are counted against the limit, not the last one's."""
    maps = Path("/proc/self/maps")
    page = 4096
    assert len(read_regular_file(maps, limit=1 << 24)) > 2 * page
    with pytest.raises(SafeReadError, match="/proc/self/maps: the map holds more bytes than that; "
                                            f"specgate reads at most {page} bytes of it"):
        reader(maps, "the map", limit=page)
