"""Pure functions from pytest reports to ``specgate.evidence/v1`` AC records.

Nothing here touches the disk or the clock, so the record for an AC depends only on what the
tests reported and the run facts: that is what makes serial and xdist bundles comparable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pytest_specgate.evidence._jsonio import JsonValue
from pytest_specgate.evidence._recorder import threshold_verdict

SCHEMA_ID = "specgate.evidence/v1"

ExecutedOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "interrupted"]
AcOutcome = Literal["passed", "failed", "skipped", "incomplete"]
_FAILING: frozenset[str] = frozenset({"failed", "error", "xpassed"})
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
    commit: str | None
    dirty: bool | None
    problem: str | None


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
    session_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExecutedTest:
    nodeid: str
    outcome: ExecutedOutcome
    message: str | None
    duration: float
    phases: tuple[PhaseResult, ...]
    properties: Mapping[str, JsonValue] = field(default_factory=dict)


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


def ac_outcome(outcomes: Iterable[str]) -> AcOutcome:
    """An AC passes only when every one of its tests passed."""
    seen = set(outcomes)
    if seen & _FAILING:
        return "failed"
    if "interrupted" in seen:
        return "incomplete"
    if seen & _NOT_RUN or not seen:
        return "skipped"
    return "passed"


def _ac_of(properties: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
    ac = properties.get("ac")
    return ac if isinstance(ac, Mapping) else {}


def ac_id_of(properties: Mapping[str, JsonValue]) -> str | None:
    value = _ac_of(properties).get("id")
    return value if isinstance(value, str) else None


def _hardware_of(result: ExecutedTest) -> Mapping[str, JsonValue] | None:
    hardware = result.properties.get("hardware")
    return hardware if isinstance(hardware, Mapping) else None


def _float_or_none(value: JsonValue) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def measurement_miss(row: Mapping[str, JsonValue]) -> str | None:
    """Why a recorded figure misses its bounds (a non-number misses any bound), else None."""
    value = _float_or_none(row.get("value"))
    return threshold_verdict(
        math.nan if value is None else value,
        _float_or_none(row.get("at_least")),
        _float_or_none(row.get("at_most")),
    )


def measurement_rows(results: Sequence[ExecutedTest]) -> list[dict[str, JsonValue]]:
    """Every figure, threshold re-checked here rather than trusted from the worker."""
    rows: list[dict[str, JsonValue]] = []
    for result in results:
        measurements = result.properties.get("measurements")
        for item in measurements if isinstance(measurements, list) else []:
            if not isinstance(item, Mapping):
                continue
            row: dict[str, JsonValue] = {
                "nodeid": result.nodeid,
                "name": item.get("name"),
                "value": item.get("value"),
                "unit": item.get("unit"),
                "at_least": _float_or_none(item.get("at_least")),
                "at_most": _float_or_none(item.get("at_most")),
            }
            row["passed"] = measurement_miss(row) is None
            rows.append(row)
    return rows


def attachment_items(result: ExecutedTest) -> list[Mapping[str, JsonValue]]:
    """The attachments a test reported that carry a digest and no problem (the only ones a
    bundle can hold)."""
    items = result.properties.get("attachments")
    return [
        item
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, Mapping) and isinstance(item.get("sha256"), str) and item.get("problem") is None
    ]


def attachment_rows(results: Sequence[ExecutedTest]) -> list[dict[str, JsonValue]]:
    return [
        {
            "nodeid": result.nodeid,
            "name": item.get("name"),
            "sha256": item["sha256"],
            "size": item.get("size"),
            "text": bool(item.get("text")),
            "path": attachment_path(str(item["sha256"]), str(item.get("name"))),
        }
        for result in results
        for item in attachment_items(result)
    ]


def attachment_path(sha256: str, name: str) -> str:
    return f"attachments/{sha256[:16]}-{name}"


def ac_mode(results: Sequence[ExecutedTest], diagnostic: bool) -> str:
    modes = {str(result.properties.get("mode", "default")) for result in results}
    if diagnostic or "diagnostic" in modes:
        return "diagnostic"
    return "required" if "required" in modes else "default"


def _shown(value: JsonValue, unit: JsonValue) -> str:
    return f"{value}" + (f" {unit}" if unit else "")


def not_qualifying_reasons(
    results: Sequence[ExecutedTest],
    run: RunFacts,
    measurements: Sequence[Mapping[str, JsonValue]],
    missing_attachments: Iterable[str],
) -> list[str]:
    """Every reason this AC's evidence may not count, most general first."""
    reasons: list[str] = []
    if ac_mode(results, run.diagnostic) == "diagnostic":
        reasons.append("diagnostic run: evidence from --specgate-diagnostic never qualifies")
    reasons += run.session_reasons
    if run.interrupted:
        reasons.append("the run was interrupted before it finished")
    if run.source.commit is None:
        reasons.append(f"source commit unknown: {run.source.problem or 'no git commit'}")
    if run.source.dirty and not run.allow_dirty:
        reasons.append("working tree has uncommitted changes (--specgate-allow-dirty not given)")
    disagreements = declared_fields(results)[1]
    if disagreements:
        reasons.append(f"tests of this AC disagree on {', '.join(disagreements)}")
    for result in results:
        hardware = _hardware_of(result)
        if hardware is not None and not hardware.get("matched", False):
            why = hardware.get("reasons")
            detail = "; ".join(str(r) for r in why) if isinstance(why, list) and why else "no reason given"
            reasons.append(f"{result.nodeid}: hardware requirement not met: {detail}")
    for result in results:
        simulated = sorted(_simulated_engines(result))
        if simulated:
            reasons.append(f"{result.nodeid}: ran on the built-in mock engine ({', '.join(simulated)}), "
                           "a simulation: only a real engine's evidence qualifies")
    for result in results:
        if result.outcome != "passed":
            reasons.append(
                f"{result.nodeid}: {result.outcome}" + (f": {result.message}" if result.message else "")
            )
    for row in measurements:
        if not row["passed"]:
            missed = measurement_miss(row)
            reasons.append(f"{row['nodeid']}: {row['name']} = {_shown(row['value'], row['unit'])} {missed}")
    reasons += [f"attachment {missing} is missing from the bundle" for missing in missing_attachments]
    return reasons


def _simulated_engines(result: ExecutedTest) -> set[str]:
    notes = result.properties.get("notes")
    engines = notes.get("engines") if isinstance(notes, Mapping) else None
    if not isinstance(engines, list):
        return set()
    return {str(e.get("model")) for e in engines if isinstance(e, Mapping) and e.get("backend") == "mock"}


def declared_fields(results: Sequence[ExecutedTest]) -> tuple[dict[str, JsonValue], list[str]]:
    """Marker fields of an AC merged over its tests, and the fields they contradict each other on.

    A test may leave spec/title out while another names them; a waiver, though, must be stated by
    every test of the AC alike, or the AC would be both deferred and not.
    """
    declared: dict[str, JsonValue] = {}
    disagreements: list[str] = []
    for key in ("spec", "title", "waived_to", "reason"):
        values = {_ac_of(result.properties).get(key) for result in results}
        present = sorted(str(value) for value in values if value is not None)
        if len(set(present)) > 1 or (key in ("waived_to", "reason") and len(values) > 1):
            disagreements.append(key)
        declared[key] = present[0] if present else None
    return declared, disagreements


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
        "mode": result.properties.get("mode", "default"),
        "hardware": _hardware_of(result),
        "notes": result.properties.get("notes", {}),
    }


def host_summary(results: Sequence[ExecutedTest], run: RunFacts) -> str:
    for result in results:
        hardware = _hardware_of(result)
        if hardware is not None and isinstance(hardware.get("host_summary"), str):
            return str(hardware["host_summary"])
    return run.host_summary


def build_ac_record(
    ac_id: str,
    results: Sequence[ExecutedTest],
    run: RunFacts,
    missing_attachments: Iterable[str] = (),
) -> dict[str, JsonValue]:
    """The ``specgate.evidence/v1`` record of one AC; tests are ordered by node id."""
    ordered = sorted(results, key=lambda result: result.nodeid)
    first = declared_fields(ordered)[0]
    measurements = measurement_rows(ordered)
    reasons = not_qualifying_reasons(ordered, run, measurements, missing_attachments)
    waived_to = first.get("waived_to")
    return {
        "schema": SCHEMA_ID,
        "ac": {"id": ac_id, "spec": first.get("spec"), "title": first.get("title")},
        "outcome": ac_outcome(result.outcome for result in ordered),
        "qualifying": not reasons,
        "not_qualifying_reasons": reasons,
        "mode": ac_mode(ordered, run.diagnostic),
        "waiver": None if waived_to is None else {"to": waived_to, "reason": first.get("reason")},
        "tests": [_executed_row(result) for result in ordered],
        "measurements": measurements,
        "attachments": attachment_rows(ordered),
        "host": {"summary": host_summary(ordered, run), "facts": dict(run.host_facts)},
        "source": {
            "commit": run.source.commit,
            "dirty": run.source.dirty,
            "allow_dirty": run.allow_dirty,
            "problem": run.source.problem,
        },
        "versions": dict(run.versions),
        "run": {
            "id": run.run_id,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "diagnostic": run.diagnostic,
            "interrupted": run.interrupted,
        },
    }


def group_by_ac(results: Iterable[ExecutedTest]) -> dict[str, list[ExecutedTest]]:
    """Tests without an ``ac`` marker are not evidence and are left out."""
    groups: dict[str, list[ExecutedTest]] = {}
    for result in results:
        ac_id = ac_id_of(result.properties)
        if ac_id is not None:
            groups.setdefault(ac_id, []).append(result)
    return dict(sorted(groups.items()))
