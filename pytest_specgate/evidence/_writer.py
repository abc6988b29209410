"""Writing a format-2 bundle directory: records redacted where their text entered, the manifest last.

The manifest is written last, so a directory without ``manifest.json`` is an unfinished
bundle and no gate will accept it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    bundle_digest,
    file_entry,
    manifest_document,
)
from pytest_specgate.evidence._jsonio import pretty_json, record_json, replace_atomically, write_unlisted
from pytest_specgate.evidence._markdown import render_markdown
from pytest_specgate.evidence._policy import POLICY_VERSION, JudgedRecord, PolicyVerdict, judge
from pytest_specgate.evidence._record_split import (
    RECORDS_NAME,
    RUN_FACTS_NAME,
    RUN_KEY,
    RunFacts,
    join_record,
    record_line_name,
    run_facts_document,
    split_records,
)
from pytest_specgate.evidence._records import redacted_as_shown
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
    judged: Sequence[tuple[AcRecord, PolicyVerdict]], records: Mapping[str, FileEntry], commit: str,
    job_nonce: str | None = None,
) -> dict[str, JsonValue]:
    """The run as an in-toto test-result Statement about the source commit, ready to sign; its
    configuration names each AC's record line by the sha256 the manifest lists for it. A fleet
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
                {"name": record_line_name(ac_id), "digest": {"sha256": entry.sha256}}
                for ac_id, entry in sorted(records.items())
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


def redacted_record(where: str, redactor: Redactor, record: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A record read from another bundle, redacted by this host's redactor (``specgate merge``).

    If the redacted record fails the schema, the repair of ``Redactor.valid_value`` runs, so
    redaction can never turn a valid record into one the gate refuses (validated once more after
    that repair); a record still invalid raises :class:`RecordError`.
    """
    redacted = _as_shown(redactor, redactor.value(record))
    if redacted == record and isinstance(redacted, dict):
        return redacted
    try:
        typed = AcRecord.from_json(redacted, where)
    except RecordError:
        repaired = redactor.valid_value(record, schema_error_paths, schema_vocabulary())
        typed = AcRecord.from_json(_as_shown(redactor, repaired), where)
    return dict(typed.document)


def _as_shown(redactor: Redactor, record: JsonValue) -> JsonValue:
    """``record`` with each test's message and each measurement's name and unit redacted as
    evidence.md shows them, on one line (:func:`~._records.redacted_as_shown`): a bundle written
    before its collector did so may hold ``db password:`` and a value on two lines. Rows are
    copied where a string changes (:meth:`Redactor.values` shares containers)."""
    if not isinstance(record, Mapping):
        return record
    shown: dict[str, JsonValue] = dict(record)
    for field, names in (("tests", ("message",)), ("measurements", ("name", "unit"))):
        rows = record.get(field)
        if isinstance(rows, list):
            shown[field] = [_row_as_shown(redactor, row, names) for row in rows]
    return shown


def _row_as_shown(redactor: Redactor, row: JsonValue, names: tuple[str, ...]) -> JsonValue:
    if not isinstance(row, Mapping):
        return row
    changed = {name: redacted_as_shown(redactor, text) for name in names
               if isinstance(text := row.get(name), str) and "\n" in text}
    return {**row, **changed} if changed else row


def record_line_bytes(own: Mapping[str, JsonValue]) -> bytes:
    """One AC's line of ``records.jsonl``: its canonical JSON (the C encoder) and a newline."""
    return record_json(own).encode()


def _write_built(path: Path, document: Mapping[str, JsonValue]) -> FileEntry:
    """A file built only from parts already redacted (AC ids, digests, the records' reasons and
    the run's ids): written as it is, with no pass through the redactor."""
    data = pretty_json(document).encode()
    replace_atomically(path, data)
    return file_entry(data)


def _judged_line(own: Mapping[str, JsonValue], run: RunFacts) -> tuple[AcRecord, PolicyVerdict]:
    """A record that came without its verdict (``merge``'s), joined back and judged."""
    record = AcRecord.built(join_record(own, run))
    return record, judge(record)


def write_bundle(
    run_dir: Path,
    redactor: Redactor,
    run_id: str,
    records: Sequence[Mapping[str, JsonValue] | JudgedRecord],
    attachments: Mapping[str, FileEntry],
    receipt_for: Callable[[str, list[str]], Mapping[str, JsonValue]] | None,
    commit: str | None,
    version: str,
    extra_documents: Mapping[str, JsonValue] | None = None,
    job_nonce: str | None = None,
    extras_redacted: bool = False,
) -> WrittenBundle:
    """Write a format-2 bundle: ``records.jsonl`` and ``run.json``, statement, receipt,
    ``evidence.md`` and then the manifest.

    ``records`` are valid ``specgate.evidence/v3`` documents whose text is redacted already: the
    collector builds them from parts redacted where their text entered the run and hands each
    over judged once (:class:`JudgedRecord`, its verdict taken as it is), ``merge`` passes
    records of other bundles through :func:`redacted_record` and they are judged here. Nothing
    here redacts them again, and ``evidence.md``, the statement, the receipt (``receipt_for``
    hands it back redacted) and the manifest are built from them as they are. ``attachments``
    are the files :func:`write_attachment` already put in ``run_dir``; ``receipt_for(verdict,
    reasons)`` builds the receipt from the run verdict of what was written. ``extra_documents``
    pass the redactor unless ``extras_redacted`` says they are built only from strings redacted
    or found clean already (``merge.json`` of records ``records_read_clean`` passed).
    """
    files: dict[str, FileEntry] = dict(sorted(attachments.items()))
    prejudged = {str(item.document["ac"]["id"]): item for item in records if isinstance(item, JudgedRecord)}
    split = split_records(item.document if isinstance(item, JudgedRecord) else item for item in records)
    runs = {key: RunFacts(facts) for key, facts in split.runs.items()}
    lines = {ac_id: record_line_bytes(own) for ac_id, own in split.lines}
    record_entries = {ac_id: file_entry(data) for ac_id, data in lines.items()}
    records_data = b"".join(lines.values())
    write_unlisted(run_dir / RECORDS_NAME, records_data)
    files[RECORDS_NAME] = file_entry(records_data)
    run_facts = pretty_json(run_facts_document(split.runs)).encode()
    write_unlisted(run_dir / RUN_FACTS_NAME, run_facts)
    files[RUN_FACTS_NAME] = file_entry(run_facts)
    judged = [
        (prejudged[ac_id].record, prejudged[ac_id].verdict) if ac_id in prejudged
        else _judged_line(own, runs[str(own[RUN_KEY])])
        for ac_id, own in split.lines
    ]
    for name, document in sorted((extra_documents or {}).items()):
        files[name] = (_write_built(run_dir / name, document) if extras_redacted
                       else file_entry(write_redacted(redactor, run_dir / name, document)))
    if commit is not None:
        statement = intoto_statement(judged, record_entries, commit, job_nonce)
        files[STATEMENT_NAME] = _write_built(run_dir / STATEMENT_NAME, statement)
    verdict, reasons = run_verdict(judged)
    if receipt_for is not None:
        receipt = receipt_for(verdict, reasons)
        files[RECEIPT_NAME] = _write_built(run_dir / RECEIPT_NAME, receipt)
    digest = bundle_digest(files, run_id, version, record_entries)
    markdown = render_markdown(
        [(record, outcome, record_entries[record.ac.id].sha256) for record, outcome in judged], digest
    )
    markdown_bytes = markdown.encode()
    replace_atomically(run_dir / MARKDOWN_NAME, markdown_bytes)
    files[MARKDOWN_NAME] = file_entry(markdown_bytes)
    manifest = manifest_document(run_id, files, version, record_entries)
    _write_built(run_dir / MANIFEST_NAME, manifest)
    return WrittenBundle(
        path=run_dir,
        digest=digest,
        markdown=markdown,
        verdict=verdict,
        ac_ids=tuple(record.ac.id for record, _ in judged),
    )
