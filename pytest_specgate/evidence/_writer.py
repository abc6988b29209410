"""Writing a bundle directory: every file through the redactor, the manifest last.

The manifest is written last, so a directory without ``manifest.json`` is an unfinished
bundle and no gate will accept it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import AcRecord, RecordError
from pytest_specgate.evidence._bundle import (
    MANIFEST_NAME,
    MARKDOWN_NAME,
    NONCE_FIELD,
    RECEIPT_NAME,
    STATEMENT_NAME,
    FileEntry,
    ac_file_name,
    bundle_digest,
    file_entry,
    manifest_document,
)
from pytest_specgate.evidence._jsonio import record_json, replace_atomically, write_unlisted
from pytest_specgate.evidence._markdown import render_markdown
from pytest_specgate.evidence._policy import POLICY_VERSION, PolicyVerdict, judge
from pytest_specgate.evidence._redact import Redactor, write_redacted
from pytest_specgate.evidence._schema import schema_error_paths, schema_vocabulary

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


def run_verdict(judged: Sequence[tuple[AcRecord, PolicyVerdict]]) -> tuple[str, list[str]]:
    """QUALIFIED only when there is evidence and every AC passed and qualifies under the policy."""
    if not judged:
        return NOT_QUALIFIED, ["no acceptance criteria ran"]
    reasons = []
    for record, verdict in judged:
        if verdict.outcome != "passed":
            reasons.append(f"{record.ac.id}: outcome {verdict.outcome}")
        if not verdict.qualifying:
            reasons.append(f"{record.ac.id}: {verdict.reasons[0] if verdict.reasons else 'not qualifying'}")
    return (NOT_QUALIFIED if reasons else QUALIFIED), reasons


def intoto_statement(
    judged: Sequence[tuple[AcRecord, PolicyVerdict]], ac_files: Mapping[str, FileEntry], commit: str,
    job_nonce: str | None = None,
) -> dict[str, JsonValue]:
    """The run as an in-toto test-result Statement about the source commit, ready to sign; a fleet
    job's nonce (``--specgate-nonce``) goes in its predicate as ``nonce``."""
    passed, warned, failed = [], [], []
    for record, verdict in judged:
        if verdict.outcome != "passed":
            failed.append(record.ac.id)
        elif not verdict.qualifying:
            warned.append(record.ac.id)
        else:
            passed.append(record.ac.id)
    result = "FAILED" if failed else "WARNED" if warned or not judged else "PASSED"
    return {
        "_type": INTOTO_STATEMENT_TYPE,
        "subject": [{"name": "source", "digest": {"gitCommit": commit}}],
        "predicateType": TEST_RESULT_PREDICATE,
        "predicate": {
            "result": result,
            "policy": POLICY_VERSION,
            "configuration": [
                {"name": name, "digest": {"sha256": entry.sha256}} for name, entry in sorted(ac_files.items())
            ],
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
            **({} if job_nonce is None else {NONCE_FIELD: job_nonce}),
        },
    }


def write_attachment(run_dir: Path, redactor: Redactor, relative: str, data: bytes) -> FileEntry:
    """One attachment into the bundle (before :func:`write_bundle`, which lists it)."""
    return file_entry(write_redacted(redactor, run_dir / relative, data))


def encode_record(
    where: str, redactor: Redactor, record: Mapping[str, JsonValue], redacted: JsonValue
) -> tuple[bytes, AcRecord]:
    """An AC record as it is to be written and as typed, given its form through the redactor
    (``redacted``: ``redactor.value(record)``, or its item of ``redactor.values``).

    The collector builds records from parts redacted where their text entered, so the pass
    here normally changes nothing and the record, right by construction, needs no schema
    check. A record the pass did change is validated; if the schema refuses it, the repair of
    ``Redactor.valid_value`` runs, so redaction can never turn a valid record into one the
    gate refuses (validated once more after that repair). A record still invalid raises
    :class:`RecordError` before it is written. Records are written compact, by the C encoder.
    """
    if redacted == record and isinstance(redacted, Mapping):
        typed = AcRecord.built(redacted)
    else:
        try:
            typed = AcRecord.from_json(redacted, where)
        except RecordError:
            repaired = redactor.valid_value(record, schema_error_paths, schema_vocabulary())
            typed = AcRecord.from_json(repaired, where)
    return record_json(typed.document).encode(), typed


def write_bundle(
    run_dir: Path,
    redactor: Redactor,
    run_id: str,
    records: Sequence[Mapping[str, JsonValue]],
    attachments: Mapping[str, FileEntry],
    receipt_for: Callable[[str, list[str]], Mapping[str, JsonValue]] | None,
    commit: str | None,
    version: str,
    extra_documents: Mapping[str, JsonValue] | None = None,
    job_nonce: str | None = None,
) -> WrittenBundle:
    """Write AC files, statement, receipt, ``evidence.md`` and then the manifest.

    ``attachments`` are the files :func:`write_attachment` already put in ``run_dir``;
    ``receipt_for(verdict, reasons)`` builds the receipt from the run verdict of what was written.
    """
    files: dict[str, FileEntry] = dict(sorted(attachments.items()))
    ac_files: dict[str, FileEntry] = {}
    typed: dict[str, AcRecord] = {}
    # The AC files are created by a thread beside this one (creating a file costs more than
    # encoding its record); every one of them is done before the manifest, still written last.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="specgate-evidence") as creator:
        created = []
        ordered = sorted(records, key=_ac_id)
        for record, redacted in zip(ordered, redactor.values(ordered), strict=True):
            name = ac_file_name(_ac_id(record))
            data, typed[name] = encode_record(name, redactor, record, redacted)
            created.append(creator.submit(write_unlisted, run_dir / name, data))
            ac_files[name] = file_entry(data)
        files.update(ac_files)
        # What is judged and rendered is what was written: the redacted record, validated once.
        judged = [(typed[name], judge(typed[name])) for name in sorted(typed)]
        for name, document in sorted((extra_documents or {}).items()):
            files[name] = file_entry(write_redacted(redactor, run_dir / name, document))
        if commit is not None:
            statement = intoto_statement(judged, ac_files, commit, job_nonce)
            files[STATEMENT_NAME] = file_entry(write_redacted(redactor, run_dir / STATEMENT_NAME, statement))
        verdict, reasons = run_verdict(judged)
        if receipt_for is not None:
            receipt = receipt_for(verdict, reasons)
            files[RECEIPT_NAME] = file_entry(write_redacted(redactor, run_dir / RECEIPT_NAME, receipt))
        digest = bundle_digest(files, run_id, version)
        rendered = render_markdown(
            [(record, outcome, ac_files[ac_file_name(record.ac.id)].sha256) for record, outcome in judged],
            digest,
        )
        # By lines: the gate refuses an evidence.md that is not exactly what its records
        # render, so this pass is a last guard that normally changes nothing; a line at a time,
        # a line repeated in every AC block costs a memo lookup.
        markdown_bytes = redactor.by_lines(rendered).encode()
        replace_atomically(run_dir / MARKDOWN_NAME, markdown_bytes)
        files[MARKDOWN_NAME] = file_entry(markdown_bytes)
    for done in created:
        done.result()
    write_redacted(redactor, run_dir / MANIFEST_NAME, manifest_document(run_id, files, version))
    return WrittenBundle(
        path=run_dir,
        digest=digest,
        markdown=markdown_bytes.decode(),
        verdict=verdict,
        ac_ids=tuple(record.ac.id for record, _ in judged),
    )
