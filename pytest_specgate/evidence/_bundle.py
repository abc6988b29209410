"""Bundle layout on disk: AC files, attachments, receipt, manifest; loading and verifying.

The manifest lists the sha256 and size of every file. ``evidence.md`` carries the bundle
digest, so the digest cannot cover its bytes: the bundle digest is the sha256 of the canonical
JSON of every manifest entry except ``evidence.md``. The digest still binds it, because
``evidence.md`` must be exactly what the digest-covered records render: the gate recomputes
the digest from the manifest, checks every file against the manifest and renders
``evidence.md`` again from the records to compare.

``statement.intoto.dsse.json``, the signature, is the one file the manifest leaves out: it is
written after the manifest (possibly by ``specgate sign`` on another day) and its signed subjects
cover every other file, the manifest included (see ``_signing``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.contracts.acceptance import is_ac_id
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.safe_read import (
    MAX_DOCUMENT_BYTES,
    SafeReadError,
    digest_regular_file,
    read_regular_file,
)
from pytest_specgate.evidence._acrecord import AcRecord, RecordError
from pytest_specgate.evidence._jsonio import canonical_json, pretty_json, sha256_hex

MANIFEST_NAME = "manifest.json"
MARKDOWN_NAME = "evidence.md"
RECEIPT_NAME = "receipt.json"
RECEIPT_SCHEMA_ID = "specgate.receipt/v1"
STATEMENT_NAME = "statement.intoto.json"
NONCE_FIELD = "nonce"
"""The statement predicate's field holding a fleet job's ``--specgate-nonce``."""
SIGNATURE_NAME = "statement.intoto.dsse.json"
"""The signed statement sits beside the manifest, not in it: its subjects cover every other file."""
PASSPHRASE_ENV = "SPECGATE_SIGN_PASSPHRASE"
"""Where ``specgate sign`` and ``--specgate-sign-key`` read a key's passphrase (named here, not in
``_signing``, so the command's help builds without the ``sign`` extra)."""
MERGE_NAME = "merge.json"
MANIFEST_SCHEMA_ID = "specgate.manifest/v2"
"""v2 lists ``specgate.evidence/v3`` records (compact JSON); v1 listed v2 records (indented)."""
READABLE_MANIFEST_SCHEMA_IDS = frozenset({MANIFEST_SCHEMA_ID, "specgate.manifest/v1"})
_MANIFEST_FIELDS = frozenset({"schema", "run_id", "specgate", "files", "bundle_sha256"})


class BundleError(Exception):
    """A bundle that cannot be read at all (exit 2): names the file and what was wrong."""


@dataclass(frozen=True)
class FileEntry:
    sha256: str
    size: int

    def to_dict(self) -> dict[str, JsonValue]:
        return {"sha256": self.sha256, "size": self.size}


def file_entry(data: bytes) -> FileEntry:
    return FileEntry(sha256=sha256_hex(data), size=len(data))


def bundle_digest(files: Mapping[str, FileEntry], run_id: str, version: str) -> str:
    """What the PR body's ``bundle-sha256`` binds: every manifest field but itself.

    ``evidence.md`` carries this digest, so its own entry cannot be part of it;
    the gate still checks evidence.md against the manifest byte for byte.
    """
    covered = {path: entry.to_dict() for path, entry in files.items() if path != MARKDOWN_NAME}
    return sha256_hex(canonical_json({"files": covered, "run_id": run_id, "specgate": version}).encode())


def manifest_document(run_id: str, files: Mapping[str, FileEntry], version: str) -> dict[str, JsonValue]:
    return {
        "schema": MANIFEST_SCHEMA_ID,
        "run_id": run_id,
        "specgate": version,
        "files": {path: files[path].to_dict() for path in sorted(files)},
        "bundle_sha256": bundle_digest(files, run_id, version),
    }


def ac_file_name(ac_id: str) -> str:
    return f"{ac_id}.json"


@dataclass(frozen=True)
class Bundle:
    """A bundle as found on disk; ``digest`` is recomputed, never read from the manifest."""

    path: Path
    run_id: str
    files: Mapping[str, FileEntry]
    digest: str
    stated_digest: str | None
    manifest_problem: str | None = None

    def ac_ids(self) -> list[str]:
        return sorted(
            Path(name).stem
            for name in self.files
            if "/" not in name and name.endswith(".json") and is_ac_id(Path(name).stem)
        )


def read_bundle_json(path: Path) -> tuple[bytes, JsonValue]:
    """A bundle file's bytes and what they parse to, from one bounded read of a regular file
    (no symlink, FIFO or device), nesting bounded; every failure is one :class:`BundleError`."""
    from pytest_specgate.contracts.errors import SpecgateInputError
    from pytest_specgate.contracts.validation import read_json_file

    try:
        return read_json_file(path, what="bundle file")
    except SpecgateInputError as error:
        raise BundleError(str(error)) from None


def read_bundle_bytes(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """A bundle file's bytes through the safe reader (a regular file, at most ``limit`` bytes)."""
    try:
        return read_regular_file(path, "bundle file", limit=limit)
    except SafeReadError as error:
        raise BundleError(str(error)) from None


def _entry_from(path: Path, name: str, raw: JsonValue) -> FileEntry:
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("sha256"), str)
        or not isinstance(raw.get("size"), int)
    ):
        raise BundleError(f"{path}: files[{name!r}] must be {{'sha256': str, 'size': int}}, found {raw!r}")
    return FileEntry(sha256=str(raw["sha256"]), size=int(raw["size"]))


def load_bundle(path: Path) -> Bundle:
    manifest_path = path / MANIFEST_NAME
    data, document = read_bundle_json(manifest_path)
    if not isinstance(document, Mapping) or document.get("schema") not in READABLE_MANIFEST_SCHEMA_IDS:
        raise BundleError(
            f"{manifest_path}: not a specgate manifest "
            f"({' or '.join(sorted(READABLE_MANIFEST_SCHEMA_IDS, reverse=True))})"
        )
    raw_files = document.get("files")
    if not isinstance(raw_files, Mapping):
        raise BundleError(f"{manifest_path}: 'files' must be an object")
    files = {str(name): _entry_from(manifest_path, str(name), raw) for name, raw in raw_files.items()}
    stated = document.get("bundle_sha256")
    run_id, version = document.get("run_id"), document.get("specgate")
    if not isinstance(run_id, str) or not isinstance(version, str):
        raise BundleError(f"{manifest_path}: 'run_id' and 'specgate' must be strings")
    return Bundle(
        path=path,
        run_id=run_id,
        files=files,
        digest=bundle_digest(files, run_id, version),
        stated_digest=stated if isinstance(stated, str) else None,
        manifest_problem=_manifest_form_problem(data, document),
    )


def _manifest_form_problem(data: bytes, document: Mapping[str, JsonValue]) -> str | None:
    """A manifest is exactly what the writer wrote: known fields, canonical bytes."""
    if set(document) != _MANIFEST_FIELDS:
        return (f"manifest fields are {sorted(document)}, expected {sorted(_MANIFEST_FIELDS)}")
    if data != pretty_json(document).encode():
        return "manifest is not byte-identical to its canonical form (edited after writing)"
    return None


def find_bundles(directory: Path) -> list[Bundle]:
    """``directory`` itself when it is a bundle, else every bundle directly below it."""
    if not directory.is_dir():
        raise BundleError(f"{directory}: not a directory")
    if _has_manifest(directory):
        return [load_bundle(directory)]
    children = sorted(directory.iterdir())
    return [load_bundle(child) for child in children if child.is_dir() and _has_manifest(child)]


def _has_manifest(directory: Path) -> bool:
    """A ``manifest.json`` of any kind, a dangling symlink too: the reader refuses what is not a file."""
    return os.path.lexists(directory / MANIFEST_NAME)


def files_on_disk(path: Path, *, with_manifest: bool = False) -> dict[str, Path]:
    """Every file of the bundle but its signature (and, unless asked, its manifest)."""
    left_out = {SIGNATURE_NAME} if with_manifest else {SIGNATURE_NAME, MANIFEST_NAME}
    return {
        file.relative_to(path).as_posix(): file
        for file in sorted(path.rglob("*"))
        if file.relative_to(path).as_posix() not in left_out and (file.is_file() or file.is_symlink())
    }


def verify_bundle(bundle: Bundle) -> list[str]:
    """Every way the files differ from the manifest, byte for byte."""
    problems: list[str] = []
    if bundle.manifest_problem is not None:
        problems.append(f"{MANIFEST_NAME}: {bundle.manifest_problem}")
    if bundle.stated_digest != bundle.digest:
        problems.append(f"{MANIFEST_NAME}: bundle_sha256 does not match its own contents")
    on_disk = files_on_disk(bundle.path)
    for name in sorted(set(bundle.files) - set(on_disk)):
        problems.append(f"{name}: listed in the manifest but missing")
    for name in sorted(set(on_disk) - set(bundle.files)):
        problems.append(f"{name}: present but not listed in the manifest")
    for name in sorted(set(on_disk) & set(bundle.files)):
        try:
            sha256, size = digest_regular_file(on_disk[name], "bundle file")
        except SafeReadError as error:
            problems.append(f"{name}: {str(error).removeprefix(f'{on_disk[name]}: ')}")
            continue
        actual = FileEntry(sha256=sha256, size=size)
        expected = bundle.files[name]
        if actual != expected:
            problems.append(
                f"{name}: sha256 {actual.sha256[:12]}… size {actual.size} does not match the manifest "
                f"(sha256 {expected.sha256[:12]}… size {expected.size})"
            )
    return problems


def read_ac_record(bundle: Bundle, ac_id: str) -> AcRecord:
    """Parse and validate one AC file (call only after :func:`verify_bundle`)."""
    path = bundle.path / ac_file_name(ac_id)
    _, record = read_bundle_json(path)
    try:
        return AcRecord.from_json(record, str(path))
    except RecordError as error:
        raise BundleError(str(error)) from None


def read_records(bundle: Bundle) -> dict[str, AcRecord]:
    return {ac_id: read_ac_record(bundle, ac_id) for ac_id in bundle.ac_ids()}
