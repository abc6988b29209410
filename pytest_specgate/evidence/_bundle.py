"""Bundle layout on disk: records, attachments, receipt, manifest; loading and verifying.

Two formats are read. Format 1 (manifest ``specgate.manifest/v2``, and v1 before it) holds one
``<AC>.json`` per AC, each repeating the run's facts. Format 2 (``specgate.manifest/v3``, written
now) holds the run's facts once in ``run.json`` and one line per AC in ``records.jsonl``
(``_record_split``); its manifest lists every line's sha256 under ``records`` besides every
file's, so one AC's record is verified, bound and signed on its own. :func:`read_records` hands
both back as the same per-AC :class:`AcRecord` view, the run's facts joined back in.

The manifest lists the sha256 and size of every file. ``evidence.md`` carries the bundle
digest, so the digest cannot cover its bytes: the bundle digest is the sha256 of the canonical
JSON of every manifest entry except ``evidence.md`` (and, in format 2, of every record line's).
The digest still binds it, because ``evidence.md`` must be exactly what the digest-covered
records render: the gate recomputes the digest from the manifest, checks every file against the
manifest and renders ``evidence.md`` again from the records to compare.

``statement.intoto.dsse.json``, the signature, is the one file the manifest leaves out: it is
written after the manifest (possibly by ``specgate sign`` on another day) and its signed subjects
cover every other file, the manifest included, and every record line (see ``_signing``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_specgate.contracts.acceptance import is_ac_id
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.safe_read import (
    MAX_DOCUMENT_BYTES,
    SafeReadError,
    digest_regular_file,
    read_regular_file,
)
from pytest_specgate.contracts.validation import decode_utf8, parse_json, read_json_file
from pytest_specgate.evidence._acrecord import AcRecord, RecordError, RunTyping
from pytest_specgate.evidence._jsonio import canonical_json, pretty_json, sha256_hex
from pytest_specgate.evidence._record_split import (
    RECORDS_NAME,
    RUN_FACTS_NAME,
    RUN_FACTS_SCHEMA_ID,
    RUN_KEY,
    RunFacts,
    join_record,
    record_line_name,
)
from pytest_specgate.evidence._schema import record_line_problems, run_facts_problems

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
MANIFEST_SCHEMA_ID = "specgate.manifest/v3"
"""v3 is format 2 (``run.json`` and ``records.jsonl``, every line's digest under ``records``); v2
listed one ``specgate.evidence/v3`` file per AC (compact JSON), v1 one v2 file (indented)."""
FORMAT_1_MANIFEST_SCHEMA_IDS = frozenset({"specgate.manifest/v2", "specgate.manifest/v1"})
READABLE_MANIFEST_SCHEMA_IDS = frozenset({MANIFEST_SCHEMA_ID, *FORMAT_1_MANIFEST_SCHEMA_IDS})
_MANIFEST_FIELDS = frozenset({"schema", "run_id", "specgate", "files", "bundle_sha256"})
_FORMAT_2_MANIFEST_FIELDS = _MANIFEST_FIELDS | {"records"}


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


def bundle_digest(
    files: Mapping[str, FileEntry], run_id: str, version: str, records: Mapping[str, FileEntry] | None = None
) -> str:
    """What the PR body's ``bundle-sha256`` binds: every manifest field but itself.

    ``evidence.md`` carries this digest, so its own entry cannot be part of it;
    the gate still checks evidence.md against the manifest byte for byte. ``records``: a
    format-2 bundle's record lines by AC (None: format 1, whose digest covers no such field).
    """
    covered: dict[str, JsonValue] = {
        "files": {path: entry.to_dict() for path, entry in files.items() if path != MARKDOWN_NAME},
        "run_id": run_id,
        "specgate": version,
    }
    if records is not None:
        covered["records"] = {ac_id: entry.to_dict() for ac_id, entry in records.items()}
    return sha256_hex(canonical_json(covered).encode())


def manifest_document(
    run_id: str, files: Mapping[str, FileEntry], version: str, records: Mapping[str, FileEntry]
) -> dict[str, JsonValue]:
    return {
        "schema": MANIFEST_SCHEMA_ID,
        "run_id": run_id,
        "specgate": version,
        "files": {path: files[path].to_dict() for path in sorted(files)},
        "records": {ac_id: records[ac_id].to_dict() for ac_id in sorted(records)},
        "bundle_sha256": bundle_digest(files, run_id, version, records),
    }


def ac_file_name(ac_id: str) -> str:
    return f"{ac_id}.json"


@dataclass
class BundleReads:
    """What was read of a format-2 bundle, so the gate's per-AC reads after :func:`read_records`
    (or :func:`verify_bundle`) read and validate nothing again."""

    lines: dict[str, bytes] | None = None
    runs: dict[str, RunFacts] | None = None
    typed: dict[str, AcRecord] = field(default_factory=dict)
    typing: RunTyping = field(default_factory=RunTyping)
    """Each run's facts typed once for all its records (its ``run.json`` entry, parsed here)."""


@dataclass(frozen=True)
class Bundle:
    """A bundle as found on disk; ``digest`` is recomputed, never read from the manifest.

    ``records``: a format-2 bundle's record lines by AC id (None: format 1, one file per AC).
    """

    path: Path
    run_id: str
    files: Mapping[str, FileEntry]
    digest: str
    stated_digest: str | None
    manifest_problem: str | None = None
    records: Mapping[str, FileEntry] | None = None
    read: BundleReads = field(default_factory=lambda: BundleReads(), compare=False, repr=False)

    def ac_ids(self) -> list[str]:
        if self.records is not None:
            return sorted(self.records)
        return sorted(
            Path(name).stem
            for name in self.files
            if "/" not in name and name.endswith(".json") and is_ac_id(Path(name).stem)
        )

    def record_entry(self, ac_id: str) -> FileEntry | None:
        """The sha256 and size of the AC's record as the manifest lists it: what a PR body's
        ``ac-sha256`` binds (its line in format 2, its file in format 1); None: no such AC."""
        if self.records is not None:
            return self.records.get(ac_id)
        return self.files.get(ac_file_name(ac_id))

    def record_name(self, ac_id: str) -> str:
        """How messages name the AC's record: ``records.jsonl#AC-10`` or ``AC-10.json``."""
        return record_line_name(ac_id) if self.records is not None else ac_file_name(ac_id)


def read_bundle_json(path: Path) -> tuple[bytes, JsonValue]:
    """A bundle file's bytes and what they parse to, from one bounded read of a regular file
    (no symlink, FIFO or device), nesting bounded; every failure is one :class:`BundleError`."""
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


def _entries(manifest_path: Path, document: Mapping[str, JsonValue], name: str) -> dict[str, FileEntry]:
    raw = document.get(name)
    if not isinstance(raw, Mapping):
        raise BundleError(f"{manifest_path}: {name!r} must be an object")
    return {str(key): _entry_from(manifest_path, str(key), value) for key, value in raw.items()}


def load_bundle(path: Path) -> Bundle:
    manifest_path = path / MANIFEST_NAME
    data, document = read_bundle_json(manifest_path)
    if not isinstance(document, Mapping) or document.get("schema") not in READABLE_MANIFEST_SCHEMA_IDS:
        raise BundleError(
            f"{manifest_path}: not a specgate manifest "
            f"({' or '.join(sorted(READABLE_MANIFEST_SCHEMA_IDS, reverse=True))})"
        )
    files = _entries(manifest_path, document, "files")
    records = None if document["schema"] in FORMAT_1_MANIFEST_SCHEMA_IDS else _entries(
        manifest_path, document, "records")
    for ac_id in records or ():
        if not is_ac_id(ac_id):
            raise BundleError(f"{manifest_path}: records[{ac_id!r}] is not an AC id")
    stated = document.get("bundle_sha256")
    run_id, version = document.get("run_id"), document.get("specgate")
    if not isinstance(run_id, str) or not isinstance(version, str):
        raise BundleError(f"{manifest_path}: 'run_id' and 'specgate' must be strings")
    return Bundle(
        path=path,
        run_id=run_id,
        files=files,
        digest=bundle_digest(files, run_id, version, records),
        stated_digest=stated if isinstance(stated, str) else None,
        manifest_problem=_manifest_form_problem(data, document),
        records=records,
    )


def _manifest_form_problem(data: bytes, document: Mapping[str, JsonValue]) -> str | None:
    """A manifest is exactly what the writer wrote: known fields, canonical bytes."""
    format_1 = document["schema"] in FORMAT_1_MANIFEST_SCHEMA_IDS
    expected = _MANIFEST_FIELDS if format_1 else _FORMAT_2_MANIFEST_FIELDS
    if set(document) != expected:
        return (f"manifest fields are {sorted(document)}, expected {sorted(expected)}")
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
            problems.append(_entry_mismatch(name, actual, expected))
    if bundle.records is not None and not problems:
        problems += _record_line_problems(bundle)
    return problems


def _entry_mismatch(name: str, actual: FileEntry, expected: FileEntry) -> str:
    return (
        f"{name}: sha256 {actual.sha256[:12]}… size {actual.size} does not match the manifest "
        f"(sha256 {expected.sha256[:12]}… size {expected.size})"
    )


def record_lines(data: bytes) -> list[bytes]:
    """The lines of ``records.jsonl``, each with its newline (the bytes its digest covers)."""
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _record_line_problems(bundle: Bundle) -> list[str]:
    """Format 2: ``records.jsonl`` holds one line per AC of the manifest's ``records``, in AC order,
    each with the sha256 and size listed for it (the file's own entry was checked already)."""
    records = bundle.records or {}
    if RECORDS_NAME not in bundle.files:
        return [f"{RECORDS_NAME}: not listed in the manifest, which lists {len(records)} record lines"]
    try:
        lines = record_lines(read_bundle_bytes(bundle.path / RECORDS_NAME))
    except BundleError as error:
        return [str(error)]
    ac_ids = sorted(records)
    if len(lines) != len(ac_ids):
        return [f"{RECORDS_NAME}: {len(lines)} lines, but the manifest lists {len(ac_ids)} records"]
    problems = [
        _entry_mismatch(record_line_name(ac_id), actual, records[ac_id])
        for ac_id, line in zip(ac_ids, lines, strict=True)
        if (actual := file_entry(line)) != records[ac_id]
    ]
    bundle.read.lines = dict(zip(ac_ids, lines, strict=True))
    return problems


def read_ac_record(bundle: Bundle, ac_id: str) -> AcRecord:
    """Parse and validate one AC's record, the run's facts joined in (call only after
    :func:`verify_bundle`)."""
    if bundle.records is not None:
        return _format_2_record(bundle, ac_id)
    path = bundle.path / ac_file_name(ac_id)
    _, record = read_bundle_json(path)
    try:
        return AcRecord.from_json(record, str(path))
    except RecordError as error:
        raise BundleError(str(error)) from None


def read_records(bundle: Bundle) -> dict[str, AcRecord]:
    """Every AC's record of a format-1 or format-2 bundle as the one view the judge reads."""
    return {ac_id: read_ac_record(bundle, ac_id) for ac_id in bundle.ac_ids()}


def _format_2_record(bundle: Bundle, ac_id: str) -> AcRecord:
    """One line joined with its run's facts; each run's facts are read and validated once."""
    typed = bundle.read.typed
    if ac_id in typed:
        return typed[ac_id]
    where = f"{bundle.path / RECORDS_NAME}#{ac_id}"
    line_bytes = _lines(bundle).get(ac_id)
    if line_bytes is None:
        raise BundleError(f"{where}: no such record line")
    try:
        line = parse_json(decode_utf8(line_bytes, where), where)
    except SpecgateInputError as error:
        raise BundleError(str(error)) from None
    problems = record_line_problems(line)
    if problems or not isinstance(line, Mapping):
        raise BundleError(f"{where}: not a valid record line: {(problems or ['not an object'])[0]}")
    if line["ac"]["id"] != ac_id:
        raise BundleError(f"{where}: the line is the record of {line['ac']['id']}")
    run = _run_facts(bundle).get(str(line[RUN_KEY]))
    if run is None:
        raise BundleError(f"{where}: names run facts {line[RUN_KEY]!r}, which {RUN_FACTS_NAME} does not hold")
    try:
        record = typed[ac_id] = AcRecord.built(join_record(line, run), bundle.read.typing)
    except IndexError as error:
        raise BundleError(f"{where}: {error}") from None
    return record


def _lines(bundle: Bundle) -> Mapping[str, bytes]:
    if bundle.read.lines is None:
        data = read_bundle_bytes(bundle.path / RECORDS_NAME)
        bundle.read.lines = dict(zip(sorted(bundle.records or {}), record_lines(data), strict=False))
    return bundle.read.lines


def _run_facts(bundle: Bundle) -> Mapping[str, RunFacts]:
    """``run.json``'s runs, each validated against the run facts schema."""
    if bundle.read.runs is not None:
        return bundle.read.runs
    path = bundle.path / RUN_FACTS_NAME
    _, document = read_bundle_json(path)
    if not isinstance(document, Mapping) or document.get("schema") != RUN_FACTS_SCHEMA_ID:
        raise BundleError(f"{path}: not a {RUN_FACTS_SCHEMA_ID} document")
    raw = document.get("runs")
    if set(document) != {"schema", "runs"} or not isinstance(raw, Mapping):
        raise BundleError(f"{path}: expected the fields 'schema' and 'runs' (an object of runs by key)")
    runs: dict[str, RunFacts] = {}
    for key, facts in raw.items():
        problems = run_facts_problems(facts)
        if problems:
            raise BundleError(f"{path}: runs[{key!r}] is not a valid run's facts: {problems[0]}")
        runs[str(key)] = RunFacts(facts)
    bundle.read.runs = runs
    return runs
