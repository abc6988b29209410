"""The AC record as a typed value: one ``from_json`` that validates once.

The collector, the gate, ``render`` and ``merge`` all read records through :meth:`AcRecord.from_json`,
so a fact is read in one place, with one meaning, after the JSON Schema accepted the document.
Optional facts stay ``None`` when absent: the policy treats unknown as "does not qualify".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal, cast, final

from pytest_specgate.contracts.host import HostFactsError, HostProvenance
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.thresholds import Decide, ThresholdVerdict, three_way_verdict
from pytest_specgate.evidence._identity_memo import LatestByIdentity
from pytest_specgate.evidence._schema import schema_problems

SCHEMA_ID = "specgate.evidence/v3"
"""v3 records hold what v2 records held, written compact (``_jsonio.record_json``)."""
READABLE_SCHEMA_IDS = frozenset({SCHEMA_ID, "specgate.evidence/v2"})
"""Every record format the gate, ``merge``, ``render`` and signature checks read."""
OLDER_SCHEMA_IDS = frozenset({"specgate.evidence/v1"})

AcOutcome = Literal["passed", "failed", "inconclusive", "skipped", "incomplete"]
RunModeName = Literal["default", "required", "diagnostic"]


class RecordError(Exception):
    """A record that is not a valid ``specgate.evidence/v3`` (or v2) document: names where and what."""


@dataclass(frozen=True)
class AcInfo:
    id: str
    spec: str | None
    title: str | None


@dataclass(frozen=True)
class Waiver:
    to: str
    reason: str

    def to_dict(self) -> dict[str, JsonValue]:
        return {"to": self.to, "reason": self.reason}


@dataclass(frozen=True)
class HardwareFact:
    """The hardware verdict the runner computed for one test, and the requirement it checked."""

    matched: bool
    reasons: tuple[str, ...]
    profile: str | None
    requirement: Mapping[str, JsonValue] | None


@dataclass(frozen=True)
class EngineFact:
    """An engine the plugin recorded for a test; ``None`` where the record does not say."""

    backend: str
    model: str | None
    simulated: bool | None
    loopback: bool | None
    version_known: bool | None
    url: str | None = None
    versions: Mapping[str, JsonValue] | None = None
    identity: Mapping[str, JsonValue] | None = None
    memory_returned: Mapping[str, JsonValue] | None = None
    reported_backend: str | None = None
    """What the engine object called itself; ``backend`` is the booted configuration's registry name."""


@dataclass(frozen=True)
class TestEntry:
    nodeid: str
    outcome: str
    message: str | None
    mode: RunModeName
    hardware: HardwareFact | None
    waiver: Waiver | None
    engines: tuple[EngineFact, ...] | None
    notes: Mapping[str, JsonValue] | None = None


@dataclass(frozen=True)
class Measurement:
    """One figure: what ``evidence.measure`` returns and what a record's row reads back.

    An estimate's interval and level ride along with the rule that judges it; ``decide`` is
    ``"point"`` where the record names no rule (v2 records, plain numbers). ``value`` is a
    string only when read back from a record that held a non-finite figure (written ``"nan"``)
    or a string someone put there; such a value misses any bound.
    """

    nodeid: str
    name: str
    value: float | str
    unit: str | None
    at_least: float | None
    at_most: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence_level: float | None = None
    decide: Decide = "point"

    @cached_property
    def verdict(self) -> ThresholdVerdict:
        """Passed, failed or inconclusive, computed from value, interval, bounds and rule, once:
        the recorder's soft check, the record's row, its ``passed`` and the judge all read it."""
        value = float(self.value) if isinstance(self.value, int | float) else math.nan
        return three_way_verdict(value, self.at_least, self.at_most, self.ci_low, self.ci_high,
                                 self.decide)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def miss(self) -> str | None:
        """Why the figure is not shown to meet its bounds (failed or inconclusive), else None."""
        return self.verdict.reason

    def to_dict(self) -> dict[str, JsonValue]:
        """The figure as its test ships it (the collector adds the node id); the interval's
        fields only for an estimate (a plain number has none)."""
        verdict = self.verdict
        entry: dict[str, JsonValue] = {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "at_least": self.at_least,
            "at_most": self.at_most,
            "passed": verdict.passed,
            "decide": self.decide,
            "verdict": verdict.verdict,
        }
        if self.confidence_level is not None:
            entry |= {"ci_low": self.ci_low, "ci_high": self.ci_high,
                      "confidence_level": self.confidence_level}
        return entry


def float_or_none(value: JsonValue) -> float | None:
    """A recorded number as a float; None for null, a string or a boolean."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def decide_of(value: JsonValue) -> Decide:
    """The recorded rule; a row that names none (a v2 record, a plain number) is judged on its point."""
    return "interval" if value == "interval" else "point"


def measurement_verdict(row: Mapping[str, JsonValue]) -> ThresholdVerdict:
    """A recorded figure judged again: on its interval when its rule says so (a non-number
    misses any bound). The collector judges a test's figures with it, and a format-2 line, which
    holds no verdict, gets its row's ``passed`` and ``verdict`` back from it."""
    value = float_or_none(row.get("value"))
    return three_way_verdict(
        math.nan if value is None else value,
        float_or_none(row.get("at_least")),
        float_or_none(row.get("at_most")),
        float_or_none(row.get("ci_low")),
        float_or_none(row.get("ci_high")),
        decide_of(row.get("decide")),
    )


@dataclass(frozen=True)
class AttachmentRow:
    nodeid: str
    name: str
    path: str | None
    stored: bool
    problem: str | None = None


@dataclass(frozen=True)
class HostInfo:
    summary: str
    facts: Mapping[str, JsonValue]
    provenance: HostProvenance | None


@dataclass(frozen=True)
class SourceInfo:
    commit: str | None
    dirty: bool | None
    allow_dirty: bool
    problem: str | None
    changed_files: tuple[str, ...] | None
    imported_files: tuple[str, ...] | None = None
    """The repository's files the run imported or collected; None: the record does not list them."""


@dataclass(frozen=True)
class RunInfo:
    id: str
    diagnostic: bool
    interrupted: bool
    duration_scale: float | None
    boot_start: str | None = None
    boot_end: str | None = None


@dataclass(frozen=True)
class Selection:
    args: tuple[str, ...]
    keyword: str | None
    markexpr: str | None


@dataclass(frozen=True)
class CensusShare:
    """The AC's share of the full collection of the configured testpaths (``contracts.census``)."""

    testpaths: tuple[str, ...]
    tests: tuple[str, ...]
    errors: tuple[str, ...]
    problem: str | None


@dataclass(frozen=True)
class Completeness:
    """``collection``: None where the record holds no census (written before there was one)."""

    deselected: tuple[str, ...]
    not_reached: tuple[str, ...]
    skipped: tuple[str, ...]
    selection: Selection
    collection: CensusShare | None = None


@dataclass(frozen=True)
class AcRecord:
    """One AC's evidence; ``document`` is the JSON it was read from, for writing it back unchanged."""

    policy: str
    ac: AcInfo
    outcome: AcOutcome
    qualifying: bool
    reasons: tuple[str, ...]
    mode: RunModeName
    waiver: Waiver | None
    tests: tuple[TestEntry, ...]
    measurements: tuple[Measurement, ...]
    attachments: tuple[AttachmentRow, ...]
    host: HostInfo
    source: SourceInfo
    run: RunInfo
    completeness: Completeness
    document: Mapping[str, JsonValue]

    @classmethod
    def from_json(cls, data: JsonValue, where: str) -> AcRecord:
        """Validate ``data`` against the schema, then build the tree (no further checks needed)."""
        schema = data.get("schema") if isinstance(data, Mapping) else None
        if schema in OLDER_SCHEMA_IDS:
            raise RecordError(
                f"{where}: written as {schema} by an older specgate; this gate reads "
                f"{' and '.join(sorted(READABLE_SCHEMA_IDS, reverse=True))}: "
                "rerun the specs to write a new bundle"
            )
        problems = schema_problems(data)
        if problems or not isinstance(data, Mapping):
            raise RecordError(
                f"{where}: not a valid {schema if schema in READABLE_SCHEMA_IDS else SCHEMA_ID} record: "
                f"{(problems or ['not an object'])[0]}"
            )
        return _record(data)

    @classmethod
    def built(cls, document: Mapping[str, JsonValue], typing: RunTyping | None = None) -> AcRecord:
        """The typed view of a document whose shape is already known to be right: assembled
        from typed parts by :func:`~pytest_specgate.evidence._records.build_ac_record`, or the
        ``document`` of a record :meth:`from_json` read. It skips the schema; everything read
        from disk goes through :meth:`from_json` (a format-2 line through its line schema).
        ``typing``: the run-wide facts of the records read with this one, typed once per run."""
        return _record(document, typing)


def _waiver(value: JsonValue) -> Waiver | None:
    return None if value is None else Waiver(to=value["to"], reason=value["reason"])


def _number(value: JsonValue) -> float | None:
    return None if value is None else float(value)


def _engine(value: Mapping[str, JsonValue]) -> EngineFact:
    return EngineFact(
        backend=value["backend"],
        model=value.get("model"),
        simulated=value.get("simulated"),
        loopback=value.get("loopback"),
        version_known=value.get("version_known"),
        url=_identity_url(value.get("identity")),
        versions=_mapping(value.get("versions")),
        identity=_mapping(value.get("identity")),
        memory_returned=value.get("memory_returned"),
        reported_backend=value.get("reported_backend"),
    )


def _mapping(value: JsonValue) -> Mapping[str, JsonValue] | None:
    return value if isinstance(value, Mapping) else None


def _identity_url(identity: JsonValue) -> str | None:
    url = identity.get("url") if isinstance(identity, Mapping) else None
    return url if isinstance(url, str) else None


def _test(value: Mapping[str, JsonValue]) -> TestEntry:
    hardware = value["hardware"]
    engines = value["engines"]
    return TestEntry(
        nodeid=value["nodeid"],
        outcome=value["outcome"],
        message=value["message"],
        mode=value["mode"],
        hardware=None
        if hardware is None
        else HardwareFact(
            matched=hardware["matched"],
            reasons=tuple(hardware["reasons"]),
            profile=hardware.get("profile"),
            requirement=hardware.get("requirement"),
        ),
        waiver=_waiver(value["waiver"]),
        engines=None if engines is None else tuple(_engine(engine) for engine in engines),
        notes=_mapping(value.get("notes")),
    )


def _provenance(value: JsonValue) -> HostProvenance | None:
    """The provenance the plugin recorded; None when absent or unreadable (the policy names why)."""
    if value is None:
        return None
    try:
        return HostProvenance.from_record(value)
    except HostFactsError:
        return None


def _source(source: Mapping[str, JsonValue]) -> SourceInfo:
    changed = source["changed_files"]
    return SourceInfo(
        commit=source["commit"],
        dirty=source["dirty"],
        allow_dirty=source["allow_dirty"],
        problem=source["problem"],
        changed_files=None if changed is None else tuple(changed),
        imported_files=None if source.get("imported_files") is None else tuple(source["imported_files"]),
    )


def _run(run: Mapping[str, JsonValue]) -> RunInfo:
    return RunInfo(
        id=run["id"],
        diagnostic=run["diagnostic"],
        interrupted=run["interrupted"],
        duration_scale=_number(run["duration_scale"]),
        boot_start=(run.get("boot_session") or {}).get("start"),
        boot_end=(run.get("boot_session") or {}).get("end"),
    )


def _selection(selection: Mapping[str, JsonValue]) -> Selection:
    return Selection(
        args=tuple(selection["args"]), keyword=selection["keyword"], markexpr=selection["markexpr"]
    )


@final
class RunTyping:
    """The run-wide facts of records read together, each typed once per run: records joined from
    one ``run.json`` entry hold its one mapping of each (``_identity_memo``). Only for records read
    from files in one go, whose mappings nothing else holds or changes; a record built or edited
    in process is typed whole (:meth:`AcRecord.built` without one)."""

    def __init__(self) -> None:
        self.source = LatestByIdentity(_source)
        self.run = LatestByIdentity(_run)
        self.selection = LatestByIdentity(_selection)
        self.provenance = LatestByIdentity(_provenance)


_TYPED_WHOLE: Final = (_source, _run, _selection, _provenance)


def _census_share(value: JsonValue) -> CensusShare | None:
    if not isinstance(value, Mapping):
        return None
    return CensusShare(testpaths=tuple(value["testpaths"]), tests=tuple(value["tests"]),
                       errors=tuple(value["errors"]), problem=value["problem"])


def _record(data: Mapping[str, JsonValue], typing: RunTyping | None = None) -> AcRecord:
    completeness = data["completeness"]
    source, run, selection, provenance = (
        _TYPED_WHOLE if typing is None else (typing.source, typing.run, typing.selection, typing.provenance)
    )
    return AcRecord(
        policy=data["policy"],
        ac=AcInfo(id=data["ac"]["id"], spec=data["ac"]["spec"], title=data["ac"]["title"]),
        outcome=cast("AcOutcome", data["outcome"]),
        qualifying=data["qualifying"],
        reasons=tuple(data["not_qualifying_reasons"]),
        mode=data["mode"],
        waiver=_waiver(data["waiver"]),
        tests=tuple(_test(test) for test in data["tests"]),
        measurements=tuple(
            Measurement(
                nodeid=row["nodeid"],
                name=row["name"],
                value=row["value"],
                unit=row["unit"],
                at_least=_number(row["at_least"]),
                at_most=_number(row["at_most"]),
                ci_low=_number(row.get("ci_low")),
                ci_high=_number(row.get("ci_high")),
                confidence_level=_number(row.get("confidence_level")),
                decide="interval" if row.get("decide") == "interval" else "point",
            )
            for row in data["measurements"]
        ),
        attachments=tuple(
            AttachmentRow(
                nodeid=row["nodeid"], name=row["name"], path=row["path"], stored=row["stored"],
                problem=row.get("problem"),
            )
            for row in data["attachments"]
        ),
        host=HostInfo(
            summary=data["host"]["summary"],
            facts=data["host"]["facts"],
            provenance=provenance(data["host"]["provenance"]),
        ),
        source=source(data["source"]),
        run=run(data["run"]),
        completeness=Completeness(
            deselected=tuple(completeness["deselected"]),
            not_reached=tuple(completeness["not_reached"]),
            skipped=tuple(completeness["skipped"]),
            selection=selection(completeness["selection"]),
            collection=_census_share(completeness.get("collection")),
        ),
        document=data,
    )
