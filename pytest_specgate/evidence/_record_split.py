"""Bundle format 2: each AC record split into what is the run's and what is the AC's own.

A format-1 bundle repeats the run's facts (host facts and their provenance, the source state,
versions, run provenance, the census, the selection) in every AC file: a thousand ACs wrote
them a thousand times. Format 2 stores them once per run in ``run.json`` and keeps, per AC, one
line of ``records.jsonl`` with only the AC's own facts and the key of its run's facts. Joined
back, a line and its run's facts are exactly the ``specgate.evidence/v3`` record format 1
stored, so the gate, merge, render, compare and signature checks read one record view whatever
the format.

Words a run repeats in every AC's record (its not-qualifying reasons about the host, the source
or the run provenance, and the host line, in the record and in each test's hardware verdict) are
stored once per run too, in the run's ``texts``: a line names them by their index there.

A line leaves out what its reader derives: a measurement row's ``passed`` and ``verdict`` (judged
again from its value, bounds and rule on joining, as the gate judges it anyway), and its
``nodeid`` where the AC has one test (the row can only be that test's). A line that leaves out a
row's node id while it holds several tests names no test, and is refused.

A merged bundle holds records of several runs (an M4's and an M1's): ``run.json`` keys each
run's facts by run id, and a line names its key. The census is stored whole per run; an AC's
share of it (its own tests) is recomputed on joining. A line keeps its share itself only where
the share is not what the census gives back (a record from an older bundle).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import SCHEMA_ID, measurement_verdict
from pytest_specgate.evidence._schema import DERIVED_MEASUREMENT_FIELDS, RUN_WIDE_FIELDS

RUN_FACTS_NAME = "run.json"
RECORDS_NAME = "records.jsonl"
RUN_FACTS_SCHEMA_ID = "specgate.run-facts/v1"
RUN_KEY = "run_facts"
"""The field of a record line naming its run's facts in ``run.json``."""
HOST_RUN_WIDE_FIELDS = ("facts", "provenance")
"""Fields of a record's ``host`` that are the run's (its ``summary`` stays with the AC: a test's
hardware verdict may word it)."""
CENSUS_FRAME_FIELDS = ("testpaths", "errors", "problem")
TEXTS = "texts"
"""The run's field listing the words its lines name by index (reasons, host lines)."""


def record_line_name(ac_id: str) -> str:
    """How messages and signed subjects name one AC's line: ``records.jsonl#AC-10``."""
    return f"{RECORDS_NAME}#{ac_id}"


@dataclass(frozen=True)
class SplitRecords:
    """What a format-2 bundle writes: the runs' facts by key, and each AC's own line in AC order."""

    runs: Mapping[str, Mapping[str, JsonValue]]
    lines: Sequence[tuple[str, dict[str, JsonValue]]]


def _run_wide(document: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The run's part of a record; fields a record does not hold (older records) stay absent."""
    host = document["host"]
    completeness = document["completeness"]
    wide: dict[str, JsonValue] = {name: document[name] for name in RUN_WIDE_FIELDS if name in document}
    wide["host"] = {name: host[name] for name in HOST_RUN_WIDE_FIELDS}
    wide["selection"] = completeness["selection"]
    if "collection" in completeness:
        collection = completeness["collection"]
        wide["census"] = (
            None if collection is None else {name: collection[name] for name in CENSUS_FRAME_FIELDS}
        )
    return wide


def _own(document: Mapping[str, JsonValue], key: str, texts: dict[str, int]) -> dict[str, JsonValue]:
    """The AC's own fields; its reasons and host line as indexes into ``texts`` (grown here)."""
    left_out = {"schema", "host", "completeness", *RUN_WIDE_FIELDS}
    own: dict[str, JsonValue] = {name: value for name, value in document.items() if name not in left_out}
    own["not_qualifying_reasons"] = [
        texts.setdefault(reason, len(texts)) for reason in document["not_qualifying_reasons"]
    ]
    own["host"] = {"summary": texts.setdefault(document["host"]["summary"], len(texts))}
    own["tests"] = [_own_test(test, texts) for test in document["tests"]]
    own["measurements"] = _own_measurements(document["measurements"], document["tests"])
    own["completeness"] = {
        name: value
        for name, value in document["completeness"].items()
        if name not in ("selection", "collection")
    }
    own[RUN_KEY] = key
    return own


def _own_test(test: Mapping[str, JsonValue], texts: dict[str, int]) -> JsonValue:
    """A test's entry with its hardware verdict's host line as an index into ``texts``."""
    hardware = test["hardware"]
    if not isinstance(hardware, Mapping) or not isinstance(hardware.get("host_summary"), str):
        return test
    summary = texts.setdefault(hardware["host_summary"], len(texts))
    return {**test, "hardware": {**hardware, "host_summary": summary}}


def _own_measurements(rows: JsonValue, tests: Sequence[Mapping[str, JsonValue]]) -> list[JsonValue]:
    """The rows without their verdict, and without the node id of an AC's only test."""
    only = tests[0]["nodeid"] if len(tests) == 1 else None
    return [
        {name: value for name, value in row.items()
         if name not in DERIVED_MEASUREMENT_FIELDS and (name != "nodeid" or value != only)}
        for row in rows
    ]


def run_facts_document(runs: Mapping[str, Mapping[str, JsonValue]]) -> dict[str, JsonValue]:
    """``run.json``: every run's facts by key."""
    return {"schema": RUN_FACTS_SCHEMA_ID, "runs": dict(runs)}


@dataclass
class _RunSlot:
    facts: dict[str, JsonValue]
    carriers: dict[str, str] = field(default_factory=dict)
    texts: dict[str, int] = field(default_factory=dict)


def _slot_key(slots: dict[str, _RunSlot], run_id: str, wide: Mapping[str, JsonValue]) -> str:
    """The key of the run whose facts equal ``wide``: its run id, suffixed where records of one
    run id disagree on a run fact (records of two bundles claiming one run id)."""
    key, number = run_id, 1
    while key in slots and slots[key].facts != wide:
        number += 1
        key = f"{run_id}~{number}"
    return key


def split_records(documents: Iterable[Mapping[str, JsonValue]]) -> SplitRecords:
    """Format 2's parts of valid ``specgate.evidence/v3`` (or v2) records, ordered by AC id.

    ``join_record(line, runs[line[RUN_KEY]])`` gives each document back, field for field.
    """
    slots: dict[str, _RunSlot] = {}
    lines: list[tuple[str, dict[str, JsonValue]]] = []
    for document in sorted(documents, key=lambda record: str(record["ac"]["id"])):
        wide = _run_wide(document)
        run = document["run"]
        key = _slot_key(slots, str(run["id"]) if isinstance(run, Mapping) else "run", wide)
        slot = slots.setdefault(key, _RunSlot(wide))
        own = _own(document, key, slot.texts)
        ac_id = str(document["ac"]["id"])
        collection = document["completeness"].get("collection")
        if isinstance(collection, Mapping) and not _carried(slot.carriers, ac_id, collection["tests"]):
            own["completeness"]["collection"] = collection
        lines.append((ac_id, own))
    runs: dict[str, Mapping[str, JsonValue]] = {}
    for key, slot in sorted(slots.items()):
        facts = {**slot.facts, TEXTS: list(slot.texts)}
        census = facts.get("census")
        if isinstance(census, Mapping):
            facts["census"] = {**census, "carriers": dict(sorted(slot.carriers.items()))}
        runs[key] = facts
    return SplitRecords(runs=runs, lines=lines)


def _carried(carriers: dict[str, str], ac_id: str, tests: JsonValue) -> bool:
    """Add an AC's census share to its run's carriers when the census gives it back exactly
    (sorted, no test twice, none another AC's); False where the line must keep it itself."""
    if not isinstance(tests, list) or tests != sorted(set(tests)) or any(t in carriers for t in tests):
        return False
    carriers.update(dict.fromkeys(tests, ac_id))
    return True


class RunFacts:
    """One run's facts from ``run.json``, with its census grouped by AC once for every join."""

    def __init__(self, facts: Mapping[str, JsonValue]) -> None:
        self.facts = facts
        census = facts.get("census")
        grouped: dict[str, list[str]] = {}
        if isinstance(census, Mapping) and isinstance(census.get("carriers"), Mapping):
            for nodeid, ac_id in census["carriers"].items():
                grouped.setdefault(str(ac_id), []).append(str(nodeid))
        self._tests_by_ac = {ac_id: sorted(nodeids) for ac_id, nodeids in grouped.items()}

    def text(self, index: JsonValue, where: str) -> str:
        """The run's text a line names by ``index`` (:class:`IndexError` naming ``where`` if none)."""
        texts = self.facts[TEXTS]
        if not isinstance(index, int) or not isinstance(texts, list) or not 0 <= index < len(texts):
            raise IndexError(f"{where}: names text {index!r}, which its run's facts do not hold")
        return str(texts[index])

    def census_share(self, ac_id: str) -> JsonValue:
        census = self.facts["census"]
        if not isinstance(census, Mapping):
            return None
        share: dict[str, JsonValue] = {name: census[name] for name in CENSUS_FRAME_FIELDS}
        share["tests"] = list(self._tests_by_ac.get(ac_id, ()))
        return share


def join_record(line: Mapping[str, JsonValue], run: RunFacts) -> dict[str, JsonValue]:
    """The ``specgate.evidence/v3`` record a format-2 line and its run's facts stand for
    (:class:`IndexError` where the line names a text the run does not hold, or a row no test)."""
    facts = run.facts
    document: dict[str, JsonValue] = {name: value for name, value in line.items() if name != RUN_KEY}
    document["schema"] = SCHEMA_ID
    for name in RUN_WIDE_FIELDS:
        if name in facts:
            document[name] = facts[name]
    document["not_qualifying_reasons"] = [
        run.text(index, "not_qualifying_reasons") for index in line["not_qualifying_reasons"]
    ]
    document["host"] = {**facts["host"], "summary": run.text(line["host"]["summary"], "host.summary")}
    tests = document["tests"] = [_joined_test(test, run, index) for index, test in enumerate(line["tests"])]
    document["measurements"] = [
        _joined_measurement(row, tests, index) for index, row in enumerate(line["measurements"])
    ]
    completeness = {**line["completeness"], "selection": facts["selection"]}
    if "collection" not in completeness and "census" in facts:
        completeness["collection"] = run.census_share(str(line["ac"]["id"]))
    document["completeness"] = completeness
    return document


def _joined_test(test: Mapping[str, JsonValue], run: RunFacts, index: int) -> JsonValue:
    hardware = test["hardware"]
    if not isinstance(hardware, Mapping) or "host_summary" not in hardware:
        return test
    summary = run.text(hardware["host_summary"], f"tests[{index}].hardware.host_summary")
    return {**test, "hardware": {**hardware, "host_summary": summary}}


def _joined_measurement(row: Mapping[str, JsonValue], tests: Sequence[JsonValue], index: int) -> JsonValue:
    """A row with its test's node id (the AC's only test where the line leaves it out) and its
    verdict judged from its value, bounds and rule."""
    joined = dict(row)
    if "nodeid" not in joined:
        if len(tests) != 1:
            raise IndexError(f"measurements[{index}]: names no test, and the line holds {len(tests)} tests")
        joined["nodeid"] = tests[0]["nodeid"]
    verdict = measurement_verdict(joined)
    joined["passed"] = verdict.passed
    joined["verdict"] = verdict.verdict
    return joined
