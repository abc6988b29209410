"""Pure functions from pytest reports to ``specgate.evidence/v3`` AC records.

Nothing here touches the disk or the clock, so the record for an AC depends only on what the
tests reported and the run facts: that is what makes serial and xdist bundles comparable.
Records state facts; whether they qualify is :func:`~pytest_specgate.evidence._policy.judge`'s
to say, here as in the gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from pytest_specgate.contracts.census import Census, census_to_json
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.payload import SpecPayload
from pytest_specgate.evidence._acrecord import SCHEMA_ID, decide_of, float_or_none, measurement_verdict
from pytest_specgate.evidence._policy import (
    POLICY_VERSION,
    JudgedRecord,
    ac_outcome,
    judged_record,
    not_collected,
)

MAX_NAME_CHARS = 96
"""Attachment names are cut to this (keeping the extension): with the digest prefix the file
name stays far below the 255 bytes file systems allow."""

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

if TYPE_CHECKING:
    from pytest_specgate.evidence._redact import Redactor

ExecutedOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "interrupted"]
_NOT_RUN: frozenset[str] = frozenset({"skipped", "xfailed"})
MESSAGE_LIMIT = 2000


@dataclass(frozen=True)
class PhaseResult:
    when: str
    outcome: str
    duration: float
    message: str | None
    wasxfail: bool


@dataclass(frozen=True)
class SourceState:
    """``changed_files``: repository files that differ from ``commit``; None when unknown.
    ``imported_files``: the repository's files the run imported or collected (repository-relative;
    None when not listed), which the gate holds to the trusted commit as the ACs' harness."""

    commit: str | None
    dirty: bool | None
    problem: str | None
    changed_files: tuple[str, ...] | None = None
    imported_files: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SelectionFacts:
    """Which tests of which AC this run selected and deselected, and the selection it used.

    Collected where collection happens (the controller, or every xdist worker) and merged.
    """

    args: tuple[str, ...] = ()
    keyword: str | None = None
    markexpr: str | None = None
    selected: Mapping[str, str] = field(default_factory=dict)
    deselected: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "args": list(self.args),
            "keyword": self.keyword,
            "markexpr": self.markexpr,
            "selected": dict(self.selected),
            "deselected": dict(self.deselected),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, JsonValue]) -> SelectionFacts:
        return cls(
            args=tuple(str(arg) for arg in data.get("args", [])),
            keyword=data.get("keyword"),
            markexpr=data.get("markexpr"),
            selected={str(k): str(v) for k, v in dict(data.get("selected", {})).items()},
            deselected={str(k): str(v) for k, v in dict(data.get("deselected", {})).items()},
        )

    @cached_property
    def nodeids_by_ac(self) -> tuple[Mapping[str, list[str]], Mapping[str, list[str]]]:
        """Selected and deselected node ids per AC, each sorted: built once per run, so finding
        one AC's tests costs its own tests, not every test of the run (1,000 ACs: 2M lookups)."""
        indexes: list[dict[str, list[str]]] = []
        for chosen in (self.selected, self.deselected):
            index: dict[str, list[str]] = {}
            for nodeid, ac in sorted(chosen.items()):
                index.setdefault(ac, []).append(nodeid)
            indexes.append(index)
        return indexes[0], indexes[1]

    def merged(self, other: SelectionFacts) -> SelectionFacts:
        """Union with what another xdist worker collected (workers collect the same tests)."""
        return SelectionFacts(
            args=self.args or other.args,
            keyword=self.keyword or other.keyword,
            markexpr=self.markexpr or other.markexpr,
            selected={**self.selected, **other.selected},
            deselected={**self.deselected, **other.deselected},
        )


@dataclass(frozen=True)
class RunFacts:
    """Session-wide facts every AC record of one run shares."""

    run_id: str
    started_at: str
    finished_at: str
    diagnostic: bool
    allow_dirty: bool
    interrupted: bool
    source: SourceState
    host_facts: Mapping[str, JsonValue]
    host_summary: str
    versions: Mapping[str, str]
    duration_scale: float = 1.0
    host_provenance: Mapping[str, JsonValue] | None = None
    selection: SelectionFacts = field(default_factory=SelectionFacts)
    host_label: str | None = None
    census: Census | None = None
    run_provenance: Mapping[str, JsonValue] | None = None
    boot_session: tuple[str | None, str | None] = (None, None)
    """The host's boot identity at the start and at the end of the run (None: unreadable)."""


@dataclass(frozen=True)
class ExecutedTest:
    nodeid: str
    outcome: ExecutedOutcome
    message: str | None
    duration: float
    phases: tuple[PhaseResult, ...]
    properties: SpecPayload


def longrepr_message(longrepr: object, outcome: str) -> str | None:
    """The one-line reason a phase skipped or failed, stable across xdist serialization."""
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ") if outcome == "skipped" else reason
    crash = getattr(longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    return str(message) if message is not None else str(longrepr)


def fold_outcome(phases: Mapping[str, PhaseResult], finished: bool) -> tuple[ExecutedOutcome, str | None]:
    """Fold setup/call/teardown into one outcome, in pytest's own terms plus ``interrupted``."""
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    if setup is not None and setup.outcome == "failed":
        return "error", setup.message
    if setup is not None and setup.outcome == "skipped":
        return ("xfailed" if setup.wasxfail else "skipped"), setup.message
    if call is not None:
        if call.outcome == "failed":
            return "failed", call.message
        if call.outcome == "skipped":
            return ("xfailed" if call.wasxfail else "skipped"), call.message
        if call.wasxfail:
            return "xpassed", call.message
    if teardown is not None and teardown.outcome == "failed":
        return "error", teardown.message
    if not finished or call is None:
        return "interrupted", "the run stopped while this test was running"
    return "passed", None


def _ac_of(properties: SpecPayload) -> Mapping[str, JsonValue]:
    return properties["ac"] or {}


def ac_id_of(properties: SpecPayload) -> str | None:
    value = _ac_of(properties).get("id")
    return value if isinstance(value, str) else None


def _hardware_of(result: ExecutedTest) -> Mapping[str, JsonValue] | None:
    return result.properties["hardware"]


def measurement_rows(results: Sequence[ExecutedTest]) -> list[dict[str, JsonValue]]:
    """Every figure, its verdict re-judged here rather than trusted from the worker."""
    rows: list[dict[str, JsonValue]] = []
    for result in results:
        for item in result.properties["measurements"]:
            if not isinstance(item, Mapping):
                continue
            row: dict[str, JsonValue] = {
                "nodeid": result.nodeid,
                "name": item.get("name"),
                "value": item.get("value"),
                "unit": item.get("unit"),
                "at_least": float_or_none(item.get("at_least")),
                "at_most": float_or_none(item.get("at_most")),
                "decide": decide_of(item.get("decide")),
            }
            level = float_or_none(item.get("confidence_level"))
            if level is not None:
                row |= {"ci_low": float_or_none(item.get("ci_low")),
                        "ci_high": float_or_none(item.get("ci_high")), "confidence_level": level}
            verdict = measurement_verdict(row)
            row["passed"] = verdict.passed
            row["verdict"] = verdict.verdict
            rows.append(row)
    return rows


def attachment_items(result: ExecutedTest) -> list[Mapping[str, JsonValue]]:
    """The attachments a test reported. One with a ``problem`` (refused, not staged, not written)
    never reached the bundle: its row says ``stored: false`` and why, so its AC cannot qualify."""
    return [item for item in result.properties["attachments"] if isinstance(item, Mapping)]


def attachment_rows(results: Sequence[ExecutedTest]) -> list[dict[str, JsonValue]]:
    rows: list[dict[str, JsonValue]] = []
    for result in results:
        for item in attachment_items(result):
            digest = item.get("sha256")
            problem = item.get("problem")
            if not isinstance(digest, str) and problem is None:
                problem = "no digest recorded"
            row: dict[str, JsonValue] = {
                "nodeid": result.nodeid,
                "name": str(item.get("name")),
                "sha256": digest if isinstance(digest, str) else None,
                "size": item.get("size"),
                "text": bool(item.get("text")),
                "path": attachment_path(digest, str(item.get("name"))) if isinstance(digest, str) else None,
                "stored": problem is None,
            }
            if problem is not None:
                row["problem"] = str(problem)
            rows.append(row)
    return rows


def attachment_path(sha256: str, name: str) -> str:
    return f"attachments/{sha256[:16]}-{name}"


def redacted_as_shown(redactor: Redactor, value: str, limit: int | None = None) -> str:
    """``value`` redacted (then cut to ``limit`` characters), and redacted as ``evidence.md``
    shows it: a reason line or a table cell reads a line break as a space (``_markdown._cell``),
    so ``db password:`` and ``Hunter2`` on two lines, no assignment to a rule that reads one line,
    are one there, and nothing re-reads ``evidence.md``. Where that one-line form redacts
    differently, it is what is kept, redacted; a value of one line pays nothing more."""
    redacted = redactor.text(value) if limit is None else redactor.text_within(value, limit)
    if "\n" not in redacted:
        return redacted
    flat = redacted.replace("\n", " ")
    shown = redactor.text(flat) if limit is None else redactor.text_within(flat, limit)
    return redacted if shown == flat else shown


def safe_file_name(name: str) -> str:
    safe = _UNSAFE_NAME.sub("_", name).strip("._") or "attachment"
    if len(safe) <= MAX_NAME_CHARS:
        return safe
    stem, dot, suffix = safe.rpartition(".")
    if not dot or len(suffix) > 16:
        return safe[:MAX_NAME_CHARS]
    return f"{stem[: MAX_NAME_CHARS - len(suffix) - 1]}.{suffix}"


def declared_fields(results: Sequence[ExecutedTest]) -> dict[str, str | None]:
    """The AC's spec and title: a test may leave them out while another names them."""
    declared: dict[str, str | None] = {}
    for key in ("spec", "title"):
        present = sorted(str(value) for result in results if (value := _ac_of(result.properties).get(key)))
        declared[key] = present[0] if present else None
    return declared


def _test_waiver(result: ExecutedTest) -> dict[str, JsonValue] | None:
    ac = _ac_of(result.properties)
    to = ac.get("waived_to")
    return None if to is None else {"to": to, "reason": ac.get("reason")}


def _engines_of(result: ExecutedTest) -> list[JsonValue]:
    return list(result.properties["engines"])


def completeness_of(
    ac_id: str, results: Sequence[ExecutedTest], selection: SelectionFacts, census: Census | None = None
) -> dict[str, JsonValue]:
    """Which tests of the AC did not run to a verdict, and the selection that was used.

    ``census``: the full collection of the configured testpaths; its tests of the AC that this
    run neither reported, deselected nor left unreached were never collected (``not_collected``).
    """
    reported = {result.nodeid for result in results}
    selected, deselected_by_ac = selection.nodeids_by_ac
    deselected = list(deselected_by_ac.get(ac_id, ()))
    not_reached = [nodeid for nodeid in selected.get(ac_id, ()) if nodeid not in reported]
    skipped = sorted(result.nodeid for result in results if result.outcome in _NOT_RUN)
    collection = None if census is None else census_to_json(census, ac_id)
    missing = [] if census is None else not_collected(census.of(ac_id), reported, deselected, not_reached)
    return {
        "complete": not (deselected or not_reached or skipped or missing) and census is not None
        and census.problem is None and not census.errors,
        "deselected": deselected,
        "not_reached": not_reached,
        "not_collected": missing,
        "skipped": skipped,
        "collection": collection,
        "selection": {
            "args": list(selection.args),
            "keyword": selection.keyword,
            "markexpr": selection.markexpr,
        },
    }


def _executed_row(result: ExecutedTest) -> dict[str, JsonValue]:
    return {
        "nodeid": result.nodeid,
        "outcome": result.outcome,
        "message": result.message,
        "duration_s": round(result.duration, 6),
        "phases": {
            phase.when: {"outcome": phase.outcome, "duration_s": round(phase.duration, 6)}
            for phase in result.phases
        },
        "mode": result.properties["mode"],
        "hardware": _hardware_of(result),
        "notes": result.properties["notes"],
        "waiver": _test_waiver(result),
        "engines": _engines_of(result),
    }


def host_summary(results: Sequence[ExecutedTest], run: RunFacts) -> str:
    """The host line of the record, saying when the facts were simulated or tools untrusted."""
    summary = run.host_summary
    for result in results:
        hardware = _hardware_of(result)
        if hardware is not None and isinstance(hardware.get("host_summary"), str):
            summary = str(hardware["host_summary"])
            break
    return summary if run.host_label is None else f"{summary} ({run.host_label})"


def build_ac_record(
    ac_id: str,
    results: Sequence[ExecutedTest],
    run: RunFacts,
    missing_attachments: Iterable[str] = (),
) -> dict[str, JsonValue]:
    """The ``specgate.evidence/v3`` record of one AC (tests ordered by node id), judged by the policy."""
    return dict(judged_ac_record(ac_id, results, run, missing_attachments).document)


def judged_ac_record(
    ac_id: str,
    results: Sequence[ExecutedTest],
    run: RunFacts,
    missing_attachments: Iterable[str] = (),
) -> JudgedRecord:
    """:func:`build_ac_record` with its typed view and verdict, judged once (the bundle writer
    takes all three and judges it no more).

    ``missing_attachments``: ``"<nodeid>: <name>"`` of attachments that did not reach the bundle
    (those the collector marks with a ``problem`` are known from the test's own entry).
    """
    ordered = sorted(results, key=lambda result: result.nodeid)
    missing = set(missing_attachments)
    facts: dict[str, JsonValue] = {
        "schema": SCHEMA_ID,
        "policy": POLICY_VERSION,
        "ac": {"id": ac_id, **declared_fields(ordered)},
        "outcome": ac_outcome(result.outcome for result in ordered),
        "qualifying": False,
        "not_qualifying_reasons": [],
        "mode": "diagnostic" if run.diagnostic else "default",
        "waiver": None,
        "tests": [_executed_row(result) for result in ordered],
        "measurements": measurement_rows(ordered),
        "attachments": [
            row | {"stored": row["stored"] and f"{row['nodeid']}: {row['name']}" not in missing}
            for row in attachment_rows(ordered)
        ],
        "host": {
            "summary": host_summary(ordered, run),
            "facts": dict(run.host_facts),
            "provenance": None if run.host_provenance is None else dict(run.host_provenance),
        },
        "source": {
            "commit": run.source.commit,
            "dirty": run.source.dirty,
            "allow_dirty": run.allow_dirty,
            "problem": run.source.problem,
            "changed_files": None if run.source.changed_files is None else list(run.source.changed_files),
            **({} if (imported := run.source.imported_files) is None else {"imported_files": list(imported)}),
        },
        "versions": dict(run.versions),
        "run": {
            "id": run.run_id,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "diagnostic": run.diagnostic,
            "interrupted": run.interrupted,
            "duration_scale": run.duration_scale,
            "boot_session": {"start": run.boot_session[0], "end": run.boot_session[1]},
        },
        "completeness": completeness_of(ac_id, ordered, run.selection, run.census),
        # The run's own mapping, not a copy: every record holds it, and the bundle writer
        # redacts a mapping that several records hold once (``Redactor.values``).
        "run_provenance": run.run_provenance,
    }
    return judged_record(facts)


def group_by_ac(results: Iterable[ExecutedTest]) -> dict[str, list[ExecutedTest]]:
    """Tests without an ``ac`` marker are not evidence and are left out."""
    groups: dict[str, list[ExecutedTest]] = {}
    for result in results:
        ac_id = ac_id_of(result.properties)
        if ac_id is not None:
            groups.setdefault(ac_id, []).append(result)
    return dict(sorted(groups.items()))
