"""Evidence: AC markers, the ``evidence`` fixture's recorder, redaction, bundles and the gate.

Data flows one way: marker + reports -> records -> redaction -> bundle -> markdown -> gate.
"""

from __future__ import annotations

from pytest_specgate.evidence._bundle import (
    MANIFEST_NAME,
    MARKDOWN_NAME,
    RECEIPT_NAME,
    STATEMENT_NAME,
    Bundle,
    BundleError,
    bundle_digest,
    evidence_schema,
    find_bundles,
    load_bundle,
    read_records,
    schema_problems,
    verify_bundle,
)
from pytest_specgate.evidence._collector import EvidenceCollector, probe_source
from pytest_specgate.evidence._gate import GateInputError, GateVerdict, evaluate_gate
from pytest_specgate.evidence._gates import GateName, GateOrderError, parse_gate_name
from pytest_specgate.evidence._markdown import EvidenceBlock, PrBodyError, parse_pr_body, render_markdown
from pytest_specgate.evidence._marker import AC_MARKER_LINE, AcceptanceCriterion, ac_from_marker, is_ac_id
from pytest_specgate.evidence._recorder import (
    Attachment,
    EvidenceRecorder,
    Measurement,
    empty_properties,
    staging_dir,
)
from pytest_specgate.evidence._records import SCHEMA_ID, USER_PROPERTY_NAME, specgate_properties
from pytest_specgate.evidence._redact import LocalIdentity, Redactor, build_redactor, write_redacted
from pytest_specgate.evidence._writer import NOT_QUALIFIED, QUALIFIED, WrittenBundle

__all__ = [
    "AC_MARKER_LINE",
    "MANIFEST_NAME",
    "MARKDOWN_NAME",
    "NOT_QUALIFIED",
    "QUALIFIED",
    "RECEIPT_NAME",
    "SCHEMA_ID",
    "STATEMENT_NAME",
    "USER_PROPERTY_NAME",
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
    "LocalIdentity",
    "Measurement",
    "PrBodyError",
    "Redactor",
    "WrittenBundle",
    "ac_from_marker",
    "build_redactor",
    "bundle_digest",
    "empty_properties",
    "evaluate_gate",
    "evidence_schema",
    "find_bundles",
    "is_ac_id",
    "load_bundle",
    "parse_gate_name",
    "parse_pr_body",
    "probe_source",
    "read_records",
    "render_markdown",
    "schema_problems",
    "specgate_properties",
    "staging_dir",
    "verify_bundle",
    "write_redacted",
]
