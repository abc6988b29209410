"""The evidence subcommands of ``specgate``: ``render``, ``merge``, ``sign``, ``gate`` and ``waivers``.

Each is a ``configure_<name>_parser(parser)`` / ``run_<name>(args) -> int`` pair that ``cli.py``
wires into its subparsers. Exit codes: 0 ok, 1 the gate (or a due waiver) rejects, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_specgate import __version__
from pytest_specgate.evidence._bundle import (
    MERGE_NAME,
    Bundle,
    BundleError,
    ac_file_name,
    find_bundles,
    read_records,
    verify_bundle,
)
from pytest_specgate.evidence._gate import GateInputError, evaluate_gate, load_all_bundles
from pytest_specgate.evidence._gates import GateOrderError, parse_gate_name
from pytest_specgate.evidence._jsonio import JsonValue, sha256_hex
from pytest_specgate.evidence._markdown import render_markdown
from pytest_specgate.evidence._redact import build_redactor
from pytest_specgate.evidence._trust import TrustPolicy, TrustPolicyError, load_trust_policy
from pytest_specgate.evidence._writer import write_bundle

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_BAD_INPUT = 2


def _error(command: str, message: str) -> int:
    print(f"specgate {command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _verified_records(bundle: Bundle) -> dict[str, Mapping[str, JsonValue]]:
    problems = verify_bundle(bundle)
    if problems:
        raise BundleError(f"{bundle.path}: bundle does not match its manifest: {problems[0]}")
    return read_records(bundle)


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
    parser.add_argument("-o", "--output", type=Path, help="write the markdown here instead of stdout")


def run_render(args: argparse.Namespace) -> int:
    try:
        bundle = only_bundle(args.bundle)
        records = _verified_records(bundle)
    except BundleError as error:
        return _error("render", str(error))
    markdown = render_markdown(
        [(records[ac_id], bundle.files[ac_file_name(ac_id)].sha256) for ac_id in sorted(records)],
        bundle.digest,
    )
    text = build_redactor(None).text(markdown)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, "utf-8")
    return EXIT_OK


def configure_merge_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Merge bundles from several hosts (e.g. an M4 run and an M1 run) into one bundle. "
        "For an AC present in several bundles the passing, qualifying record wins."
    )
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle directories or evidence dirs")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="new bundle directory (must not exist)"
    )


def _rank(record: Mapping[str, JsonValue]) -> int:
    return (
        2
        if record.get("outcome") == "passed" and record.get("qualifying")
        else int(record.get("outcome") == "passed")
    )


def _select_records(
    bundles: Sequence[Bundle],
) -> dict[str, tuple[Bundle, Mapping[str, JsonValue]]]:
    chosen: dict[str, tuple[Bundle, Mapping[str, JsonValue]]] = {}
    for bundle in bundles:
        for ac_id, record in _verified_records(bundle).items():
            current = chosen.get(ac_id)
            if current is None or _rank(record) > _rank(current[1]):
                chosen[ac_id] = (bundle, record)
            elif _rank(record) == _rank(current[1]) == 2:
                raise BundleError(
                    f"{ac_id} has qualifying evidence in both {current[0].path} and {bundle.path}: "
                    "merge only one of them"
                )
    return dict(sorted(chosen.items()))


def run_merge(args: argparse.Namespace) -> int:
    output: Path = args.output
    if output.exists():
        return _error("merge", f"{output}: already exists; merge writes a new bundle directory")
    try:
        bundles = load_all_bundles(args.bundles)
        chosen = _select_records(bundles)
    except (GateInputError, BundleError) as error:
        return _error("merge", str(error))
    attachments: dict[str, bytes] = {}
    for bundle, record in chosen.values():
        rows = record.get("attachments")
        for row in rows if isinstance(rows, list) else []:
            relative = str(row["path"])
            attachments[relative] = (bundle.path / relative).read_bytes()
    sources = sorted({bundle.path: bundle for bundle, _ in chosen.values()}.values(), key=lambda b: b.digest)
    merge_document: JsonValue = {
        "schema": "specgate.merge/v1",
        "sources": [
            {
                "run_id": bundle.run_id,
                "bundle_sha256": bundle.digest,
                "acs": sorted(ac for ac, (b, _) in chosen.items() if b is bundle),
            }
            for bundle in sources
        ],
    }
    run_id = "merged-" + sha256_hex("".join(b.digest for b in sources).encode())[:12]
    commits = {
        str(record["source"]["commit"])
        for _, record in chosen.values()
        if isinstance(record.get("source"), Mapping) and record["source"].get("commit")
    }
    written = write_bundle(
        output,
        build_redactor(None),
        run_id,
        [record for _, record in chosen.values()],
        attachments,
        None,
        commits.pop() if len(commits) == 1 else None,
        __version__,
        extra_documents={MERGE_NAME: merge_document},
    )
    print(f"specgate merge: wrote {output} ({len(chosen)} AC, bundle-sha256 {written.digest})")
    return EXIT_OK


def configure_sign_parser(parser: argparse.ArgumentParser) -> None:
    from pytest_specgate.evidence._signing import PASSPHRASE_ENV

    parser.description = (
        "Sign a bundle: its in-toto Statement, with the commit and every file as subjects, goes into "
        "a DSSE envelope (statement.intoto.dsse.json) signed with an Ed25519 key. Signing again with "
        "another key adds a signature. The bundle digest and the PR body do not change."
    )
    parser.add_argument("bundle", type=Path, help="a bundle directory (or an evidence dir holding one)")
    parser.add_argument(
        "--key", type=Path, required=True, metavar="PATH",
        help=f"Ed25519 private key, PEM or OpenSSH (ssh-keygen -t ed25519); passphrase: ${PASSPHRASE_ENV}",
    )


def run_sign(args: argparse.Namespace) -> int:
    from pytest_specgate.evidence._signing import SigningError, load_signing_key, sign_bundle

    try:
        bundle = only_bundle(args.bundle)
        key = load_signing_key(args.key, os.environ)
        signed = sign_bundle(bundle.path, key, build_redactor(None))
    except (BundleError, SigningError) as error:
        return _error("sign", str(error))
    print(
        f"specgate sign: {signed.path} signed by {signed.keyid} "
        f"({len(signed.statement.files)} files and commit {signed.statement.commit}; "
        f"{signed.signatures} signature(s))"
    )
    return EXIT_OK


def configure_gate_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Accept a PR body only if every required AC has an evidence block bound to an intact, "
        "passing, qualifying bundle (exit 0); otherwise print one line per problem (exit 1). "
        "Unreadable input exits 2."
    )
    parser.add_argument("--pr-body", type=Path, required=True, help="markdown file with the PR description")
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
    parser.add_argument("--commit", help="the PR head commit the evidence must be for")
    parser.add_argument(
        "--gate", help="this merge gate (PR-<letters> or PR-<n>); waivers must name a later one"
    )
    parser.add_argument(
        "--trust-policy", type=Path, metavar="FILE",
        help="TOML file with [tool.specgate.trust] (default: the nearest pyproject.toml); take it from "
        "the protected base branch, not from the PR",
    )


def gate_trust_policy(explicit: Path | None, start: Path) -> TrustPolicy | None:
    """``--trust-policy``, else the ``[tool.specgate.trust]`` of the nearest pyproject.toml, if any."""
    if explicit is not None:
        policy = load_trust_policy(explicit)
        if policy is None:
            raise TrustPolicyError(f"{explicit}: --trust-policy file has no [tool.specgate.trust] table")
        return policy
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return load_trust_policy(candidate)
    return None


def run_gate(args: argparse.Namespace) -> int:
    try:
        policy = gate_trust_policy(args.trust_policy, Path.cwd())
        verdict = evaluate_gate(args.pr_body, args.evidence, args.require, args.commit, args.gate, policy)
    except (GateInputError, TrustPolicyError) as error:
        return _error("gate", str(error))
    print(
        "specgate gate: no trust policy ([tool.specgate.trust]): signatures were not checked"
        if policy is None
        else f"specgate gate: trust policy {policy.source} ({len(policy.signers)} signers): "
        "every AC was checked for a signature by an enrolled signer",
        file=sys.stderr,
    )
    if verdict.problems:
        for problem in verdict.problems:
            print(problem)
        return EXIT_REJECTED
    print(f"specgate gate: accepted {', '.join(verdict.accepted)}")
    return EXIT_OK


def configure_waivers_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = "List the waivers recorded in bundles and the gate each AC moves to."
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle directories or evidence dirs")
    parser.add_argument("--gate", help="the current gate: waivers not naming a later gate are due (exit 1)")


def run_waivers(args: argparse.Namespace) -> int:
    try:
        gate = None if args.gate is None else parse_gate_name(args.gate)
        bundles = load_all_bundles(args.bundles)
        waivers: dict[tuple[str, str, str], list[str]] = {}
        for bundle in bundles:
            for ac_id, record in read_records(bundle).items():
                waiver = record.get("waiver")
                if isinstance(waiver, Mapping):
                    key = (ac_id, str(waiver.get("to")), str(waiver.get("reason")))
                    waivers.setdefault(key, []).append(bundle.run_id)
        due = []
        for ac_id, target, reason in sorted(waivers):
            expired = gate is not None and not parse_gate_name(target).is_later_than(gate)
            if expired:
                due.append(ac_id)
            state = " (DUE: this is gate " + gate.text + ")" if expired and gate is not None else ""
            runs = ", ".join(waivers[(ac_id, target, reason)])
            print(f"{ac_id} waived → {target}: {reason} [run {runs}]{state}")
    except (GateInputError, BundleError, GateOrderError) as error:
        return _error("waivers", str(error))
    except ValueError as error:
        return _error("waivers", f"--gate: {error}")
    if not waivers:
        print("no waivers")
    return EXIT_REJECTED if due else EXIT_OK
