"""The JSON Schema of an AC record: loaded once, and the checks every reader and writer uses.

A module of its own so the typed record (``_acrecord``) validates a document without
importing the bundle layout (``_bundle``), which reads records through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._schema_check import CompiledSchema


@cache
def evidence_schema() -> Mapping[str, JsonValue]:
    text = resources.files("pytest_specgate").joinpath("schemas/evidence-v3.json").read_text("utf-8")
    schema: Mapping[str, JsonValue] = json.loads(text)
    return schema


@cache
def _check(schema: Callable[[], Mapping[str, JsonValue]]) -> CompiledSchema:
    """Compiled once per schema (the record's, a format-2 line's, a run's facts): the gate and
    ``merge`` check every AC record of every bundle against them (``_schema_check`` says why
    not with ``jsonschema``)."""
    return CompiledSchema(schema())


def schema_problems(record: JsonValue) -> list[str]:
    """Schema violations of an AC record, each with the JSON path where it happened."""
    return _problems(_check(evidence_schema), record)


def _problems(check: CompiledSchema, document: JsonValue) -> list[str]:
    return [
        f"{'/'.join(str(part) for part in path) or '<root>'}: {message}"
        for path, message in check.problems(document)
    ]


RUN_WIDE_FIELDS = ("policy", "source", "versions", "run", "run_provenance")
"""The record fields a format-2 bundle stores once per run (``_record_split`` says why)."""
DERIVED_MEASUREMENT_FIELDS = ("passed", "verdict")
"""A measurement row's fields a format-2 line leaves out: joining judges the row again."""


@cache
def record_line_schema() -> Mapping[str, JsonValue]:
    """A format-2 record line's schema, cut from the record schema: the AC's own fields (its
    reasons and host lines as indexes into its run's ``texts``, its measurement rows without the
    verdict, their node id optional), completeness without the run's selection (with the AC's
    census share only where the line keeps it itself), and the key of its run's facts."""
    record = evidence_schema()
    properties = dict(record["properties"])
    for name in ("schema", *RUN_WIDE_FIELDS):
        properties.pop(name)
    index = {"type": "integer", "minimum": 0}
    properties["not_qualifying_reasons"] = {"type": "array", "items": index}
    host = record["properties"]["host"]
    properties["host"] = {**host, "required": ["summary"], "properties": {"summary": index}}
    completeness = record["properties"]["completeness"]
    properties["completeness"] = {
        **completeness,
        "required": [name for name in completeness["required"] if name != "selection"],
        "properties": {
            name: value for name, value in completeness["properties"].items() if name != "selection"
        },
    }
    properties["tests"] = _line_tests(record["properties"]["tests"], index)
    properties["measurements"] = _line_measurements(record["properties"]["measurements"])
    properties["run_facts"] = {"type": "string", "minLength": 1}
    required = [name for name in record["required"] if name in properties] + ["run_facts"]
    return {**record, "title": "a format-2 record line: one AC's own facts", "description": "",
            "required": required, "properties": properties}


def _line_tests(tests: Mapping[str, JsonValue], index: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The record's tests with each hardware verdict's host line as an index."""
    entry = tests["items"]
    null, verdict = entry["properties"]["hardware"]["oneOf"]
    verdict = {**verdict, "properties": {**verdict["properties"], "host_summary": index}}
    hardware = {"oneOf": [null, verdict]}
    return {**tests, "items": {**entry, "properties": {**entry["properties"], "hardware": hardware}}}


def _line_measurements(measurements: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The record's measurement rows without ``passed`` and ``verdict``, their node id optional
    (``_record_split`` says when a line leaves it out)."""
    row = measurements["items"]
    derived = DERIVED_MEASUREMENT_FIELDS
    properties = {name: value for name, value in row["properties"].items() if name not in derived}
    required = [name for name in row["required"] if name not in (*derived, "nodeid")]
    return {**measurements, "items": {**row, "required": required, "properties": properties}}


@cache
def run_facts_schema() -> Mapping[str, JsonValue]:
    """The schema of one run's facts in a format-2 ``run.json``: the record schema's run-wide
    fields, the host's facts and provenance, the selection, the whole census and the texts its
    lines name by index."""
    record = evidence_schema()
    properties = {name: record["properties"][name] for name in RUN_WIDE_FIELDS}
    host = record["properties"]["host"]
    completeness = record["properties"]["completeness"]["properties"]
    collection = completeness["collection"]
    census_frame = {name: collection["properties"][name] for name in ("testpaths", "errors", "problem")}
    properties["host"] = {**host, "required": ["facts", "provenance"],
                          "properties": {name: host["properties"][name] for name in ("facts", "provenance")}}
    properties["selection"] = completeness["selection"]
    properties["census"] = {
        "type": ["object", "null"], "additionalProperties": False,
        "required": ["testpaths", "errors", "problem", "carriers"],
        "properties": {
            **census_frame, "carriers": {"type": "object", "additionalProperties": {"type": "string"}}
        },
    }
    properties["texts"] = {"type": "array", "items": {"type": "string"}}
    required = [name for name in record["required"] if name in properties] + ["host", "selection", "texts"]
    return {"$schema": record["$schema"], "$defs": record["$defs"], "type": "object",
            "additionalProperties": False, "required": required, "properties": properties}


def record_line_problems(line: JsonValue) -> list[str]:
    """Schema violations of a format-2 record line, each with its JSON path."""
    return _problems(_check(record_line_schema), line)


def run_facts_problems(facts: JsonValue) -> list[str]:
    """Schema violations of one run's facts in a format-2 ``run.json``."""
    return _problems(_check(run_facts_schema), facts)


def schema_error_paths(record: JsonValue) -> list[tuple[str | int, ...]]:
    """Where an AC record violates the schema (JSON paths; the root is the empty path)."""
    return [path for path, _ in _check(evidence_schema).problems(record)]


@cache
def schema_vocabulary() -> frozenset[str]:
    """Every property name, enum value and constant the AC record schema itself spells."""
    words: set[str] = set()

    def collect(node: JsonValue) -> None:
        if isinstance(node, dict):
            words.update(str(key) for key in node.get("properties", {}))
            words.update(str(item) for item in node.get("enum", []) if isinstance(item, str))
            if isinstance(node.get("const"), str):
                words.add(node["const"])
            for child in node.values():
                collect(child)
        elif isinstance(node, list):
            for child in node:
                collect(child)

    collect(evidence_schema())
    return frozenset(words)
