"""``## AC-10 evidence`` blocks: rendered from records, parsed back out of a PR body.

Each block ends with one machine-readable line,
``specgate-evidence AC-10 ac-sha256=<64 hex> bundle-sha256=<64 hex>``, binding what a reviewer
reads to the exact AC file and bundle the gate verifies.

Two layouts are rendered. Layout 2 (written now) states once, in the summary, what every AC of a
run shares (its host line, the reasons not to qualify every AC of it gives): a block names the
run and counts those reasons, and the gate prints them when it rejects a block. Layout 1 (written
before) repeats them in every block: 10,000 ACs of one run wrote them 10,000 times. A bundle's
``evidence.md`` says which layout it is (:func:`markdown_layout`); the gate and ``render`` render
that one, so a bundle written in layout 1 (signed, or pasted already) still verifies.

No record string stands in key position of a ``key: value`` or ``key=value`` join with another
record string (a test named ``test_password`` before a measurement name would read as a
credential assignment to every rule that reads a line): a test's name goes in its own table cell
or in parentheses after what it gave.

The parser takes PR bodies as people write them: ``#`` to ``###`` headings with words after
``AC-N evidence``, blocks quoted with ``>``, CRLF line ends, and prose that mentions
``specgate-evidence``. Only what a reviewer sees counts: a block (or its digest line) inside an
HTML comment, a fenced code block or an indented code block is not evidence; it is reported as
hidden so the gate can say why the AC has no block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from pytest_specgate.contracts.acceptance import is_ac_id
from pytest_specgate.contracts.engine import declared_version
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.markers import BUILTIN_BACKEND_NAMES
from pytest_specgate.contracts.speedup_model import line_from_figures
from pytest_specgate.evidence._acrecord import AcRecord, AttachmentRow, EngineFact, Measurement, Waiver
from pytest_specgate.evidence._policy import SIMULATED_BACKENDS, PolicyVerdict

_Row = TypeVar("_Row", Measurement, AttachmentRow)

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
    heading: str = ""
    """The heading as a reviewer sees it; the gate accepts exactly ``## AC-N evidence``."""


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


SUMMARY_HEADING = "## specgate summary"
NOT_SIGNED = "not signed when written"
"""The signer cell of a bundle's own ``evidence.md``: signatures are added after it is written."""
RECORDED = "recorded"
"""The result cell of a measurement without a bound: a figure kept, not a check passed."""
LAYOUT_PER_BLOCK = 1
"""Every block states its host line and every reason (``evidence.md`` written before layout 2)."""
LAYOUT_RUN_ONCE = 2
"""The summary states what every AC of a run shares once; blocks name the run (written now)."""
CURRENT_LAYOUT = LAYOUT_RUN_ONCE
RUNS_INTRO = (
    "What every AC of a run shares (its host line, its reasons not to qualify) is stated once here; "
    "a block names its run, and the gate prints the reasons it judged."
)
"""The line after the summary heading, in layout 2 only: what :func:`markdown_layout` reads."""


def _cell(value: JsonValue) -> str:
    text = "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
    return text.replace("|", "\\|").replace("\n", " ")


def _threshold(row: Measurement) -> str:
    bounds = []
    if row.at_least is not None:
        bounds.append(f"≥ {_cell(row.at_least)}")
    if row.at_most is not None:
        bounds.append(f"≤ {_cell(row.at_most)}")
    return ", ".join(bounds) or "—"


def _bounded(row: Measurement) -> bool:
    return row.at_least is not None or row.at_most is not None


_RESULT_CELLS = {"passed": "pass", "failed": "FAIL", "inconclusive": "INCONCLUSIVE"}


def _result(row: Measurement) -> str:
    if not _bounded(row):
        return RECORDED
    return _RESULT_CELLS[row.verdict.verdict]


def _figure(row: Measurement) -> str:
    """The value and unit, then its interval and level when it has one, and ``(judged on the
    point)`` when the spec chose to be judged on the point value although an interval exists."""
    shown = f"{_cell(row.value)} {_cell(row.unit)}" if row.unit else _cell(row.value)
    if row.ci_low is None and row.ci_high is None and row.confidence_level is None:
        return shown
    low = "-inf" if row.ci_low is None else _cell(row.ci_low)
    high = "+inf" if row.ci_high is None else _cell(row.ci_high)
    level = "" if row.confidence_level is None else f" {row.confidence_level:.0%}"
    rule = " (judged on the point)" if row.decide == "point" else ""
    return f"{shown} [{low}, {high}]{level}{rule}"


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


def _test_name(nodeid: str) -> str:
    """What follows the file in a node id (``test_x[param]``): short, and unique within an AC."""
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) and value else None


def _engine_version(engine: EngineFact) -> str:
    """The serving software's version as the plugin read it (``versions()``), else ``unknown``; a
    third-party backend's first declared entry shows with its name (``1.0 (specgate-echo)``)."""
    versions = engine.versions or {}
    for key in (engine.backend, f"{engine.backend}-lm", f"{engine.backend}_server", "version"):
        found = _text(versions.get(key))
        if found is not None:
            return found
    declared = None if engine.backend in BUILTIN_BACKEND_NAMES else declared_version(versions)
    return "unknown" if declared is None else f"{declared[1]} ({declared[0]})"


def _server_says(engine: EngineFact, layout: int) -> str:
    """The server's own identity: its name and version, its ``server`` header, the models it lists.

    Layout 2 gives the version a word of its own (``specgate-mock (version 0.1.0)``): the name
    and version are both the server's strings, and a name ``api_key:`` before a version reads as
    a key and its value.
    """
    identity = engine.identity or {}
    server_name, version = _text(identity.get("engine")), _text(identity.get("version"))
    if layout == LAYOUT_PER_BLOCK or server_name is None or version is None:
        name = " ".join(part for part in (server_name, version) if part)
    else:
        name = f"{server_name} (version {version})"
    header = _text(identity.get("server"))
    listed = identity.get("models")
    models = sorted(
        {model["id"] for model in listed if isinstance(model, dict) and isinstance(model.get("id"), str)}
        if isinstance(listed, list) else set()
    )
    parts = [name or "no name or version", *([f"header {header}"] if header else [])]
    parts += [f"serving {', '.join(models)}"] if models else []
    return ", ".join(parts)


def _simulated(engine: EngineFact) -> str:
    return " (simulated)" if engine.backend in SIMULATED_BACKENDS or engine.simulated else ""


def _engine_text(engine: EngineFact, layout: int) -> str:
    return (
        f"{engine.backend}{_simulated(engine)}, model {engine.model or 'unknown'}, "
        f"version {_engine_version(engine)}; the server says: {_server_says(engine, layout)}"
    )


def _engines(record: AcRecord, layout: int) -> list[tuple[str, int]]:
    """Each distinct engine the tests were handed (the port aside) and how many tests it served."""
    counted: dict[str, int] = {}
    for test in record.tests:
        for text in dict.fromkeys(_engine_text(engine, layout) for engine in test.engines or ()):
            counted[text] = counted.get(text, 0) + 1
    return list(counted.items())


def _engine_short(engine: EngineFact, layout: int) -> str:
    """The summary's name of an engine: layout 1 joined backend and model (``mock tiny:target``);
    layout 2 names the model after a word of its own (``mock (simulated), model tiny:target``),
    as two strings of the record a backend ``api_key:`` and a model would read as a key and value."""
    if layout == LAYOUT_PER_BLOCK:
        return f"{engine.backend} {engine.model or ''}".strip() + _simulated(engine)
    return f"{engine.backend}{_simulated(engine)}" + (f", model {engine.model}" if engine.model else "")


def _engines_short(record: AcRecord, layout: int) -> str:
    names = dict.fromkeys(_engine_short(engine, layout)
                          for test in record.tests for engine in test.engines or ())
    return ("; " if layout != LAYOUT_PER_BLOCK else ", ").join(names) or "none recorded"


def _tests_phrase(nodeids: Sequence[str]) -> str:
    return f"`{_test_name(nodeids[0])}`" if len(nodeids) == 1 else f"{len(nodeids)} tests"


ATTACHMENT_REASON = "attachment "
"""How the policy begins the reason of an attachment missing from the bundle:
``attachment <nodeid>: <name> … is missing from the bundle``."""


def _reason_of_test(reason: str, nodeids: Sequence[str], layout: int) -> tuple[str, str | None]:
    """``(why, nodeid)`` of a reason the policy words ``<nodeid>: <why>`` (layout 2 also takes
    ``attachment <nodeid>: <name> …`` apart, as ``attachment <name> …`` of that test, so the
    test's name is not shown as the key of the attachment's); ``(reason, None)`` for the AC's."""
    nodeid = next((n for n in nodeids if reason.startswith(f"{n}: ")), None)
    if nodeid is not None:
        return reason[len(nodeid) + 2 :], nodeid
    if layout != LAYOUT_PER_BLOCK and reason.startswith(ATTACHMENT_REASON):
        rest = reason[len(ATTACHMENT_REASON) :]
        nodeid = next((n for n in nodeids if rest.startswith(f"{n}: ")), None)
        if nodeid is not None:
            return ATTACHMENT_REASON + rest[len(nodeid) + 2 :], nodeid
    return reason, None


def grouped_reasons(
    record: AcRecord, reasons: Sequence[str], layout: int = CURRENT_LAYOUT
) -> list[tuple[str, tuple[str, ...]]]:
    """Each distinct reason once, with the tests that gave it (empty: a reason about the whole AC).

    The policy words a test's reason ``<nodeid>: <why>``; fourteen tests on the mock give one
    ``why`` fourteen times, which a reader needs once, with its count. ``layout``: the blocks'
    (layout 1 grouped only ``<nodeid>: `` reasons); the gate's lines group as the current one.
    """
    nodeids = sorted({test.nodeid for test in record.tests}, key=len, reverse=True)
    grouped: dict[str, list[str]] = {}
    for reason in reasons:
        why, nodeid = _reason_of_test(reason, nodeids, layout)
        tests = grouped.setdefault(why, [])
        if nodeid is not None and nodeid not in tests:
            tests.append(nodeid)
    return [(why, tuple(tests)) for why, tests in grouped.items()]


def _qualifying_lines(record: AcRecord, verdict: PolicyVerdict, layout: int) -> list[str]:
    if verdict.qualifying:
        return [f"- Qualifying: yes ({verdict.policy})"]
    grouped = grouped_reasons(record, verdict.reasons, layout)
    lines = [f"- Qualifying: no ({verdict.policy}), {len(grouped)} reason{'s' if len(grouped) != 1 else ''}:"]
    lines += [
        f"  - {_cell(why)}" + (f" ({_tests_phrase(tests)})" if tests else "") for why, tests in grouped
    ]
    return lines


@dataclass(frozen=True)
class RunShared:
    """What every AC of one run in a bundle shares, which layout 2 states once in the summary.

    ``number`` is the run's place in the summary's list (runs in run-id order); ``host`` the host
    line every AC of the run shows (None where they differ); ``reasons`` the reasons not to qualify
    that every AC of it gives and that name none of its tests, in the first AC's order.
    """

    number: int
    run_id: str
    acs: int
    host: str | None
    reasons: tuple[str, ...]

    @property
    def named(self) -> str:
        return f"run {self.number} (`{_cell(self.run_id)}`)"


def shared_run_facts(blocks: Sequence[tuple[AcRecord, PolicyVerdict, str]]) -> dict[str, RunShared]:
    """Each run of ``blocks`` with at least two ACs that share a host line or a reason, by run id.

    A reason that names a test is the test's, never the run's (it is shown with its test); a run
    of one AC shares nothing with another, so its block keeps everything.
    """
    members: dict[str, list[tuple[AcRecord, PolicyVerdict]]] = {}
    for record, verdict, _ in blocks:
        members.setdefault(record.run.id, []).append((record, verdict))
    shared: dict[str, RunShared] = {}
    for run_id in sorted(members):
        ran = members[run_id]
        if len(ran) < 2:
            continue
        hosts = {_host_line(record) for record, _ in ran}
        first_record, first_verdict = ran[0]
        whole = [why for why, tests in grouped_reasons(first_record, first_verdict.reasons, LAYOUT_RUN_ONCE)
                 if not tests]
        common = set(whole)
        for _, verdict in ran[1:]:
            common.intersection_update(verdict.reasons)
        reasons = tuple(why for why in whole if why in common)
        host = next(iter(hosts)) if len(hosts) == 1 else None
        if host is None and not reasons:
            continue
        shared[run_id] = RunShared(len(shared) + 1, run_id, len(ran), host, reasons)
    return shared


def run_host_lines(records: Iterable[AcRecord]) -> list[tuple[str, str]]:
    """Each distinct ``(run id, host line)`` of ``records``, sorted: what a layout-2 block's
    ``- Host: that of run N`` points to, in the summary outside every block, which the gate
    states itself since no line of a summary is compared. A run id whose records show two host
    lines (two bundles claiming one run) gives both, never neither."""
    return sorted({(record.run.id, _host_line(record)) for record in records})


def _run_lines(runs: Mapping[str, RunShared]) -> list[str]:
    """The summary's list of what each run shares: its host line, then its reasons, each once."""
    lines = [RUNS_INTRO, ""]
    for run in runs.values():
        host = "hosts differ (each block states its own)" if run.host is None else f"host {_cell(run.host)}"
        count = len(run.reasons)
        why = f"; {count} reason{'s' if count != 1 else ''} not to qualify:" if count else ""
        lines.append(f"- Run {run.number} (`{_cell(run.run_id)}`, {run.acs} ACs): {host}{why}")
        lines += [f"  - {_cell(reason)}" for reason in run.reasons]
    return [*lines, ""] if runs else lines


def _shared_qualifying_lines(record: AcRecord, verdict: PolicyVerdict, run: RunShared) -> list[str]:
    """Layout 2's qualifying line: the run's reasons counted and named, the AC's own listed. A
    waived AC's block lists every reason: the gate accepts it printing none, so its block is
    the reviewer's only account of why it did not qualify."""
    if verdict.qualifying or not run.reasons or verdict.waiver is not None:
        return _qualifying_lines(record, verdict, LAYOUT_RUN_ONCE)
    shared = set(run.reasons)
    own = grouped_reasons(record, [why for why in verdict.reasons if why not in shared], LAYOUT_RUN_ONCE)
    total = len(run.reasons) + len(own)
    count = len(run.reasons)
    # The host line names the run by its id already where the run shares its host.
    shared_ones = f"run {run.number}'s {count}" if run.host is not None else f"the {count} of {run.named}"
    head = (f"- Qualifying: no ({verdict.policy}), {total} reason{'s' if total != 1 else ''}: "
            f"{shared_ones}, in the summary (the gate prints them)")
    if not own:
        return [head]
    return [f"{head}, and {len(own)} of its own:",
            *(f"  - {_cell(why)}" + (f" ({_tests_phrase(tests)})" if tests else "") for why, tests in own)]


def _by_test(record: AcRecord, rows: Sequence[_Row]) -> list[tuple[str, list[_Row]]]:
    """Rows grouped by test, tests in the record's order (then any the record does not list)."""
    order = {test.nodeid: index for index, test in enumerate(record.tests)}
    groups: dict[str, list[_Row]] = {}
    for row in rows:
        groups.setdefault(row.nodeid, []).append(row)
    return sorted(groups.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))


def _measurement_lines(record: AcRecord) -> list[str]:
    if not record.measurements:
        return []
    lines = ["", "| test | measurement | value | bound | result |", "|---|---|---|---|---|"]
    for nodeid, rows in _by_test(record, record.measurements):
        for index, row in enumerate(rows):
            test = f"`{_cell(_test_name(nodeid))}`" if index == 0 else ""
            lines.append(
                f"| {test} | {_cell(row.name)} | {_figure(row)} | {_threshold(row)} | {_result(row)} |"
            )
    return lines


def _link(row: AttachmentRow) -> str:
    """A relative link from ``evidence.md`` to the stored file, so it opens where the bundle is browsed."""
    name = row.name.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    if not row.stored or row.path is None:
        return f"{_cell(name)} (not stored{': ' + row.problem if row.problem else ''})"
    return f"[{_cell(name)}](<{row.path.replace('<', '%3C').replace('>', '%3E')}>)"


def _speedup_model_lines(record: AcRecord, layout: int) -> list[str]:
    """One line per test that recorded the speedup model's figures: predicted against measured
    (layout 2 names the test after the figures, never as the key before them)."""
    lines = []
    for nodeid, rows in _by_test(record, record.measurements):
        line = line_from_figures({row.name: row.value for row in rows})
        if line is None:
            continue
        test = f"`{_cell(_test_name(nodeid))}`"
        lines.append(f"- Speedup model ({test}): {_cell(line)}" if layout == LAYOUT_PER_BLOCK
                     else f"- Speedup model: {_cell(line)} ({test})")
    return lines


def _attachment_lines(record: AcRecord, layout: int) -> list[str]:
    """The links grouped by test; layout 2 names the test after its links, so a test's name is
    never the key before an attachment's name."""
    if not record.attachments:
        return []
    lines = ["- Attachments:"]
    for nodeid, rows in _by_test(record, record.attachments):
        links = ", ".join(_link(row) for row in rows)
        test = f"`{_cell(_test_name(nodeid))}`"
        lines.append(f"  - {test}: {links}" if layout == LAYOUT_PER_BLOCK else f"  - {links} ({test})")
    return lines


def verdict_line(verdict: PolicyVerdict) -> str:
    """The line a reviewer reads; the gate compares it with the verdict it recomputes."""
    return f"{VERDICT_PREFIX}{verdict.label}**"


def criterion_heading(record: AcRecord) -> str:
    """The AC's spec and title as layout 1's ``- Criterion:`` line joins them (empty where
    neither): what the clean check of the judge commands' output reads for a bundle in it."""
    return " ".join(part for part in (record.ac.spec, record.ac.title) if part)


def criterion_line(record: AcRecord) -> str:
    """Layout 2's ``- Criterion:`` line: the title, then the spec after a word of its own
    (``canary (spec SPEC-028)``), never the spec joined to the title (``db_password:`` and
    ``Hunter2`` are each clean, ``db_password: Hunter2`` is a credential to every line rule).
    The judge's clean check reads it as shown, as it reads :func:`criterion_heading`."""
    spec, title = record.ac.spec, record.ac.title
    if spec and title:
        return f"{title} (spec {spec})"
    return title or (f"spec {spec}" if spec else "")


def engine_joins(record: AcRecord) -> set[str]:
    """The record's engine strings as layout 1 joins them with a space: the server's name and
    version, the summary's backend and model (``api_key: Hunter2``). The judge's clean check reads
    them, as it reads :func:`criterion_heading`: a bundle written in layout 1 renders them so.
    Layout 2 puts a word of its own between them (``(version V)``, ``, model M``)."""
    joins: set[str] = set()
    for test in record.tests:
        for engine in test.engines or ():
            identity = engine.identity or {}
            server_name, version = _text(identity.get("engine")), _text(identity.get("version"))
            if server_name is not None and version is not None:
                joins.add(f"{server_name} {version}")
            joins.add(_engine_short(engine, LAYOUT_PER_BLOCK))
    return joins


def waiver_text(waiver: Waiver) -> str:
    """A waiver as its ``- Waiver:`` line joins its gate and reason (``PR-C: no M4``): what the
    clean check of the judge commands' output reads, as it reads :func:`criterion_heading`."""
    return f"{waiver.to}: {waiver.reason}"


def _waiver_line(waiver: Waiver, layout: int) -> str:
    """Layout 1 joined the gate and the reason as ``PR-C: no M4``; layout 2 never puts the gate,
    a record string, before a colon and the reason."""
    if layout == LAYOUT_PER_BLOCK:
        return f"- Waiver: waived → {_cell(waiver_text(waiver))}"
    return f"- Waiver: waived → {_cell(waiver.to)}, because {_cell(waiver.reason)}"


def render_ac_block(
    record: AcRecord, verdict: PolicyVerdict, ac_sha256: str, bundle_sha256: str,
    layout: int = CURRENT_LAYOUT, run: RunShared | None = None,
) -> str:
    """One AC's block, every verdict in it as :func:`judge` derived it, not as the record states.

    Deterministic: everything comes from the record, in the record's order, and (layout 2) from
    ``run``, what every AC of its run shares (:func:`shared_run_facts`), which the block names
    and counts instead of repeating. The gate compares a pasted block line by line with this
    rendering.
    """
    heading = criterion_heading(record) if layout == LAYOUT_PER_BLOCK else criterion_line(record)
    lines = [f"## {record.ac.id} evidence", "", verdict_line(verdict), ""]
    if heading:
        lines.append(f"- Criterion: {_cell(heading)}")
    if run is not None and run.host is not None:
        lines.append(f"- Host: that of {run.named}, in the summary")
    else:
        lines.append(f"- Host: {_cell(_host_line(record))}")
    engines = _engines(record, layout)
    if not engines:
        lines.append("- Engines: none recorded")
    for text, count in engines:
        lines.append(f"- Engine ({count} test{'s' if count != 1 else ''}): {_cell(text)}")
    lines.append(f"- Mode: {_cell(verdict.mode)}; tests: {_test_counts(record)}")
    if run is None:
        lines += _qualifying_lines(record, verdict, layout)
    else:
        lines += _shared_qualifying_lines(record, verdict, run)
    if verdict.waiver is not None:
        lines.append(_waiver_line(verdict.waiver, layout))
    lines.append(
        f"- Commit: {_cell(record.source.commit or 'unknown')}" + (" (dirty)" if record.source.dirty else "")
    )
    lines += _speedup_model_lines(record, layout)
    lines += _attachment_lines(record, layout)
    lines += _measurement_lines(record)
    lines += ["", f"`{digest_line(record.ac.id, ac_sha256, bundle_sha256)}`", ""]
    return "\n".join(lines)


def deciding_figure(record: AcRecord) -> Measurement | None:
    """The figure that decides the AC: its first missed bound, else its first bounded measurement."""
    bounded = [row for row in record.measurements if _bounded(row)]
    return next((row for row in bounded if row.miss()), bounded[0] if bounded else None)


def _summary_row(
    record: AcRecord, verdict: PolicyVerdict, layout: int, signer: str, run: RunShared | None
) -> str:
    """One AC's row; layout 1 ends it with the signer, layout 2 states the signer once above the table."""
    figure = deciding_figure(record)
    shown = "—" if figure is None else f"{_cell(figure.name)} {_figure(figure)} {_threshold(figure)}"
    host = f"run {run.number}" if run is not None and run.host is not None else _cell(_host_line(record))
    signed = f" {_cell(signer)} |" if layout == LAYOUT_PER_BLOCK else ""
    engines = _cell(_engines_short(record, layout))
    return f"| {record.ac.id} | {verdict.label} | {shown} | {host} | {engines} |{signed}"


def render_summary(
    blocks: Sequence[tuple[AcRecord, PolicyVerdict, str]], signer: str = NOT_SIGNED,
    runs: Mapping[str, RunShared] | None = None,
) -> str:
    """The table a release manager reads first: one row per AC, outside every AC block; in
    layout 2 (``runs`` given) after what each run shares and the signer, each stated once."""
    if runs is None:
        lines = [
            SUMMARY_HEADING,
            "",
            "| AC | verdict | deciding figure (bound) | host | engine | signer |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            _summary_row(record, verdict, LAYOUT_PER_BLOCK, signer, None) for record, verdict, _ in blocks
        ]
        return "\n".join(lines) + "\n"
    lines = [
        SUMMARY_HEADING,
        "",
        *_run_lines(runs),
        f"Signer of every AC here: {_cell(signer)}",
        "",
        "| AC | verdict | deciding figure (bound) | host | engine |",
        "|---|---|---|---|---|",
    ]
    lines += [
        _summary_row(record, verdict, LAYOUT_RUN_ONCE, signer, runs.get(record.run.id))
        for record, verdict, _ in blocks
    ]
    return "\n".join(lines) + "\n"


def render_markdown(
    blocks: Sequence[tuple[AcRecord, PolicyVerdict, str]], bundle_sha256: str, signer: str = NOT_SIGNED,
    layout: int = CURRENT_LAYOUT,
) -> str:
    """The summary table, then one block per AC in the order given; each record comes with its
    verdict and its file's sha256. ``signer`` fills the summary's signer line (layout 1: its
    signer column): the writer (and
    the gate re-rendering ``evidence.md``) use :data:`NOT_SIGNED`, ``specgate render`` the
    signatures a bundle carries by then. ``layout``: the writer renders the current one, the gate
    and ``render`` the one the bundle's ``evidence.md`` is in (:func:`markdown_layout`)."""
    return joined_markdown(*render_parts(blocks, bundle_sha256, signer, layout))


def render_parts(
    blocks: Sequence[tuple[AcRecord, PolicyVerdict, str]], bundle_sha256: str, signer: str = NOT_SIGNED,
    layout: int = CURRENT_LAYOUT,
) -> tuple[str, list[str]]:
    """:func:`render_markdown`'s summary and blocks apart: the gate compares a pasted block with
    the very block it compared ``evidence.md`` with, rendered once."""
    if not blocks:
        return "", []
    if layout == LAYOUT_PER_BLOCK:
        return render_summary(blocks, signer), [
            render_ac_block(record, verdict, ac_sha, bundle_sha256, layout)
            for record, verdict, ac_sha in blocks
        ]
    runs = shared_run_facts(blocks)
    return render_summary(blocks, signer, runs), [
        render_ac_block(record, verdict, ac_sha, bundle_sha256, layout, runs.get(record.run.id))
        for record, verdict, ac_sha in blocks
    ]


def markdown_layout(markdown: bytes) -> int:
    """The layout an ``evidence.md`` is in: 2 where its summary opens with :data:`RUNS_INTRO`,
    else 1 (a bundle without ACs renders alike in both)."""
    opening = f"{SUMMARY_HEADING}\n\n{RUNS_INTRO}\n".encode()
    return LAYOUT_RUN_ONCE if markdown.startswith(opening) else LAYOUT_PER_BLOCK


def joined_markdown(summary: str, blocks: Sequence[str]) -> str:
    """``evidence.md`` of :func:`render_parts`' parts."""
    if not blocks:
        return "No acceptance criteria ran: this bundle is evidence for nothing.\n"
    return "\n".join([summary, *blocks])


class _Line(NamedTuple):
    """One line of a PR body as a reviewer sees it: quote markers and comments taken out (a
    named tuple: a PR body of 10,000 pasted blocks is 180,000 of them)."""

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


_MARKUP_STARTS = frozenset(" \t>`~")
"""The first characters of a quote (``>``, after at most three spaces), a fence, indented code."""


def plain_line(raw: str) -> bool:
    """A line that starts no quote, fence or indented code and opens no comment: outside a fence
    or a comment it is visible as it is (a PR body of 10,000 pasted blocks is such lines)."""
    return raw[:1] not in _MARKUP_STARTS and _COMMENT_OPEN not in raw


def _visible_lines(text: str) -> list[_Line]:
    """Classify each line: fenced and indented code and HTML comments are hidden from reviewers."""
    lines: list[_Line] = []
    fence: str | None = None
    in_comment = False
    previous_blank = True
    in_indented_code = False
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        if fence is None and not in_comment and plain_line(raw):
            lines.append(_Line(number, raw, ()))
            previous_blank = not raw.strip()
            in_indented_code = in_indented_code and previous_blank
            continue
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
    if "#" not in text[:4]:  # a heading's first ``#`` follows at most three spaces
        return None
    heading = _HEADING.match(text)
    if heading is None:
        return None
    title = _EVIDENCE_TITLE.match(heading.group("title") or "")
    level = len(heading.group("level"))
    if title is None or level > _MAX_EVIDENCE_LEVEL or not is_ac_id(title.group("ac")):
        return None
    return level, title.group("ac")


def _heading_level(text: str) -> int | None:
    if "#" not in text[:4]:
        return None
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
    # Both patterns begin with the keyword, and the verdict's with ``Verdict:``: a line without
    # it is not searched (a block of 10,000 pasted is about 18 lines, one of each).
    keyed = [line for line in body if DIGEST_KEYWORD in line.visible]
    digests = [(line, match) for line in keyed if (match := _DIGEST.search(line.visible))]
    attempts = [line for line in keyed if _DIGEST_ATTEMPT.search(line.visible)]
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
    verdicts = [(row, found) for row in body
                if "Verdict:" in row.visible and (found := _VERDICT.match(row.visible.strip()))]
    return EvidenceBlock(
        ac_id=ac_id,
        ac_sha256=match.group("ac_sha"),
        bundle_sha256=match.group("bundle_sha"),
        line=heading.number,
        verdict_text=verdicts[0][1].group("text") if verdicts else None,
        verdict_line=verdicts[0][0].number if verdicts else None,
        body=tuple((row.number, row.visible) for row in body),
        heading=heading.visible.strip(),
    )
