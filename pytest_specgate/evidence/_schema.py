"""The JSON Schema of an AC record: loaded once, and the checks every reader and writer uses.

A module of its own so the typed record (``_acrecord``) validates a document without
importing the bundle layout (``_bundle``), which reads records through it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from pytest_specgate.contracts.jsonvalue import JsonValue

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


@cache
def evidence_schema() -> Mapping[str, JsonValue]:
    text = resources.files("pytest_specgate").joinpath("schemas/evidence-v3.json").read_text("utf-8")
    schema: Mapping[str, JsonValue] = json.loads(text)
    return schema


@cache
def _evidence_validator() -> Validator:
    """Built once: the gate and ``merge`` check every AC record of every bundle against it."""
    import jsonschema

    validator: Validator = jsonschema.Draft202012Validator(evidence_schema())
    return validator


def schema_problems(record: JsonValue) -> list[str]:
    """Schema violations of an AC record, each with the JSON path where it happened."""
    validator = _evidence_validator()
    return [
        f"{'/'.join(str(part) for part in error.absolute_path) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))
    ]


def schema_error_paths(record: JsonValue) -> list[tuple[str | int, ...]]:
    """Where an AC record violates the schema (JSON paths; the root is the empty path)."""
    return [tuple(error.absolute_path) for error in _evidence_validator().iter_errors(record)]


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
