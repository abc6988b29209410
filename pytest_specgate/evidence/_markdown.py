"""``## AC-10 evidence`` blocks: rendered from records, parsed back out of a PR body.

Each block ends with one machine-readable line,
``specgate-evidence AC-10 ac-sha256=<64 hex> bundle-sha256=<64 hex>``, binding what a reviewer
reads to the exact AC file and bundle the gate verifies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_specgate.evidence._jsonio import JsonValue
from pytest_specgate.evidence._marker import is_ac_id

DIGEST_KEYWORD = "specgate-evidence"
_HEADER = re.compile(r"^##\s+(?P<ac>\S+)\s+evidence\s*$")
_SECTION = re.compile(r"^#{1,2}\s")
_DIGEST = re.compile(
    r"specgate-evidence\s+(?P<ac>\S+)\s+ac-sha256=(?P<ac_sha>[0-9a-f]{64})\s+"
    r"bundle-sha256=(?P<bundle_sha>[0-9a-f]{64})(?![0-9a-f])"
)


class PrBodyError(Exception):
    """A PR body whose evidence blocks cannot be read (exit 2)."""


@dataclass(frozen=True)
class EvidenceBlock:
    ac_id: str
    ac_sha256: str
    bundle_sha256: str
    line: int


def digest_line(ac_id: str, ac_sha256: str, bundle_sha256: str) -> str:
    return f"{DIGEST_KEYWORD} {ac_id} ac-sha256={ac_sha256} bundle-sha256={bundle_sha256}"


def _cell(value: JsonValue) -> str:
    text = "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
    return text.replace("|", "\\|").replace("\n", " ")


def _threshold(row: Mapping[str, JsonValue]) -> str:
    bounds = []
    if row.get("at_least") is not None:
        bounds.append(f"≥ {_cell(row['at_least'])}")
    if row.get("at_most") is not None:
        bounds.append(f"≤ {_cell(row['at_most'])}")
    return ", ".join(bounds) or "—"


def _verdict(record: Mapping[str, JsonValue]) -> str:
    outcome = str(record.get("outcome", "unknown")).upper()
    return f"{outcome} · {'QUALIFYING' if record.get('qualifying') else 'NOT QUALIFYING'}"


def _test_counts(record: Mapping[str, JsonValue]) -> str:
    counts: dict[str, int] = {}
    tests = record.get("tests")
    for test in tests if isinstance(tests, list) else []:
        outcome = str(test.get("outcome")) if isinstance(test, Mapping) else "unknown"
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())) or "none"


def render_ac_block(record: Mapping[str, JsonValue], ac_sha256: str, bundle_sha256: str) -> str:
    ac = record.get("ac")
    ac_info = ac if isinstance(ac, Mapping) else {}
    ac_id = str(ac_info.get("id"))
    heading = " ".join(str(part) for part in (ac_info.get("spec"), ac_info.get("title")) if part)
    host = record.get("host")
    summary = host.get("summary") if isinstance(host, Mapping) else None
    reasons = record.get("not_qualifying_reasons")
    lines = [f"## {ac_id} evidence", "", f"**Verdict: {_verdict(record)}**", ""]
    if heading:
        lines.append(f"- Criterion: {_cell(heading)}")
    lines.append(f"- Host: {_cell(summary)}")
    lines.append(f"- Mode: {_cell(record.get('mode'))}; tests: {_test_counts(record)}")
    if record.get("qualifying"):
        lines.append("- Qualifying: yes")
    else:
        why = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else "unknown"
        lines.append(f"- Qualifying: no — {_cell(why)}")
    waiver = record.get("waiver")
    if isinstance(waiver, Mapping):
        lines.append(f"- Waiver: waived → {_cell(waiver.get('to'))}: {_cell(waiver.get('reason'))}")
    source = record.get("source")
    if isinstance(source, Mapping):
        lines.append(
            f"- Commit: {_cell(source.get('commit') or 'unknown')}"
            + (" (dirty)" if source.get("dirty") else "")
        )
    measurements = record.get("measurements")
    rows = [row for row in measurements if isinstance(row, Mapping)] if isinstance(measurements, list) else []
    if rows:
        lines += ["", "| measurement | value | unit | threshold | result |", "|---|---|---|---|---|"]
        lines += [
            f"| {_cell(row.get('name'))} | {_cell(row.get('value'))} | {_cell(row.get('unit'))} | "
            f"{_threshold(row)} | {'pass' if row.get('passed') else 'FAIL'} |"
            for row in rows
        ]
    lines += ["", f"`{digest_line(ac_id, ac_sha256, bundle_sha256)}`", ""]
    return "\n".join(lines)


def render_markdown(blocks: Sequence[tuple[Mapping[str, JsonValue], str]], bundle_sha256: str) -> str:
    """One block per AC, in AC id order; ``blocks`` pairs each record with its file's sha256."""
    if not blocks:
        return "No acceptance criteria ran: this bundle is evidence for nothing.\n"
    return "\n".join(render_ac_block(record, ac_sha, bundle_sha256) for record, ac_sha in blocks)


def parse_pr_body(text: str, source: str) -> list[EvidenceBlock]:
    """Every ``## <AC> evidence`` block and its digest line; a broken block is a PrBodyError."""
    lines = text.splitlines()
    blocks: list[EvidenceBlock] = []
    index = 0
    while index < len(lines):
        header = _HEADER.match(lines[index].strip())
        if header is None or not is_ac_id(header.group("ac")):
            index += 1
            continue
        start = index
        index += 1
        while index < len(lines) and not _SECTION.match(lines[index]):
            index += 1
        blocks.append(_parse_block(header.group("ac"), lines[start + 1 : index], start + 1, source))
    return blocks


def _parse_block(ac_id: str, body: Sequence[str], header_line: int, source: str) -> EvidenceBlock:
    mentions = [
        (header_line + offset + 1, line) for offset, line in enumerate(body) if DIGEST_KEYWORD in line
    ]
    where = f"{source}:{header_line}: block '## {ac_id} evidence'"
    if not mentions:
        raise PrBodyError(f"{where} has no '{DIGEST_KEYWORD} {ac_id} ac-sha256=… bundle-sha256=…' line")
    if len(mentions) > 1:
        raise PrBodyError(f"{where} has {len(mentions)} {DIGEST_KEYWORD} lines; expected one")
    line_number, line = mentions[0]
    match = _DIGEST.search(line)
    if match is None:
        raise PrBodyError(
            f"{source}:{line_number}: malformed digest line, expected "
            f"'{DIGEST_KEYWORD} {ac_id} ac-sha256=<64 hex> bundle-sha256=<64 hex>', found {line.strip()!r}"
        )
    if match.group("ac") != ac_id:
        raise PrBodyError(f"{source}:{line_number}: digest line names {match.group('ac')} inside {where}")
    return EvidenceBlock(
        ac_id=ac_id,
        ac_sha256=match.group("ac_sha"),
        bundle_sha256=match.group("bundle_sha"),
        line=header_line,
    )
