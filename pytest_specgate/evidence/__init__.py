"""Evidence: AC markers, the ``evidence`` fixture's recorder, redaction, bundles and the gate.

Data flows one way: marker + reports -> records -> redaction -> bundle -> markdown -> gate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_specgate._lazy import lazy_getattr

if TYPE_CHECKING:
    from pytest_specgate.contracts.acceptance import AcceptanceCriterion, is_ac_id
    from pytest_specgate.contracts.gates import GateName, GateOrderError, parse_gate_name
    from pytest_specgate.evidence._acrecord import SCHEMA_ID, AcRecord, Measurement, RecordError
    from pytest_specgate.evidence._bundle import (
        MANIFEST_NAME,
        MARKDOWN_NAME,
        RECEIPT_NAME,
        SIGNATURE_NAME,
        STATEMENT_NAME,
        Bundle,
        BundleError,
        bundle_digest,
        find_bundles,
        load_bundle,
        read_records,
        verify_bundle,
    )
    from pytest_specgate.evidence._collector import (
        FOREIGN_MODULES_KEY,
        SELECTION_WORKEROUTPUT,
        WORKER_STAGING_KEY,
        EvidenceCollector,
        probe_source,
    )
    from pytest_specgate.evidence._gate import GateInputError, GateVerdict, PrBodyText, evaluate_gate
    from pytest_specgate.evidence._import_watch import WatchMark, watch_imports
    from pytest_specgate.evidence._journal import read_receipt
    from pytest_specgate.evidence._known_secrets import url_passwords
    from pytest_specgate.evidence._markdown import (
        EvidenceBlock,
        HiddenEvidence,
        PrBody,
        PrBodyError,
        parse_pr_body,
        read_pr_body,
        render_markdown,
        verdict_line,
    )
    from pytest_specgate.evidence._policy import POLICY_VERSION, PolicyVerdict, judge
    from pytest_specgate.evidence._recorder import (
        Attachment,
        EvidenceRecorder,
        empty_properties,
        staging_dir,
    )
    from pytest_specgate.evidence._records import SelectionFacts
    from pytest_specgate.evidence._redact import LocalIdentity, Redactor, build_redactor, write_redacted
    from pytest_specgate.evidence._redacted_output import RedactedLines, redact_writes, write_mask_commands
    from pytest_specgate.evidence._run_provenance import (
        collect_run_provenance,
        foreign_modules,
        interpreter_locations,
        option_plugin_names,
        run_modules,
    )
    from pytest_specgate.evidence._schema import evidence_schema, schema_problems
    from pytest_specgate.evidence._signing import (
        SignedBundle,
        SigningError,
        SigningKey,
        load_signing_key,
        sign_bundle,
    )
    from pytest_specgate.evidence._source import IMPORTED_FILES_KEY, git_top, imported_source_files
    from pytest_specgate.evidence._trust import TrustPolicy
    from pytest_specgate.evidence._trusted import TrustedConfig, TrustedConfigError, load_trusted_config
    from pytest_specgate.evidence._worker_secrets import SealError, seal, unseal
    from pytest_specgate.evidence._writer import NOT_QUALIFIED, QUALIFIED, WrittenBundle
    from pytest_specgate.selection.ac_marker import AC_MARKER_LINE, ac_from_marker

# Public names resolve on first use, so ``import pytest_specgate.evidence`` (which
# pytest pays for at collection as soon as one test has an ``ac`` marker) stays cheap.
_EXPORTS: dict[str, str] = {
    "read_receipt": "_journal",
    "AC_MARKER_LINE": "pytest_specgate.selection.ac_marker",
    "AcceptanceCriterion": "pytest_specgate.contracts.acceptance",
    "Attachment": "_recorder",
    "Bundle": "_bundle",
    "BundleError": "_bundle",
    "EvidenceBlock": "_markdown",
    "EvidenceCollector": "_collector",
    "FOREIGN_MODULES_KEY": "_collector",
    "collect_run_provenance": "_run_provenance",
    "foreign_modules": "_run_provenance",
    "interpreter_locations": "_run_provenance",
    "option_plugin_names": "_run_provenance",
    "run_modules": "_run_provenance",
    "watch_imports": "_import_watch",
    "WatchMark": "_import_watch",
    "IMPORTED_FILES_KEY": "_source",
    "SELECTION_WORKEROUTPUT": "_collector",
    "SelectionFacts": "_records",
    "SignedBundle": "_signing",
    "WORKER_STAGING_KEY": "_collector",
    "imported_source_files": "_source",
    "git_top": "_source",
    "EvidenceRecorder": "_recorder",
    "GateInputError": "_gate",
    "GateName": "pytest_specgate.contracts.gates",
    "GateOrderError": "pytest_specgate.contracts.gates",
    "GateVerdict": "_gate",
    "HiddenEvidence": "_markdown",
    "LocalIdentity": "_redact",
    "MANIFEST_NAME": "_bundle",
    "MARKDOWN_NAME": "_bundle",
    "Measurement": "_acrecord",
    "NOT_QUALIFIED": "_writer",
    "PrBody": "_markdown",
    "PrBodyError": "_markdown",
    "PrBodyText": "_gate",
    "QUALIFIED": "_writer",
    "RECEIPT_NAME": "_bundle",
    "Redactor": "_redact",
    "RedactedLines": "_redacted_output",
    "SCHEMA_ID": "_acrecord",
    "AcRecord": "_acrecord",
    "RecordError": "_acrecord",
    "POLICY_VERSION": "_policy",
    "PolicyVerdict": "_policy",
    "judge": "_policy",
    "SIGNATURE_NAME": "_bundle",
    "STATEMENT_NAME": "_bundle",
    "SigningError": "_signing",
    "SigningKey": "_signing",
    "TrustPolicy": "_trust",
    "TrustedConfig": "_trusted",
    "TrustedConfigError": "_trusted",
    "WrittenBundle": "_writer",
    "ac_from_marker": "pytest_specgate.selection.ac_marker",
    "build_redactor": "_redact",
    "redact_writes": "_redacted_output",
    "url_passwords": "_known_secrets",
    "write_mask_commands": "_redacted_output",
    "SealError": "_worker_secrets",
    "seal": "_worker_secrets",
    "unseal": "_worker_secrets",
    "bundle_digest": "_bundle",
    "empty_properties": "_recorder",
    "evaluate_gate": "_gate",
    "evidence_schema": "_schema",
    "find_bundles": "_bundle",
    "is_ac_id": "pytest_specgate.contracts.acceptance",
    "load_bundle": "_bundle",
    "load_signing_key": "_signing",
    "load_trusted_config": "_trusted",
    "parse_gate_name": "pytest_specgate.contracts.gates",
    "parse_pr_body": "_markdown",
    "probe_source": "_collector",
    "read_pr_body": "_markdown",
    "read_records": "_bundle",
    "render_markdown": "_markdown",
    "schema_problems": "_schema",
    "sign_bundle": "_signing",
    "staging_dir": "_recorder",
    "verdict_line": "_markdown",
    "verify_bundle": "_bundle",
    "write_redacted": "_redact",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


__all__ = [
    "AC_MARKER_LINE",
    "FOREIGN_MODULES_KEY",
    "IMPORTED_FILES_KEY",
    "MANIFEST_NAME",
    "MARKDOWN_NAME",
    "NOT_QUALIFIED",
    "POLICY_VERSION",
    "QUALIFIED",
    "RECEIPT_NAME",
    "SCHEMA_ID",
    "SELECTION_WORKEROUTPUT",
    "SIGNATURE_NAME",
    "STATEMENT_NAME",
    "WORKER_STAGING_KEY",
    "AcRecord",
    "AcceptanceCriterion",
    "Attachment",
    "Bundle",
    "BundleError",
    "EvidenceBlock",
    "EvidenceCollector",
    "EvidenceRecorder",
    "GateInputError",
    "GateName",
    "GateOrderError",
    "GateVerdict",
    "HiddenEvidence",
    "LocalIdentity",
    "Measurement",
    "PolicyVerdict",
    "PrBody",
    "PrBodyError",
    "PrBodyText",
    "RecordError",
    "RedactedLines",
    "Redactor",
    "SealError",
    "SelectionFacts",
    "SignedBundle",
    "SigningError",
    "SigningKey",
    "TrustPolicy",
    "TrustedConfig",
    "TrustedConfigError",
    "WatchMark",
    "WrittenBundle",
    "ac_from_marker",
    "build_redactor",
    "bundle_digest",
    "collect_run_provenance",
    "empty_properties",
    "evaluate_gate",
    "evidence_schema",
    "find_bundles",
    "foreign_modules",
    "git_top",
    "imported_source_files",
    "interpreter_locations",
    "is_ac_id",
    "judge",
    "load_bundle",
    "load_signing_key",
    "load_trusted_config",
    "option_plugin_names",
    "parse_gate_name",
    "parse_pr_body",
    "probe_source",
    "read_pr_body",
    "read_receipt",
    "read_records",
    "redact_writes",
    "render_markdown",
    "run_modules",
    "schema_problems",
    "seal",
    "sign_bundle",
    "staging_dir",
    "unseal",
    "url_passwords",
    "verdict_line",
    "verify_bundle",
    "watch_imports",
    "write_mask_commands",
    "write_redacted",
]
