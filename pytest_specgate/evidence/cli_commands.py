"""The evidence subcommands of ``specgate``: ``render``, ``merge``, ``sign``, ``gate``, ``waivers``
and ``compare``.

Each is a ``configure_<name>_parser(parser)`` / ``run_<name>(args) -> int`` pair that ``cli.py``
wires into its subparsers. Exit codes: 0 ok, 1 the gate (or a due waiver, or a regression)
rejects, 2 bad input. ``--json`` output has a versioned ``schema`` field (docs/gate.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pytest_specgate._version import __version__
from pytest_specgate.contracts.gates import GateOrderError, parse_gate_name
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.safe_read import MAX_FILE_BYTES
from pytest_specgate.contracts.validation import shown_on_one_line
from pytest_specgate.evidence._acrecord import SCHEMA_ID, AcRecord, RecordError
from pytest_specgate.evidence._bundle import (
    MERGE_NAME,
    RECEIPT_SCHEMA_ID,
    Bundle,
    BundleError,
    FileEntry,
    find_bundles,
    read_bundle_bytes,
    read_records,
    verify_bundle,
)
from pytest_specgate.evidence._cycle_collector import cycle_collector_paused
from pytest_specgate.evidence._gate import (
    AUTHORITATIVE,
    GATE_RESULT_SCHEMA_ID,
    GateInputError,
    GateVerdict,
    SignatureRule,
    evaluate_gate,
    gate_result_json,
    gate_summary_markdown,
    load_all_bundles,
    not_qualifying_lines,
    resolve_commit,
    resolve_gate,
)
from pytest_specgate.evidence._jsonio import pretty_json, sha256_hex, utc_timestamp
from pytest_specgate.evidence._markdown import (
    NOT_SIGNED,
    criterion_heading,
    criterion_line,
    digest_line,
    engine_joins,
    markdown_layout,
    render_markdown,
    run_host_lines,
    waiver_text,
)
from pytest_specgate.evidence._merge import (
    MergeChoice,
    MergeError,
    SourceRecords,
    choose_records,
    merged_commit,
)
from pytest_specgate.evidence._payloads import RefusedPayload
from pytest_specgate.evidence._policy import POLICY_VERSION, JudgedRecord, judge
from pytest_specgate.evidence._pr_body_input import pr_body_input
from pytest_specgate.evidence._records import attachment_path, safe_file_name
from pytest_specgate.evidence._redact import Redactor, append_redacted, build_redactor
from pytest_specgate.evidence._redacted_output import write_cleared
from pytest_specgate.evidence._trusted import (
    UNTRUSTED,
    TrustedConfig,
    TrustedConfigError,
    load_trusted_config,
    trusted_config_from_file,
)
from pytest_specgate.evidence._writer import redacted_record, write_attachment, write_bundle

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_BAD_INPUT = 2
RENDER_SCHEMA_ID = "specgate.render/1"
MERGE_RESULT_SCHEMA_ID = "specgate.merge-result/1"
WAIVERS_SCHEMA_ID = "specgate.waivers/1"
SIGN_RESULT_SCHEMA_ID = "specgate.sign-result/1"


def _add_json_option(parser: argparse.ArgumentParser, schema: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print the result as JSON ({schema})")


def _error(command: str, message: str) -> int:
    print(f"specgate {command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _verified_records(
    bundle: Bundle, read: dict[str, dict[str, AcRecord]] | None = None
) -> dict[str, AcRecord]:
    """The bundle's AC records, only once every file matches the manifest and every record its
    schema: ``render``, ``merge`` and ``waivers`` act on nothing else (``sign`` checks the same).

    ``read``: records already read, by the digest of the bundle they were read from. A bundle
    whose files all match its manifest and whose manifest gives that digest (recomputed, never
    the stated one) holds byte for byte the records and run facts the other held, so its records
    are those, not read, checked and typed again (``compare`` of a bundle and a copy of it)."""
    problems = verify_bundle(bundle)
    if problems:
        raise BundleError(f"{bundle.path}: bundle does not match its manifest: {problems[0]}")
    if read is None:
        return read_records(bundle)
    if bundle.digest not in read:
        read[bundle.digest] = read_records(bundle)
    return read[bundle.digest]


def _record_sha256(bundle: Bundle, ac_id: str) -> str:
    """The digest of a record :func:`_verified_records` read, so the manifest lists it."""
    entry = bundle.record_entry(ac_id)
    if entry is None:
        raise BundleError(f"{bundle.path}: the manifest lists no record of {ac_id}")
    return entry.sha256


def only_bundle(path: Path) -> Bundle:
    """The one bundle at ``path`` (a bundle, or an evidence dir holding exactly one)."""
    bundles = find_bundles(path)
    if len(bundles) != 1:
        listed = ", ".join(b.path.name for b in bundles) or "none"
        raise BundleError(f"{path}: expected one bundle, found {len(bundles)} ({listed})")
    return bundles[0]


def configure_render_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print the markdown evidence blocks of one bundle (after verifying it)."
    parser.add_argument("bundle", type=Path, help="a bundle directory (or an evidence dir holding one)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the markdown here instead of stdout")
    _add_json_option(parser, RENDER_SCHEMA_ID)


def claimed_signers(bundle: Bundle) -> str:
    """The summary's signer cell for ``render``: the key ids the bundle's envelope names by now.

    Claimed, not verified: only the gate, with the trust policy's public keys, can verify them.
    """
    from pytest_specgate.contracts.extras import MissingExtraError
    from pytest_specgate.evidence._bundle import SIGNATURE_NAME

    path = bundle.path / SIGNATURE_NAME
    if not path.is_file():
        return NOT_SIGNED
    try:
        from pytest_specgate.evidence._signing import EnvelopeError, envelope_from_bytes
    except MissingExtraError as error:
        return f"signed; its key ids are not read here: {error}"
    try:
        envelope = envelope_from_bytes(path.read_bytes())
    except (OSError, EnvelopeError) as error:
        return f"unreadable {SIGNATURE_NAME}: {error}"
    keys = ", ".join(dict.fromkeys(signature.keyid for signature in envelope.signatures))
    return f"{keys} (claimed; the gate verifies)"


def records_read_clean(redactor: Redactor, records: Iterable[AcRecord], others: Iterable[str] = ()) -> bool:
    """Whether this host's redactor leaves every string of ``records`` and ``others`` (what else
    of the bundles the output shows: their run ids, the signers they claim) as it is: then what is
    rendered from them (with words and digests of specgate's own) needs no pass of its own (the
    ``render`` and ``compare`` output), and ``merge`` writes them as they are.

    The strings are redacted together, each once, on a line of its own: a bundle of 10,000 ACs
    holds a few distinct strings per AC, and its ``evidence.md`` 13 MB, which the redactor read
    at about 1 µs a character. Where any string changes, the caller redacts its whole output.

    Each string is also read as the markdown lays it out on one line: a rule that reads one line
    (``password: …``) must see what a reader will. So a string with line breaks is read flattened
    as a table cell shows it, an AC's spec and title joined as each layout's Criterion line joins them,
    an engine's server name and version, and backend and model, as layout 1 joins them, and
    a waiver's gate and reason as its Waiver line does (``PR-TOKEN: value`` is a key and value).
    A string with a character that is not printable is also read as the gate's lines and the
    ``--json`` output show it (:func:`shown_on_one_line`'s ``\\x1b`` and JSON's ``\\u001b`` for
    ESC): a token cut by a control character is no credential to any rule, but its escaped form
    is one run again, which the line pass hides.
    """
    records = list(records)
    strings: set[str] = {*others, *(criterion_heading(record) for record in records),
                         *(criterion_line(record) for record in records)}
    strings.update(text for record in records for text in engine_joins(record))
    strings.update(waiver_text(test.waiver) for record in records for test in record.tests if test.waiver)
    strings |= strings_within([record.document for record in records])
    strings.update([string.replace("\n", " ") for string in strings if "\n" in string])
    strings.update([
        shown for string in strings if not string.isprintable()
        for shown in (shown_on_one_line(string), json.dumps(string, ensure_ascii=False)[1:-1])
    ])
    joined = "\n".join(sorted(strings))
    return redactor.text(joined) == joined


_SCALARS = frozenset({type(None), bool, int, float})


def strings_within(documents: Iterable[object]) -> set[str]:
    """Every string of ``documents`` (JSON-like trees), keys too. A container several of them
    hold (a run's facts, shared by its records) is walked once; a string leaf is taken where it
    is met, not queued (at 10,000 records, most of the walk)."""
    strings: set[str] = set()
    add, update = strings.add, strings.update
    seen: set[int] = set()
    pending: list[object] = list(documents)
    pop, push = pending.pop, pending.append
    while pending:
        node = pop()
        children: Iterable[object]
        if type(node) is dict or (type(node) is not list and isinstance(node, Mapping)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            update(map(str, node))
            children = node.values()
        elif type(node) is list or isinstance(node, tuple):
            if id(node) in seen:
                continue
            seen.add(id(node))
            children = node
        else:
            if isinstance(node, str):
                add(node)
            continue
        for child in children:
            if type(child) is str:
                add(child)
            elif type(child) not in _SCALARS:
                push(child)
    return strings


def _write_output(text: str, clean: bool) -> None:
    """``text`` to stdout; where it was built from records and run ids :func:`records_read_clean`
    found clean (and specgate's own words), past the output's line pass, which would read it all
    again (at 10,000 ACs, seconds); otherwise through it."""
    if clean:
        write_cleared(sys.stdout, text)
    else:
        sys.stdout.write(text)


def _render_json(bundle: Bundle, records: dict[str, AcRecord], markdown: str) -> dict[str, JsonValue]:
    acs: list[JsonValue] = []
    for ac_id in sorted(records):
        verdict = judge(records[ac_id])
        ac_sha = _record_sha256(bundle, ac_id)
        acs.append({
            "ac": ac_id,
            "verdict": verdict.label,
            "outcome": verdict.outcome,
            "qualifying": verdict.qualifying,
            "reasons": list(verdict.reasons),
            "ac_sha256": ac_sha,
            "digest_line": digest_line(ac_id, ac_sha, bundle.digest),
        })
    return {
        "schema": RENDER_SCHEMA_ID,
        "run_id": bundle.run_id,
        "bundle_sha256": bundle.digest,
        "policy": POLICY_VERSION,
        "acs": acs,
        "markdown": markdown,
    }


def _written_layout(bundle: Bundle) -> int:
    """The layout of the bundle's own ``evidence.md`` (verified with the bundle): ``render``
    prints that one, so blocks pasted from its output are what the gate compares them with."""
    from pytest_specgate.evidence._bundle import MARKDOWN_NAME, read_bundle_bytes

    return markdown_layout(read_bundle_bytes(bundle.path / MARKDOWN_NAME))


@cycle_collector_paused()
def run_render(args: argparse.Namespace) -> int:
    try:
        bundle = only_bundle(args.bundle)
        records = _verified_records(bundle)
        layout = _written_layout(bundle)
    except BundleError as error:
        return _error("render", str(error))
    signers = claimed_signers(bundle)
    verdicts = {ac_id: judge(records[ac_id]) for ac_id in sorted(records)}
    markdown = render_markdown(
        [(records[ac_id], verdict, _record_sha256(bundle, ac_id)) for ac_id, verdict in verdicts.items()],
        bundle.digest,
        signers,
        layout,
    )
    redactor = build_redactor(None)
    reasons = [reason for verdict in verdicts.values() for reason in verdict.reasons]
    clean = records_read_clean(redactor, records.values(), (bundle.run_id, signers, *reasons))
    text = markdown if clean else redactor.text(markdown)
    if args.json:
        document = _render_json(bundle, records, text)
        text = pretty_json(document if clean else redactor.value(document))
    if args.out is None:
        _write_output(text, clean)
        return EXIT_OK
    try:
        args.out.write_text(text, "utf-8")
    except OSError as error:
        return _error("render", f"--out={args.out}: cannot write: {error.strerror or error}")
    return EXIT_OK


def configure_merge_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Merge bundles from several hosts (e.g. an M4 run and an M1 run of one commit) into one "
        "bundle. For an AC present in several bundles the passing, qualifying record wins; one line "
        "per AC says which record was kept and why."
    )
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle directories or evidence dirs")
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="new bundle directory (must not exist)"
    )
    parser.add_argument(
        "--allow-mixed-commits",
        action="store_true",
        help="merge bundles of different commits (the result has no in-toto statement)",
    )
    _add_json_option(parser, MERGE_RESULT_SCHEMA_ID)


def _merge_receipt(
    run_id: str, choices: Sequence[MergeChoice], verdict: str, reasons: list[str]
) -> dict[str, JsonValue]:
    """The merged bundle's receipt; ``verdict``/``reasons``: the writer's judgement of what it wrote."""
    records = [choice.record for choice in choices]
    started = sorted(str(record.document["run"]["started_at"]) for record in records)
    return {
        "schema": RECEIPT_SCHEMA_ID,
        "run_id": run_id,
        "status": "merged",
        "verdict": verdict,
        "reasons": list(reasons),
        "running": [],
        "tests_finished": sum(len(record.tests) for record in records),
        "started_at": started[0] if started else None,
        "updated_at": utc_timestamp(dt.datetime.now(dt.UTC)),
    }


def _unwritable_merge(output: Path, error: OSError) -> int:
    """The half-written output goes (merge refuses an existing ``--out``, so all of it is ours)."""
    shutil.rmtree(output, ignore_errors=True)
    return _error("merge", f"--out={output}: cannot write the merged bundle: {error.strerror or error}")


def _attachment_documents(record: AcRecord) -> list[dict[str, JsonValue]]:
    """The record's attachment rows as written (the schema made each one an object)."""
    rows = record.document.get("attachments")
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


@cycle_collector_paused()
def run_merge(args: argparse.Namespace) -> int:
    output: Path = args.out
    if output.exists():
        return _error("merge", f"{output}: already exists; merge writes a new bundle directory")
    try:
        sources = [
            SourceRecords(bundle, _verified_records(bundle)) for bundle in load_all_bundles(args.bundles)
        ]
        commit = merged_commit(sources, args.allow_mixed_commits)
        choices = choose_records(sources)
    except (GateInputError, BundleError, MergeError) as error:
        return _error("merge", str(error))
    redactor = build_redactor(None)
    clean = records_read_clean(redactor, [choice.record for choice in choices],
                               [source.bundle.run_id for source in sources])
    if not args.json:
        _write_output("".join(shown_on_one_line(choice.explain()) + "\n" for choice in choices), clean)
    attachments: dict[str, FileEntry] = {}
    documents: list[dict[str, JsonValue] | JudgedRecord] = []
    for choice in choices:
        rows: list[JsonValue] = []
        row_documents = _attachment_documents(choice.record)
        for row, row_document in zip(choice.record.attachments, row_documents, strict=True):
            if not row.stored or row.path is None:
                rows.append(row_document)
                continue
            source = choice.kept.path / row.path
            try:
                data = read_bundle_bytes(source, MAX_FILE_BYTES)
            except BundleError as error:
                return _error("merge", str(error))
            # This host redacts again, with its own patterns: the file goes where its redacted
            # bytes and name say, and the row names what was written.
            try:
                stored = redactor.encode(data)
                name = safe_file_name(redactor.text(row.name))
                relative = attachment_path(sha256_hex(stored), name)
                entry = attachments[relative] = write_attachment(output, redactor, relative, stored)
            except RefusedPayload as error:
                return _error("merge", f"{source}: cannot be redacted: {error}")
            except OSError as error:
                return _unwritable_merge(output, error)
            rows.append({**row_document, "name": name, "path": relative, "sha256": entry.sha256,
                         "size": entry.size})
        # Records read from older bundles (v2) are written as this version's, redacted here once
        # where this host's redactor would change any of their strings.
        document = {**choice.record.document, "schema": SCHEMA_ID, "attachments": rows}
        if clean and document == choice.record.document:  # written as read: judged once already
            documents.append(JudgedRecord(choice.record, choice.kept_verdict))
            continue
        where = choice.kept.record_name(choice.ac_id)
        try:
            documents.append(document if clean else redacted_record(where, redactor, document))
        except RecordError as error:
            return _error("merge", str(error))
    kept = sorted({choice.kept.path: choice.kept for choice in choices}.values(), key=lambda b: b.digest)
    merge_document: JsonValue = {
        "schema": "specgate.merge/v1",
        "sources": [
            {
                "run_id": bundle.run_id,
                "bundle_sha256": bundle.digest,
                "acs": [choice.ac_id for choice in choices if choice.kept is bundle],
            }
            for bundle in kept
        ],
        "choices": [choice.explain() for choice in choices],
    }
    run_id = "merged-" + sha256_hex("".join(b.digest for b in kept).encode())[:12]
    warning = None
    if commit is None:
        commits = sorted({c for source in sources for c in source.commits()})
        warning = (
            f"no in-toto statement: the records are for {len(commits)} commit(s) ({', '.join(commits)}) "
            "and a statement names one known commit"
        )
        if not args.json:
            print(f"specgate merge: warning: {warning}")
    try:
        written = write_bundle(
            output,
            redactor,
            run_id,
            documents,
            attachments,
            lambda verdict, reasons: _merge_receipt(run_id, choices, verdict, reasons),
            commit,
            __version__,
            extra_documents={MERGE_NAME: merge_document},
            extras_redacted=clean,
        )
    except OSError as error:
        return _unwritable_merge(output, error)
    if args.json:
        sys.stdout.write(pretty_json(build_redactor(None).value({
            "schema": MERGE_RESULT_SCHEMA_ID,
            "output": str(output),
            "run_id": run_id,
            "bundle_sha256": written.digest,
            "commit": commit,
            "warning": warning,
            "acs": [
                {"ac": choice.ac_id, "kept_run": choice.kept.run_id, "kept_bundle_sha256": choice.kept.digest,
                 "passed_over_runs": [bundle.run_id for bundle, _ in choice.passed_over],
                 "why": choice.explain()}
                for choice in choices
            ],
        })))
    else:
        print(f"specgate merge: wrote {output} ({len(choices)} AC, bundle-sha256 {written.digest})")
    return EXIT_OK


def configure_sign_parser(parser: argparse.ArgumentParser) -> None:
    from pytest_specgate.evidence._bundle import PASSPHRASE_ENV

    parser.description = (
        "Sign a bundle: its in-toto Statement, with the commit and every file as subjects, goes into "
        "a DSSE envelope (statement.intoto.dsse.json) signed with an Ed25519 key. Signing again with "
        "another key adds a signature. The bundle digest and the PR body do not change. Before "
        "signing, specgate probes this host itself and refuses a bundle whose host facts were "
        "simulated or differ from its own probe, naming the fields: run it on the host that ran the "
        "specs, as the key's owner, after the run."
    )
    parser.add_argument("bundle", type=Path, help="a bundle directory (or an evidence dir holding one)")
    parser.add_argument(
        "--key", type=Path, required=True, metavar="PATH",
        help=f"Ed25519 private key, PEM or OpenSSH (ssh-keygen -t ed25519); passphrase: ${PASSPHRASE_ENV}",
    )
    _add_json_option(parser, SIGN_RESULT_SCHEMA_ID)
    parser.add_argument(
        "--commit", metavar="SHA", type=_full_commit,
        help="refuse unless the bundle is for this full 40-hex commit (a fleet job's head commit)",
    )
    parser.add_argument(
        "--nonce", metavar="NONCE", type=_job_nonce,
        help="refuse unless the bundle carries this nonce (the one the job passed as --specgate-nonce)",
    )


def _full_commit(text: str) -> str:
    if not re.fullmatch(r"[0-9a-fA-F]{40}", text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected the full 40-hex commit")
    return text.lower()


def _job_nonce(text: str) -> str:
    from pytest_specgate.contracts.validation import JOB_NONCE

    if not JOB_NONCE.match(text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected 16 to 128 characters of [A-Za-z0-9_-]")
    return text


def run_sign(args: argparse.Namespace) -> int:
    from pytest_specgate.evidence._signing import (
        SigningError,
        job_problems,
        load_signing_key,
        sign_bundle,
        special_entries,
        witness_problems,
    )
    from pytest_specgate.selection.host_probe import probe_host

    if args.bundle.is_symlink() or not args.bundle.is_dir():
        return _error("sign", f"{args.bundle}: not a folder (a symlink is never followed): "
                              "refusing to sign it")
    special = special_entries(args.bundle)
    if special:
        return _error("sign", f"{args.bundle}: refusing to sign a bundle holding {', '.join(special)}: a "
                              "bundle holds only regular files and folders")
    try:
        bundle = only_bundle(args.bundle)
        problems = job_problems(bundle.path, args.commit, args.nonce)
        if problems:
            return _error("sign", f"{bundle.path}: refusing to sign: not this job's bundle: "
                                  f"{'; '.join(problems)}")
        key = load_signing_key(args.key, os.environ)
        redactor = build_redactor(None)
        problems = witness_problems(_verified_records(bundle), redactor.value(probe_host().to_dict()))
        if problems:
            return _error("sign", f"{bundle.path}: refusing to sign: {'; '.join(problems)}")
        signed = sign_bundle(bundle.path, key, redactor)
    except (BundleError, SigningError) as error:
        return _error("sign", str(error))
    if args.json:
        sys.stdout.write(pretty_json(redactor.value({
            "schema": SIGN_RESULT_SCHEMA_ID,
            "envelope": str(signed.path),
            "keyid": signed.keyid,
            "commit": signed.statement.commit,
            "files": len(signed.statement.files),
            "signatures": signed.signatures,
        })))
        return EXIT_OK
    print(
        f"specgate sign: {signed.path} signed by {signed.keyid} "
        f"({len(signed.statement.files)} files and commit {signed.statement.commit}; "
        f"{signed.signatures} signature(s))"
    )
    return EXIT_OK


GATE_EPILOG = """\
trusted configuration:
  What decides (host profiles, merge gates, the trust policy, engine-free ACs) is read from
  --trusted-config, never from the PR's checkout:
    --trusted-config=refs/remotes/origin/main   git show REF:pyproject.toml (a fully qualified ref
                                                or a 40-hex commit; fetch it first; a short name
                                                such as origin/main is refused: a tag could shadow it)
    --trusted-config=trusted.toml               a file ending in .toml, taken from somewhere you trust
  It reads [tool.specgate] hosts, gates, trust and acs ([tool.specgate.acs."AC-N"] engine = false).
  Under CI ($CI set) or --require-signatures a missing trust policy rejects every AC;
  --allow-unsigned accepts unsigned evidence instead, and the result says so.
  With a ref, the base defines each AC's member tests (a census of the ref in a temporary
  worktree) and its harness (every repository file the run imported, spec files, conftests,
  pytest config): a member the run left out, or a harness file that differs from the ref
  (unless [tool.specgate] sut_paths names it), rejects the AC.

  in CI:  git fetch --depth=1 origin "$BASE_SHA"      # the event's pull_request.base.sha
          specgate gate --pr-body-from-event --evidence=out/ --require=AC-10 \\
                        --trusted-config="$BASE_SHA" --gate=PR-B
"""


def configure_gate_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Accept a PR body only if every required AC has an evidence block bound to an intact bundle "
        "for this commit, showing exactly what its record renders, whose verdict, recomputed under the "
        "specgate verdict policy and the trusted configuration, passes and qualifies (exit 0); otherwise "
        "print one line per problem (exit 1). Unreadable input exits 2."
    )
    parser.epilog = GATE_EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    body = parser.add_mutually_exclusive_group(required=True)
    body.add_argument(
        "--pr-body", metavar="FILE", help="markdown file with the PR description; '-' reads stdin"
    )
    body.add_argument(
        "--pr-body-from-event",
        action="store_true",
        help="in GitHub Actions: read pull_request.body from the event payload ($GITHUB_EVENT_PATH)",
    )
    parser.add_argument(
        "--evidence",
        type=Path,
        action="append",
        required=True,
        help="bundle or evidence directory (repeatable)",
    )
    parser.add_argument(
        "--require", action="append", default=[], metavar="AC", help="AC that must be evidenced (repeatable)"
    )
    parser.add_argument(
        "--commit", help="the full 40-hex PR head commit the evidence must be for (default: in GitHub "
        "Actions the event's commit, elsewhere HEAD of the current directory's checkout)"
    )
    parser.add_argument(
        "--trusted-config", metavar="REF|FILE.toml",
        help="where [tool.specgate] hosts, gates, trust and acs come from: the base branch as a fully "
        "qualified ref (refs/...) or a 40-hex commit (git show REF:pyproject.toml), or a .toml file; "
        "never the PR's working tree (see below)",
    )
    parser.add_argument(
        "--gate", help="this merge gate, one of the trusted config's gates; waivers must name a later one"
    )
    signatures = parser.add_mutually_exclusive_group()
    signatures.add_argument(
        "--require-signatures", action="store_true",
        help="reject when the trusted config has no trust policy (the default when $CI is set)",
    )
    signatures.add_argument(
        "--allow-unsigned", action="store_true",
        help="accept evidence without a trust policy even under CI (printed with the result)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"print the result as JSON ({GATE_RESULT_SCHEMA_ID}) instead of lines",
    )


def _add_pyproject_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pyproject",
        type=Path,
        default=None,
        help="the project's pyproject.toml declaring [tool.specgate] gates (default: ./pyproject.toml); "
        "a file named here is read even without --gate, so a file that cannot be read is an error",
    )


def gate_lines(verdict: GateVerdict) -> list[tuple[str, bool]]:
    """The gate's account, one problem a line, each with whether it is worded from judged records,
    the trusted config and specgate's words alone (:attr:`AcJudgement.worded_from_record`; the
    policy line and every other problem may hold a path, PR body text or an error message).

    What a record's author wrote (a node id, a test name) is shown with its line breaks and
    control characters escaped, so no line of it can read as the gate's own
    (``specgate gate: accepted``) or as a runner's command (``::notice::``)."""
    commit = verdict.commit
    lines = [(f"specgate gate: policy {verdict.policy}; commit {commit.sha} (from {commit.source})", False)]
    lines += [(problem, False) for problem in verdict.run_problems]
    problems: list[tuple[str, str, bool]] = []
    for judgement in verdict.judgements:
        for problem in judgement.problems:
            worded = problem in judgement.worded_from_record
            if problem == judgement.not_qualifying_problem:
                problems += [(judgement.ac_id, line, worded) for line in not_qualifying_lines(judgement)]
            else:
                problems.append((judgement.ac_id, problem, worded))
    harness: list[tuple[str, str, bool]] = []
    for judgement in verdict.judgements:
        if judgement.harness_changed is not None:
            sut = [f"{path} (system under test)" for path in judgement.sut_changed]
            shown = [*judgement.harness_changed, *sut]
            listed = ", ".join(shown) or "none"
            harness.append((judgement.ac_id, f"harness files changed since {verdict.base_commit}: {listed}",
                            False))
    lines += [*lines_naming_acs(problems), *lines_naming_acs(harness)]
    if not verdict.problems:
        # Every AC accepted was judged on its bound record, whose AC id it is.
        lines.append((f"specgate gate: accepted {', '.join(verdict.accepted)}", True))
    return [(shown_on_one_line(line), worded) for line, worded in lines]


def _print_gate_lines(verdict: GateVerdict, records_clean: bool) -> None:
    """:func:`gate_lines`; those worded from records alone pass the output's line pass only where
    ``records_clean`` (:func:`records_read_clean` found every string they are built from clean)."""
    for line, worded in gate_lines(verdict):
        if records_clean and worded:
            write_cleared(sys.stdout, line + "\n")
        else:
            print(line)


def trusted_config_strings(trusted: TrustedConfig) -> list[str]:
    """What of the trusted config the gate's lines worded from records show: where it came from,
    the ACs' pinned profiles and backends, the enrolled backends and their distributions, the spec
    paths."""
    strings = [trusted.source, *(trusted.spec_paths or ()), *trusted.backends, *trusted.backends.values()]
    for settings in trusted.acs.values():
        strings += [*([settings.profile] if settings.profile else []), *(settings.backends or ())]
    return strings


def lines_naming_acs(problems: Sequence[tuple[str, str, bool]]) -> list[tuple[str, bool]]:
    """``AC: problem`` once per problem, in the order first met, naming every AC that has it
    (``AC-10, AC-11: diagnostic run: ...``): a run's reason is one line, not one per AC. Each
    ``(ac, problem, worded)`` says whether that AC's problem is worded from its record alone; the
    line is so only where every AC's is."""
    acs: dict[str, list[str]] = {}
    worded: dict[str, bool] = {}
    for ac_id, problem, from_record in problems:
        acs.setdefault(problem, []).append(ac_id)
        worded[problem] = worded.get(problem, True) and from_record
    return [(f"{', '.join(dict.fromkeys(named))}: {problem}", worded[problem])
            for problem, named in acs.items()]


@cycle_collector_paused()
def run_gate(args: argparse.Namespace) -> int:
    try:
        pr_body = pr_body_input(args.pr_body, args.pr_body_from_event, sys.stdin, os.environ)
        commit = resolve_commit(args.commit, os.environ, Path.cwd())
        trusted = (
            UNTRUSTED if args.trusted_config is None else load_trusted_config(args.trusted_config, Path.cwd())
        )
        gate = resolve_gate(args.gate, trusted)
        rule = SignatureRule(
            required=args.require_signatures or bool(os.environ.get("CI")), allow_unsigned=args.allow_unsigned
        )
        verdict = evaluate_gate(pr_body, args.evidence, args.require, commit, gate, trusted, rule)
    except (GateInputError, TrustedConfigError) as error:
        return _error("gate", str(error))
    trusted_line = f"specgate gate: trusted config {verdict.trusted}; signatures {verdict.signatures}"
    print(f"specgate gate: {AUTHORITATIVE}", file=sys.stderr)
    records = [judgement.record for judgement in verdict.judgements if judgement.record is not None]
    for run_id, host in run_host_lines(records):
        print(shown_on_one_line(f"specgate gate: run {run_id} ran on {host} (each block's host line)"),
              file=sys.stderr)
    print(trusted_line, file=sys.stderr)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        append_redacted(build_redactor(None), Path(summary_path), gate_summary_markdown(verdict))
    if args.json:
        sys.stdout.write(pretty_json(gate_result_json(verdict)))
    else:
        # The reasons the policy recomputes join record strings with its words
        # (``<node id>: <measurement> = …``); a record's own copy of them may say anything.
        reasons = [reason for judgement in verdict.judgements if judgement.verdict is not None
                   for reason in judgement.verdict.reasons]
        strings = [*trusted_config_strings(trusted), *reasons]
        clean = records_read_clean(build_redactor(None), records, strings)
        _print_gate_lines(verdict, clean)
    return EXIT_REJECTED if verdict.problems else EXIT_OK


def configure_waivers_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = "List the waivers recorded in bundles and the gate each AC moves to."
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle directories or evidence dirs")
    parser.add_argument(
        "--gate",
        help="the current gate, one of [tool.specgate] gates: waivers to no later gate are due (exit 1)",
    )
    _add_pyproject_option(parser)
    _add_json_option(parser, WAIVERS_SCHEMA_ID)


def run_waivers(args: argparse.Namespace) -> int:
    try:
        pyproject = Path("pyproject.toml") if args.pyproject is None else args.pyproject
        named = args.gate is not None or args.pyproject is not None
        config = trusted_config_from_file(pyproject, "--pyproject") if named else UNTRUSTED
        gate = resolve_gate(args.gate, config)
        bundles = load_all_bundles(args.bundles)
        waivers: dict[tuple[str, str, str], list[str]] = {}
        for bundle in bundles:
            for ac_id, record in _verified_records(bundle).items():
                waiver = judge(record).waiver
                if waiver is not None:
                    waivers.setdefault((ac_id, waiver.to, waiver.reason), []).append(bundle.run_id)
        due = []
        rows: list[JsonValue] = []
        for ac_id, target, reason in sorted(waivers):
            expired = gate is not None and not parse_gate_name(target).is_later_than(gate)
            if expired:
                due.append(ac_id)
            runs = waivers[(ac_id, target, reason)]
            rows.append({"ac": ac_id, "to": target, "reason": reason, "runs": list(runs), "due": expired})
            if not args.json:
                state = " (DUE: this is gate " + gate.text + ")" if expired and gate is not None else ""
                line = f"{ac_id} waived → {target}, because {reason} [run {', '.join(runs)}]{state}"
                print(shown_on_one_line(line))
    except (GateInputError, TrustedConfigError, BundleError, GateOrderError) as error:
        return _error("waivers", str(error))
    if args.json:
        sys.stdout.write(pretty_json(build_redactor(None).value({
            "schema": WAIVERS_SCHEMA_ID,
            "gate": None if gate is None else gate.text,
            "waivers": rows,
            "due": due,
        })))
    elif not waivers:
        print("no waivers")
    return EXIT_REJECTED if due else EXIT_OK


def configure_compare_parser(parser: argparse.ArgumentParser) -> None:
    from pytest_specgate.evidence._compare import COMPARE_SCHEMA_ID, DEFAULT_TOLERANCE

    parser.description = (
        "Compare two bundles (the base branch's and a PR's): first every AC whose verdict changed "
        "(PASSED to anything else, or QUALIFYING to not, is a regression), then per measurement the "
        "relative change with an interval from both runs' samples (else both recorded intervals, "
        "else the values alone). A measurement regresses only where its whole interval lies beyond "
        "--tolerance on the side its bound calls worse; one without a bound only 'changed'. "
        "Exit 1 on any regression."
    )
    parser.add_argument("base", type=Path, help="the base bundle (or an evidence dir holding one)")
    parser.add_argument("new", type=Path, help="the new bundle (or an evidence dir holding one)")
    tolerance_help = (
        "relative change the whole interval must exceed to count "
        f"(default {DEFAULT_TOLERANCE}, i.e. {DEFAULT_TOLERANCE:.0%}; '5%' works too)"
    )
    # argparse %-formats help text: every literal % is doubled.
    parser.add_argument("--tolerance", default=str(DEFAULT_TOLERANCE), metavar="FRACTION",
                        help=tolerance_help.replace("%", "%%"))
    parser.add_argument("--confidence-level", type=float, default=0.95, metavar="LEVEL",
                        help="level of the difference interval (default 0.95; each side errs about "
                             "half of 1 - LEVEL)")
    _add_json_option(parser, COMPARE_SCHEMA_ID)


@cycle_collector_paused()
def run_compare(args: argparse.Namespace) -> int:
    from pytest_specgate.contracts.thresholds import check_confidence_level
    from pytest_specgate.evidence._compare import (
        CompareInputError,
        bundle_side,
        compare_records,
        comparison_json,
        comparison_markdown,
        tolerance_from_text,
    )

    try:
        tolerance = tolerance_from_text(args.tolerance)
        level = check_confidence_level(args.confidence_level, "--confidence-level")
    except ValueError as error:
        return _error("compare", str(error))
    sides = []
    run_ids = []
    read: dict[str, dict[str, AcRecord]] = {}
    for path in (args.base, args.new):
        try:
            bundle = only_bundle(path)
            records = _verified_records(bundle, read)
        except BundleError as error:
            return _error("compare", str(error))
        sides.append((bundle_side(bundle.run_id, bundle.digest, records), records))
        run_ids.append(bundle.run_id)
    (base_side, base), (new_side, new) = sides
    try:
        comparison = compare_records(base, new, base_side, new_side, tolerance, level)
    except CompareInputError as error:
        return _error("compare", str(error))
    redactor = build_redactor(None)
    clean = records_read_clean(redactor, [*base.values(), *new.values()], run_ids)
    if args.json:
        document = comparison_json(comparison)
        _write_output(pretty_json(document if clean else redactor.value(document)), clean)
    else:
        markdown = comparison_markdown(comparison)
        _write_output(markdown if clean else redactor.text(markdown), clean)
    return EXIT_REJECTED if comparison.regressions else EXIT_OK


def configure_history_parser(parser: argparse.ArgumentParser) -> None:
    from pytest_specgate.evidence._compare import DEFAULT_TOLERANCE
    from pytest_specgate.evidence._history import HISTORY_EXTRA, HISTORY_SCHEMA_ID

    parser.description = (
        "Every AC figure across many runs: bundles ordered by their commit's time (git in --repo; "
        "by run start where git does not know a commit), one trend table per figure (markdown, or "
        "--json) and one PNG plot each in --out, with persistent shifts (change points, ruptures "
        f"PELT) naming the first commit after them. Needs pip install 'pytest-specgate[{HISTORY_EXTRA}]'."
    )
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle directories or evidence dirs")
    parser.add_argument("--out", type=Path, default=Path("specgate-history"), metavar="DIR",
                        help="where history.md, history.json and the plots go (default: specgate-history)")
    parser.add_argument("--measurement", action="append", default=[], metavar="NAME",
                        help="only this measurement (repeatable; default: every numeric one)")
    parser.add_argument("--repo", type=Path, default=Path.cwd(), metavar="DIR",
                        help="the git checkout that knows the commits (default: the current directory)")
    tolerance_help = (f"a shift must move the median of the runs either side of it by more than this "
                      f"relative change (default {DEFAULT_TOLERANCE}, i.e. {DEFAULT_TOLERANCE:.0%})")
    parser.add_argument("--tolerance", default=str(DEFAULT_TOLERANCE), metavar="FRACTION",
                        help=tolerance_help.replace("%", "%%"))
    _add_json_option(parser, HISTORY_SCHEMA_ID)


def run_history(args: argparse.Namespace) -> int:
    from pytest_specgate.evidence._compare import tolerance_from_text
    from pytest_specgate.evidence._history import (
        build_history,
        commit_time,
        history_json,
        history_markdown,
        history_run,
        write_plot,
    )

    try:
        tolerance = tolerance_from_text(args.tolerance)
        bundles = load_all_bundles(args.bundles)
        loaded = [(bundle, _verified_records(bundle)) for bundle in bundles]
        commits = {record.source.commit for _, records in loaded for record in records.values()
                   if record.source.commit}
        committed_at = {commit: commit_time(args.repo, commit) for commit in sorted(commits)}
        runs = [history_run(bundle.run_id, bundle.digest, records, committed_at)
                for bundle, records in loaded]
        history = build_history(runs, tolerance, args.measurement)
        args.out.mkdir(parents=True, exist_ok=True)
        plots = {series.key: write_plot(series, args.out / series.plot_name) for series in history.series}
    except (ValueError, GateInputError, BundleError) as error:
        return _error("history", str(error))
    except OSError as error:
        return _error("history", f"--out={args.out}: {error}")
    redactor = build_redactor(None)
    markdown = redactor.text(history_markdown(history, plots))
    document = pretty_json(redactor.value(history_json(history, plots)))
    try:
        (args.out / "history.md").write_text(markdown, "utf-8")
        (args.out / "history.json").write_text(document, "utf-8")
    except OSError as error:
        return _error("history", f"--out={args.out}: {error}")
    sys.stdout.write(document if args.json else markdown)
    return EXIT_OK
