"""Writing a bundle directory: every file through the redactor, the manifest last.

The manifest is written last, so a directory without ``manifest.json`` is an unfinished
bundle and no gate will accept it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.evidence._bundle import (
    MANIFEST_NAME,
    MARKDOWN_NAME,
    RECEIPT_NAME,
    STATEMENT_NAME,
    FileEntry,
    ac_file_name,
    bundle_digest,
    file_entry,
    manifest_document,
    schema_error_paths,
    schema_vocabulary,
)
from pytest_specgate.evidence._jsonio import JsonValue, pretty_json, replace_atomically
from pytest_specgate.evidence._markdown import render_markdown
from pytest_specgate.evidence._redact import Redactor, write_redacted

INTOTO_STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TEST_RESULT_PREDICATE = "https://in-toto.io/attestation/test-result/v0.1"
QUALIFIED = "QUALIFIED"
NOT_QUALIFIED = "NOT QUALIFIED"


@dataclass(frozen=True)
class WrittenBundle:
    path: Path
    digest: str
    markdown: str
    verdict: str
    ac_ids: tuple[str, ...]


def _ac_id(record: Mapping[str, JsonValue]) -> str:
    ac = record.get("ac")
    return str(ac.get("id")) if isinstance(ac, Mapping) else "<no AC id>"


def run_verdict(records: Sequence[Mapping[str, JsonValue]]) -> tuple[str, list[str]]:
    """QUALIFIED only when there is evidence and every AC passed and qualifies."""
    if not records:
        return NOT_QUALIFIED, ["no acceptance criteria ran"]
    reasons = []
    for record in records:
        why = record.get("not_qualifying_reasons")
        if record.get("outcome") != "passed":
            reasons.append(f"{_ac_id(record)}: outcome {record.get('outcome')}")
        if not record.get("qualifying"):
            first = why[0] if isinstance(why, list) and why else "not qualifying"
            reasons.append(f"{_ac_id(record)}: {first}")
    return (NOT_QUALIFIED if reasons else QUALIFIED), reasons


def intoto_statement(
    records: Sequence[Mapping[str, JsonValue]], ac_files: Mapping[str, FileEntry], commit: str
) -> dict[str, JsonValue]:
    """The run as an in-toto test-result Statement about the source commit, ready to sign."""
    passed, warned, failed = [], [], []
    for record in records:
        ac_id = _ac_id(record)
        if record.get("outcome") != "passed":
            failed.append(ac_id)
        elif not record.get("qualifying"):
            warned.append(ac_id)
        else:
            passed.append(ac_id)
    result = "FAILED" if failed else "WARNED" if warned or not records else "PASSED"
    return {
        "_type": INTOTO_STATEMENT_TYPE,
        "subject": [{"name": "source", "digest": {"gitCommit": commit}}],
        "predicateType": TEST_RESULT_PREDICATE,
        "predicate": {
            "result": result,
            "configuration": [
                {"name": name, "digest": {"sha256": entry.sha256}} for name, entry in sorted(ac_files.items())
            ],
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
        },
    }


def write_attachment(run_dir: Path, redactor: Redactor, relative: str, data: bytes) -> FileEntry:
    """One attachment into the bundle (before :func:`write_bundle`, which lists it)."""
    return file_entry(write_redacted(redactor, run_dir / relative, data))


def write_record(path: Path, redactor: Redactor, record: Mapping[str, JsonValue]) -> bytes:
    """An AC record, redacted value by value and checked against the schema, so redaction
    can never turn a valid record into one the gate refuses (see ``Redactor.valid_value``)."""
    data = pretty_json(redactor.valid_value(record, schema_error_paths, schema_vocabulary())).encode()
    replace_atomically(path, data)
    return data


def write_bundle(
    run_dir: Path,
    redactor: Redactor,
    run_id: str,
    records: Sequence[Mapping[str, JsonValue]],
    attachments: Mapping[str, FileEntry],
    receipt: Mapping[str, JsonValue] | None,
    commit: str | None,
    version: str,
    extra_documents: Mapping[str, JsonValue] | None = None,
) -> WrittenBundle:
    """Write AC files, statement, receipt, ``evidence.md`` and then the manifest.

    ``attachments`` are the files :func:`write_attachment` already put in ``run_dir``.
    """
    files: dict[str, FileEntry] = dict(sorted(attachments.items()))
    ordered = sorted(records, key=_ac_id)
    ac_files: dict[str, FileEntry] = {}
    for record in ordered:
        name = ac_file_name(_ac_id(record))
        ac_files[name] = file_entry(write_record(run_dir / name, redactor, record))
    files.update(ac_files)
    for name, document in sorted((extra_documents or {}).items()):
        files[name] = file_entry(write_redacted(redactor, run_dir / name, document))
    if commit is not None:
        statement = intoto_statement(ordered, ac_files, commit)
        files[STATEMENT_NAME] = file_entry(write_redacted(redactor, run_dir / STATEMENT_NAME, statement))
    verdict, _ = run_verdict(ordered)
    if receipt is not None:
        files[RECEIPT_NAME] = file_entry(write_redacted(redactor, run_dir / RECEIPT_NAME, receipt))
    digest = bundle_digest(files, run_id, version)
    markdown_bytes = write_redacted(
        redactor,
        run_dir / MARKDOWN_NAME,
        render_markdown(
            [(record, ac_files[ac_file_name(_ac_id(record))].sha256) for record in ordered], digest
        ),
    )
    files[MARKDOWN_NAME] = file_entry(markdown_bytes)
    write_redacted(redactor, run_dir / MANIFEST_NAME, manifest_document(run_id, files, version))
    return WrittenBundle(
        path=run_dir,
        digest=digest,
        markdown=markdown_bytes.decode(),
        verdict=verdict,
        ac_ids=tuple(_ac_id(record) for record in ordered),
    )
