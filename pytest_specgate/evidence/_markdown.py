"""``## AC-10 evidence`` blocks: rendered from records, parsed back out of a PR body.

Each block ends with one machine-readable line,
``specgate-evidence AC-10 ac-sha256=<64 hex> bundle-sha256=<64 hex>``, binding what a reviewer
reads to the exact AC file and bundle the gate verifies.

The parser takes PR bodies as people write them: ``#`` to ``###`` headings with words after
``AC-N evidence``, blocks quoted with ``>``, CRLF line ends, and prose that mentions
``specgate-evidence``. Only what a reviewer sees counts: a block (or its digest line) inside an
HTML comment, a fenced code block or an indented code block is not evidence; it is reported as
hidden so the gate can say why the AC has no block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_specgate.contracts.acceptance import is_ac_id
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import AcRecord, MeasurementRow
from pytest_specgate.evidence._policy import PolicyVerdict

DIGEST_KEYWORD = "specgate-evidence"
VERDICT_PREFIX = "**Verdict: "
_HEADING = re.compile(r"^ {0,3}(?P<level>#{1,6})(?:\s+(?P<title>.*?))?\s*#*\s*$")
_EVIDENCE_TITLE = re.compile(r"^(?P<ac>\S+)\s+evidence\b", re.IGNORECASE)
_MAX_EVIDENCE_LEVEL = 3
_DIGEST = re.compile(
    r"specgate-evidence\s+(?P<ac>\S+)\s+ac-sha256=(?P<ac_sha>[0-9a-f]{64})\s+"
    r"bundle-sha256=(?P<bundle_sha>[0-9a-f]{64})(?![0-9a-f])"
)
_DIGEST_ATTEMPT = re.compile(r"specgate-evidence\s+\S+\s+(?:ac|bundle)-sha256=")
_VERDICT = re.compile(r"^\W*Verdict:\s*(?P<text>.*?)[\s*_]*$")
_QUOTE = re.compile(r"^ {0,3}> ?")
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"

HIDDEN_IN_COMMENT = "an HTML comment"
HIDDEN_IN_FENCED_CODE = "a fenced code block"
HIDDEN_IN_INDENTED_CODE = "an indented code block"


class PrBodyError(Exception):
    """A PR body whose evidence blocks cannot be read (exit 2)."""


@dataclass(frozen=True)
class EvidenceBlock:
    """One visible evidence block of a PR body.

    ``verdict_text`` is what its ``**Verdict: …**`` line shows a reviewer (``"PASSED ·
    QUALIFYING"``), or None when the block has no such line; the gate compares it with the
    ``label`` of the verdict it recomputes.
    """

    ac_id: str
    ac_sha256: str
    bundle_sha256: str
    line: int
    verdict_text: str | None = None
    verdict_line: int | None = None
    body: tuple[tuple[int, str], ...] = ()
    """``(line number, visible text)`` of every line after the heading, as a reviewer sees it
    (quote markers and HTML comments taken out, code hidden): what the gate compares with the
    block it re-renders from the bound record."""


@dataclass(frozen=True)
class HiddenEvidence:
    """An evidence heading or digest line a reviewer cannot see: not evidence, but worth naming."""

    ac_id: str
    line: int
    hidden_in: str

    def describe(self) -> str:
        return f"line {self.line} is inside {self.hidden_in}"


@dataclass(frozen=True)
class PrBody:
    """What a PR body holds: the visible blocks and the evidence hidden from reviewers."""

    blocks: tuple[EvidenceBlock, ...]
    hidden: tuple[HiddenEvidence, ...]

    def hidden_for(self, ac_id: str) -> tuple[HiddenEvidence, ...]:
        return tuple(entry for entry in self.hidden if entry.ac_id == ac_id)


def digest_line(ac_id: str, ac_sha256: str, bundle_sha256: str) -> str:
    return f"{DIGEST_KEYWORD} {ac_id} ac-sha256={ac_sha256} bundle-sha256={bundle_sha256}"


def _cell(value: JsonValue) -> str:
    text = "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
    return text.replace("|", "\\|").replace("\n", " ")


def _threshold(row: MeasurementRow) -> str:
    bounds = []
    if row.at_least is not None:
        bounds.append(f"≥ {_cell(row.at_least)}")
    if row.at_most is not None:
        bounds.append(f"≤ {_cell(row.at_most)}")
    return ", ".join(bounds) or "—"


_RESULT_CELLS = {"passed": "pass", "failed": "FAIL", "inconclusive": "INCONCLUSIVE"}


def _value_cell(row: MeasurementRow) -> str:
    """The value, then its interval and level when it has one, and ``(point)`` when the spec chose
    to be judged on the point value although an interval exists."""
    if row.ci_low is None and row.ci_high is None and row.confidence_level is None:
        return _cell(row.value)
    low = "-inf" if row.ci_low is None else _cell(row.ci_low)
    high = "+inf" if row.ci_high is None else _cell(row.ci_high)
    level = "" if row.confidence_level is None else f" {row.confidence_level:.0%}"
    rule = " (judged on the point)" if row.decide == "point" else ""
    return f"{_cell(row.value)} [{low}, {high}]{level}{rule}"


def _test_counts(record: AcRecord) -> str:
    counts: dict[str, int] = {}
    for test in record.tests:
        counts[test.outcome] = counts.get(test.outcome, 0) + 1
    return ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())) or "none"


def _host_line(record: AcRecord) -> str:
    provenance = record.host.provenance
    if provenance is None:
        return f"{record.host.summary} (provenance unknown)"
    if provenance.simulated or provenance.origin != "probe":
        detail = f" {provenance.detail}" if provenance.detail else ""
        return f"{record.host.summary} (simulated: {provenance.origin}{detail})"
    return record.host.summary


def verdict_line(verdict: PolicyVerdict) -> str:
    """The line a reviewer reads; the gate compares it with the verdict it recomputes."""
    return f"{VERDICT_PREFIX}{verdict.label}**"


def render_ac_block(record: AcRecord, verdict: PolicyVerdict, ac_sha256: str, bundle_sha256: str) -> str:
    """One AC's block, every verdict in it as :func:`judge` derived it, not as the record states."""
    heading = " ".join(part for part in (record.ac.spec, record.ac.title) if part)
    lines = [f"## {record.ac.id} evidence", "", verdict_line(verdict), ""]
    if heading:
        lines.append(f"- Criterion: {_cell(heading)}")
    lines.append(f"- Host: {_cell(_host_line(record))}")
    lines.append(f"- Mode: {_cell(verdict.mode)}; tests: {_test_counts(record)}")
    if verdict.qualifying:
        lines.append(f"- Qualifying: yes ({verdict.policy})")
    else:
        lines.append(f"- Qualifying: no ({verdict.policy}) — {_cell('; '.join(verdict.reasons))}")
    if verdict.waiver is not None:
        lines.append(f"- Waiver: waived → {_cell(verdict.waiver.to)}: {_cell(verdict.waiver.reason)}")
    lines.append(
        f"- Commit: {_cell(record.source.commit or 'unknown')}" + (" (dirty)" if record.source.dirty else "")
    )
    if record.measurements:
        lines += ["", "| measurement | value | unit | threshold | result |", "|---|---|---|---|---|"]
        lines += [
            f"| {_cell(row.name)} | {_value_cell(row)} | {_cell(row.unit)} | "
            f"{_threshold(row)} | {_RESULT_CELLS[row.verdict().verdict]} |"
            for row in record.measurements
        ]
    lines += ["", f"`{digest_line(record.ac.id, ac_sha256, bundle_sha256)}`", ""]
    return "\n".join(lines)


def render_markdown(blocks: Sequence[tuple[AcRecord, PolicyVerdict, str]], bundle_sha256: str) -> str:
    """One block per AC, in the order given; each record comes with its verdict and its file's sha256."""
    if not blocks:
        return "No acceptance criteria ran: this bundle is evidence for nothing.\n"
    return "\n".join(
        render_ac_block(record, verdict, ac_sha, bundle_sha256) for record, verdict, ac_sha in blocks
    )


@dataclass(frozen=True)
class _Line:
    """One line of a PR body as a reviewer sees it: quote markers and comments taken out."""

    number: int
    visible: str
    hidden: tuple[tuple[str, str], ...]
    """``(text, where)`` parts a reviewer cannot see."""


def _split_comments(text: str, in_comment: bool) -> tuple[str, list[str], bool]:
    """Visible text, commented-out parts, and whether a comment is still open at the end."""
    visible: list[str] = []
    hidden: list[str] = []
    rest = text
    while rest:
        if in_comment:
            end = rest.find(_COMMENT_CLOSE)
            if end < 0:
                hidden.append(rest)
                return "".join(visible), hidden, True
            hidden.append(rest[:end])
            rest = rest[end + len(_COMMENT_CLOSE) :]
            in_comment = False
        else:
            start = rest.find(_COMMENT_OPEN)
            if start < 0:
                visible.append(rest)
                break
            visible.append(rest[:start])
            rest = rest[start + len(_COMMENT_OPEN) :]
            in_comment = True
    return "".join(visible), hidden, in_comment


def _closes(fence: str, candidate: str, rest: str) -> bool:
    return candidate[0] == fence[0] and len(candidate) >= len(fence) and not rest.strip()


def _visible_lines(text: str) -> list[_Line]:
    """Classify each line: fenced and indented code and HTML comments are hidden from reviewers."""
    lines: list[_Line] = []
    fence: str | None = None
    in_comment = False
    previous_blank = True
    in_indented_code = False
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        content = raw
        while (quote := _QUOTE.match(content)) is not None:
            content = content[quote.end() :]
        if fence is not None:
            closing = _FENCE.match(content)
            if closing is not None and _closes(fence, closing.group("fence"), content[closing.end() :]):
                fence = None
            lines.append(_Line(number, "", ((content, HIDDEN_IN_FENCED_CODE),)))
            continue
        if not in_comment:
            opening = _FENCE.match(content)
            if opening is not None:
                fence = opening.group("fence")
                lines.append(_Line(number, "", ((content, HIDDEN_IN_FENCED_CODE),)))
                previous_blank = in_indented_code = False
                continue
            indented = content.startswith(("    ", "\t")) and bool(content.strip())
            if indented and (previous_blank or in_indented_code):
                in_indented_code = True
                lines.append(_Line(number, "", ((content, HIDDEN_IN_INDENTED_CODE),)))
                continue
            if content.strip():
                in_indented_code = False
        visible, commented, in_comment = _split_comments(content, in_comment)
        lines.append(_Line(number, visible, tuple((part, HIDDEN_IN_COMMENT) for part in commented)))
        previous_blank = not content.strip()
    return lines


def _evidence_heading(text: str) -> tuple[int, str] | None:
    """``(level, ac id)`` of an ``#``–``###`` ``AC-N evidence …`` heading, else None."""
    heading = _HEADING.match(text)
    if heading is None:
        return None
    title = _EVIDENCE_TITLE.match(heading.group("title") or "")
    level = len(heading.group("level"))
    if title is None or level > _MAX_EVIDENCE_LEVEL or not is_ac_id(title.group("ac")):
        return None
    return level, title.group("ac")


def _heading_level(text: str) -> int | None:
    heading = _HEADING.match(text)
    return None if heading is None else len(heading.group("level"))


def _hidden_evidence(lines: Sequence[_Line]) -> list[HiddenEvidence]:
    found: list[HiddenEvidence] = []
    for line in lines:
        for part, where in line.hidden:
            for piece in part.split("\n"):
                heading = _evidence_heading(piece.strip())
                digest = _DIGEST.search(piece)
                ac_id = heading[1] if heading else (digest.group("ac") if digest else None)
                if ac_id is not None and is_ac_id(ac_id):
                    found.append(HiddenEvidence(ac_id, line.number, where))
    return found


def read_pr_body(text: str, source: str) -> PrBody:
    """Every visible ``AC-N evidence`` block and its digest line, plus evidence hidden from view.

    A block runs from its heading to the next heading of the same or a higher level (or the
    next evidence heading). A broken visible block is a PrBodyError naming ``source`` and line.
    """
    lines = _visible_lines(text)
    blocks: list[EvidenceBlock] = []
    index = 0
    while index < len(lines):
        heading = _evidence_heading(lines[index].visible)
        if heading is None:
            index += 1
            continue
        level, ac_id = heading
        start = index
        index += 1
        while index < len(lines):
            other = _heading_level(lines[index].visible)
            if (other is not None and other <= level) or _evidence_heading(lines[index].visible):
                break
            index += 1
        blocks.append(_parse_block(ac_id, lines[start], lines[start + 1 : index], source))
    return PrBody(blocks=tuple(blocks), hidden=tuple(_hidden_evidence(lines)))


def parse_pr_body(text: str, source: str) -> list[EvidenceBlock]:
    """The visible evidence blocks of a PR body (see :func:`read_pr_body`)."""
    return list(read_pr_body(text, source).blocks)


def _parse_block(ac_id: str, heading: _Line, body: Sequence[_Line], source: str) -> EvidenceBlock:
    where = f"{source}:{heading.number}: block '{heading.visible.strip()}'"
    digests = [(line, match) for line in body if (match := _DIGEST.search(line.visible))]
    attempts = [line for line in body if _DIGEST_ATTEMPT.search(line.visible)]
    if attempts and not digests:
        raise PrBodyError(
            f"{source}:{attempts[0].number}: malformed digest line, expected '{DIGEST_KEYWORD} {ac_id} "
            f"ac-sha256=<64 hex> bundle-sha256=<64 hex>', found {attempts[0].visible.strip()!r}"
        )
    if not digests:
        hidden = [
            f"line {line.number} is inside {where_hidden}"
            for line in body
            for part, where_hidden in line.hidden
            if _DIGEST.search(part)
        ]
        also = f" ({'; '.join(hidden)}, which a reviewer cannot see)" if hidden else ""
        raise PrBodyError(
            f"{where} has no '{DIGEST_KEYWORD} {ac_id} ac-sha256=… bundle-sha256=…' line{also}"
        )
    if len(digests) > 1:
        numbers = ", ".join(str(line.number) for line, _ in digests)
        raise PrBodyError(
            f"{where} has {len(digests)} {DIGEST_KEYWORD} lines (lines {numbers}); expected one"
        )
    line, match = digests[0]
    if match.group("ac") != ac_id:
        raise PrBodyError(f"{source}:{line.number}: digest line names {match.group('ac')} inside {where}")
    verdicts = [(row, found) for row in body if (found := _VERDICT.match(row.visible.strip()))]
    return EvidenceBlock(
        ac_id=ac_id,
        ac_sha256=match.group("ac_sha"),
        bundle_sha256=match.group("bundle_sha"),
        line=heading.number,
        verdict_text=verdicts[0][1].group("text") if verdicts else None,
        verdict_line=verdicts[0][0].number if verdicts else None,
        body=tuple((row.number, row.visible) for row in body),
    )
