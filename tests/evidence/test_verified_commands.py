"""``sign``, ``waivers``, ``merge`` and ``render`` act only on a bundle that verifies: every file as
the manifest lists it and every AC record valid under its schema. A record that is not (truncated,
NaN, nested too deep, not UTF-8, oversized), even when its author re-wrote the manifest around it,
is one line and exit 2, and nothing is signed, listed or written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from evidence_testkit import TEST_ENV, GitRepo, qualifying_bundle

from pytest_specgate.cli import main
from pytest_specgate.contracts.safe_read import MAX_DOCUMENT_BYTES
from pytest_specgate.evidence._bundle import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    FileEntry,
    file_entry,
    manifest_document,
)
from pytest_specgate.evidence._jsonio import pretty_json

RECORD = "records.jsonl"


def _truncated(record: bytes) -> bytes:
    return record[: len(record) // 2]


def _nan(record: bytes) -> bytes:
    return record.replace(b'"value":1.52', b'"value":NaN', 1)


def _deep(_record: bytes) -> bytes:
    return b'{"nested": ' + b"[" * 5000 + b"]" * 5000 + b"}"


def _not_utf8(record: bytes) -> bytes:
    return record.replace(b"SPEC-028", b"SPEC-\xe9\xe9\xe9", 1)


def _huge(record: bytes) -> bytes:
    return record + b" " * (MAX_DOCUMENT_BYTES + 1 - len(record))


def _schema_breach(record: bytes) -> bytes:
    document = json.loads(record)
    document["outcome"] = "glorious"
    return json.dumps(document).encode()


BAD_RECORDS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "truncated": (_truncated, "not valid JSON"),
    "nan": (_nan, "found NaN; expected a finite number"),
    "deep": (_deep, "JSON nested deeper than 100 levels"),
    "not-utf8": (_not_utf8, "expected UTF-8 text, found byte 0xe9"),
    "huge": (_huge, f"specgate reads at most {MAX_DOCUMENT_BYTES} bytes"),
    "schema": (_schema_breach, "not a valid record line"),
}


def reseal_line(bundle: Path, ac_id: str, spoil: Callable[[bytes], bytes]) -> None:
    """Spoil the AC's line of ``records.jsonl`` and rebuild the manifest around it (the file's
    entry and the line's), as the bundle's author could."""
    old = json.loads((bundle / MANIFEST_NAME).read_text())
    lines = (bundle / RECORD).read_bytes().splitlines(keepends=True)
    index = sorted(old["records"]).index(ac_id)
    lines[index] = spoil(lines[index].rstrip(b"\n")) + b"\n"
    data = b"".join(lines)
    (bundle / RECORD).write_bytes(data)
    files = {path: FileEntry(**entry) for path, entry in old["files"].items()}
    files[RECORD] = file_entry(data)
    records = {ac: FileEntry(**entry) for ac, entry in old["records"].items()}
    records[ac_id] = file_entry(lines[index])
    manifest = manifest_document(old["run_id"], files, old["specgate"], records)
    (bundle / MANIFEST_NAME).write_text(pretty_json(manifest))


def _key(directory: Path) -> Path:
    path = directory / "key.pem"
    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    )
    return path


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "sign": lambda bundle, work: ["sign", str(bundle), "--key", str(_key(work))],
    "waivers": lambda bundle, work: ["waivers", str(bundle)],
    "merge": lambda bundle, work: ["merge", str(bundle), "--out", str(work / "merged")],
    "render": lambda bundle, work: ["render", str(bundle)],
}


def _run(capsys: pytest.CaptureFixture[str], arguments: list[str]) -> tuple[int, str, str]:
    code = main(arguments)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("bad", sorted(BAD_RECORDS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_resealed_invalid_record_is_refused_in_one_line(
    command: str, bad: str, git_repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    spoil, says = BAD_RECORDS[bad]
    reseal_line(bundle, "AC-10", spoil)

    code, out, err = _run(capsys, COMMANDS[command](bundle, tmp_path))

    assert code == 2, out + err
    assert err.startswith(f"specgate {command}: error: ") and err.count("\n") == 1, err
    assert str(bundle / RECORD) in err and says in err, err
    assert not (bundle / SIGNATURE_NAME).exists()
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_edited_record_is_refused_before_acting(
    command: str, git_repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Edited after writing, manifest left as it was: the digest tells, and nothing is acted on."""
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    record = (bundle / RECORD).read_bytes()
    (bundle / RECORD).write_bytes(record.replace(b'"waiver":null', b'"waiver":{"to":"PR-Z","reason":"x"}', 1))

    code, out, err = _run(capsys, COMMANDS[command](bundle, tmp_path))

    assert code == 2, out + err
    assert err.count("\n") == 1 and f"{RECORD}: sha256 " in err and "does not match the manifest" in err, err
    assert "waived" not in out
    assert not (bundle / SIGNATURE_NAME).exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_record_symlinked_from_outside_is_refused(
    command: str, git_repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The link points at the very bytes the manifest lists, so only the reader's refusal stops it."""
    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    outside = tmp_path / "outside.json"
    outside.write_bytes((bundle / RECORD).read_bytes())
    (bundle / RECORD).unlink()
    (bundle / RECORD).symlink_to(outside)

    code, out, err = _run(capsys, COMMANDS[command](bundle, tmp_path))

    assert code == 2, out + err
    refused = f"{RECORD} (a symlink)" if command == "sign" else f"{RECORD}: bundle file is a symbolic link"
    assert err.count("\n") == 1 and refused in err, err


def test_a_merge_that_cannot_be_written_leaves_no_output(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk half way through the merged bundle: one line, and no half bundle left behind."""
    import errno
    import os

    import pytest_specgate.evidence._writer as writer_module

    def disk_full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    bundle = qualifying_bundle(git_repo.path, TEST_ENV).path
    monkeypatch.setattr(writer_module, "write_unlisted", disk_full)

    code, _, err = _run(capsys, ["merge", str(bundle), "--out", str(tmp_path / "merged")])

    assert code == 2 and err.endswith("cannot write the merged bundle: No space left on device\n"), err
    assert not (tmp_path / "merged").exists()
