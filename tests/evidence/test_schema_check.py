"""The compiled schema check agrees with ``jsonschema`` on valid and mutated records.

The JSON Schema files stay the published contract; every reader checks records with
``_schema_check``'s compiled form of them. Here both judge a corpus: the records of a format-1
bundle of main, a record enriched with every optional shape (a hardware verdict, engines with
memory sides, waivers, an estimate), the format-2 line and run facts cut from each, and every
mutation of each (a value replaced by values of every JSON type and by near misses, a field
removed, a field added). They must agree on whether a document is valid and on where each
problem is. Hypothesis then forges documents as a PR author would (up to three edits: any JSON
value, a near miss of the value's own type, every leaf of a subtree swapped at once, fields
removed or added), and checks that a format-2 line and run facts that pass their own checks
join into a record the record schema accepts (the gate types a joined record without checking
it whole).
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_specgate.evidence._record_split import RunFacts, join_record, split_records
from pytest_specgate.evidence._schema import (
    evidence_schema,
    record_line_problems,
    record_line_schema,
    run_facts_problems,
    run_facts_schema,
    schema_error_paths,
    schema_problems,
)
from pytest_specgate.evidence._schema_check import (
    CompiledSchema,
    SchemaCompileError,
    compile_schema,
    problems_of,
)

LEGACY = Path(__file__).parent / "legacy_bundles" / "format-1"

REPLACEMENTS: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 0.5, 1.0, -0.5, 2, "", "x", "AC-10\n", "PR-C", "passed",
    [], ["x"], [1], {}, {"x": 1}, {"engines": []}, 1e308,
)
"""Values of every JSON type and near misses: a bool where a number goes, an integral float, a
trailing newline after a pattern's ``$``, a note named like a fact the plugin owns."""


def _legacy_records() -> list[dict[str, Any]]:
    return [json.loads((LEGACY / name).read_text()) for name in ("AC-10.json", "AC-11.json")]


def _enriched(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every optional shape the schema allows, filled in."""
    rich = copy.deepcopy(dict(record))
    rich["waiver"] = {"to": "PR-C", "reason": "moved to the next gate"}
    rich["not_qualifying_reasons"] = ["host facts simulated"]
    rich["qualifying"] = False
    test = rich["tests"][0]
    test["hardware"] = {"matched": True, "reasons": [], "profile": "m4-16gb",
                        "requirement": {"apple": "M4"}, "host_summary": "apple M4"}
    test["waiver"] = {"to": "PR-12", "reason": "later"}
    test["message"] = "assert 1 == 2"
    side = {"before_bytes": 10, "after_bytes": 10, "tolerance_bytes": 0, "returned": True}
    test["engines"] = [{"backend": "mock", "model": "tiny", "simulated": False, "loopback": True,
                        "version_known": True, "config": {"gamma": 4}, "versions": {"mock": "1"},
                        "identity": {"url": "http://127.0.0.1:1"}, "selected_by": "default",
                        "memory_returned": {"torn_down": True, "returned": None, "host": side,
                                            "gpu": dict(side, before_bytes=None)}}]
    rich["measurements"][0] |= {"ci_low": 1.45, "ci_high": 1.6, "confidence_level": 0.95,
                                "decide": "interval"}
    return rich


def _documents() -> list[tuple[str, Mapping[str, Any], dict[str, Any]]]:
    """(name, schema, valid document) for every record shape of the corpus."""
    records = [*_legacy_records(), _enriched(_legacy_records()[0])]
    documents = [(f"record {index}", evidence_schema(), record) for index, record in enumerate(records)]
    split = split_records(copy.deepcopy(records[1:]))
    documents += [(f"line {ac_id}", record_line_schema(), line) for ac_id, line in split.lines]
    documents += [(f"run {key}", run_facts_schema(), dict(facts)) for key, facts in split.runs.items()]
    return documents


def _places(document: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _places(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _places(value, (*path, index))


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    changed = copy.deepcopy(document)
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return changed


def _mutations(document: dict[str, Any]) -> Iterator[Any]:
    """Each place replaced by three of :data:`REPLACEMENTS` (in turn, so every value lands on
    places of every kind), each object's fields removed one at a time and a field added to it."""
    turn = itertools.cycle(range(len(REPLACEMENTS)))
    for path in _places(document):
        for _ in range(3):
            yield _replaced(document, path, REPLACEMENTS[next(turn)])
        here = document
        for part in path:
            here = here[part]
        if isinstance(here, dict):
            for key in here:
                yield _replaced(document, path, {k: v for k, v in here.items() if k != key})
            yield _replaced(document, path, {**here, "unexpected_field": 1})


def _jsonschema_paths(schema: Mapping[str, Any], document: Any) -> list[tuple[Any, ...]]:
    validator = jsonschema.Draft202012Validator(schema)
    return sorted(tuple(error.absolute_path) for error in validator.iter_errors(document))


@pytest.mark.parametrize(("name", "schema", "document"), _documents(), ids=lambda value: "")
def test_the_compiled_check_and_jsonschema_agree_on_a_document_and_every_mutation_of_it(
    name: str, schema: Mapping[str, Any], document: dict[str, Any]
) -> None:
    check = compile_schema(schema)
    compiled = CompiledSchema(schema)
    assert problems_of(check, document) == [] and compiled.valid(document), name
    assert _jsonschema_paths(schema, document) == [], name
    disagreements = []
    invalid = 0
    for mutated in _mutations(document):
        expected = _jsonschema_paths(schema, mutated)
        found = sorted(path for path, _ in problems_of(check, mutated))
        invalid += bool(expected)
        if found != expected or compiled.valid(mutated) != (not expected):
            disagreements.append((mutated, expected, found, compiled.valid(mutated)))
    assert disagreements == []
    assert invalid > 100, f"{name}: the mutations must reach the schema's rules"


@pytest.mark.parametrize(
    ("problems", "document", "expected"),
    [
        (schema_problems, {**_legacy_records()[0], "qualifying": 1},
         "qualifying: 1 is not of type 'boolean'"),
        (schema_problems, {k: v for k, v in _legacy_records()[0].items() if k != "qualifying"},
         "<root>: 'qualifying' is a required property"),
        (schema_problems, {**_legacy_records()[0], "ac": {"id": "AC-x", "spec": None, "title": None}},
         "ac/id: 'AC-x' does not match '^(AC-[0-9]+[a-z]?|FR-[0-9]+(\\\\.[0-9]+)?)$'"),
        (record_line_problems, {}, "<root>: 'ac' is a required property"),
        (run_facts_problems, {"texts": [1]}, "<root>: 'policy' is a required property"),
    ],
    ids=["type", "required", "pattern", "line", "run facts"],
)
def test_a_problem_names_the_field_and_what_was_wrong_as_jsonschema_words_it(
    problems: Callable[[Any], list[str]], document: Any, expected: str
) -> None:
    assert problems(document)[0] == expected


def test_a_problem_is_located_by_its_path_for_the_writers_repair() -> None:
    record = _legacy_records()[0]
    record["tests"][1]["phases"]["call"]["duration_s"] = -1
    assert schema_error_paths(record) == [("tests", 1, "phases", "call", "duration_s")]


@pytest.mark.parametrize(
    "schema",
    [{"type": "string", "format": "date-time"}, {"patternProperties": {"x": {}}},
     {"$ref": "https://example.invalid/other.json"}, {"type": "decimal"}, {"minimum": "1"}],
    ids=["format", "patternProperties", "remote ref", "unknown type", "bad bound"],
)
def test_a_schema_using_what_the_compiler_does_not_implement_is_refused_when_compiled(
    schema: Mapping[str, Any],
) -> None:
    with pytest.raises(SchemaCompileError):
        compile_schema(schema)
    with pytest.raises(SchemaCompileError):
        CompiledSchema(schema)


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        ({"type": "integer"}, [1, 1.0, -3], [True, 1.5, "1", None]),
        ({"type": "number", "minimum": 0}, [0, 0.0, 3], [-1, False, "0"]),
        ({"enum": ["a", None, 1]}, ["a", None, 1, 1.0], [True, "b", [1], {"a": 1}]),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, [0.5], [1, "x"]),
        ({"not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}, [{}, {"c": 1}], [{"a": 1}, 3]),
        ({"$ref": "#/$defs/list", "$defs": {"list": {"type": ["array", "null"],
                                                      "items": {"$ref": "#/$defs/list"}}}},
         [None, [], [[None, []]]], [[1], [[["x"]]]]),
        ({"propertyNames": {"enum": ["setup", "call"]}}, [{"call": 1}, []], [{"teardown": 1}]),
    ],
    ids=["integer", "number", "mixed enum", "oneOf", "not anyOf", "recursive ref", "propertyNames"],
)
def test_each_keyword_means_what_jsonschema_means_by_it(
    schema: Mapping[str, Any], valid: list[Any], invalid: list[Any]
) -> None:
    check = compile_schema(schema)
    compiled = CompiledSchema(schema)
    for document in valid:
        assert problems_of(check, document) == [] and _jsonschema_paths(schema, document) == [], document
        assert compiled.valid(document) and compiled.problems(document) == [], document
    for document in invalid:
        assert problems_of(check, document) and _jsonschema_paths(schema, document), document
        assert not compiled.valid(document) and compiled.problems(document), document


SCHEMA_WORDS = ("ac", "id", "tests", "value", "unit", "engines", "hardware", "waiver", "to", "reason",
                "outcome", "phases", "call", "duration_s", "measurements", "schema", "run_facts", "texts")
TRICKY_STRINGS = (
    "AC-10\n", "AC-10", "AC-\u0661\u0660", "AC-\uff11\uff10", "FR-1.2\n", "PR-C\n", "PR-\u0661",
    "0" * 64 + "\n", "a" * 40 + "\n", "2026-12-04T15:00:00Z\n", "2026-12-04T15:00:00Z", "\n", " ",
    "attachments/0123456789abcdef-x.txt\n", "specgate.policy/1\n", "passed", "failed", "default",
)
"""Strings near the schema's patterns and enums: a trailing newline after a ``$`` anchor (Python's
``$`` matches before it, and so does ``jsonschema``'s), digits outside ASCII (``[0-9]`` takes none)."""
JSON_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63 - 2, max_value=2**70)
    | st.integers(min_value=-(2**70), max_value=-(2**63) + 2)
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from((0.0, -0.0, 1.0, 2.0, 1e308, 5e-324))
    | st.text(max_size=8) | st.sampled_from(TRICKY_STRINGS) | st.sampled_from(SCHEMA_WORDS)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(SCHEMA_WORDS) | st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


FORGERIES = max(settings().max_examples, 150)
"""Forged documents per corpus document (``HYPOTHESIS_PROFILE=soak``: 10,000)."""


def _near_misses(value: Any) -> list[Any]:
    """What a forger would put where ``value`` was: its type's nearest neighbours in the other types."""
    if isinstance(value, bool):
        return [int(value), float(value), str(value).lower(), None]
    if isinstance(value, int):
        return [value == 1, bool(value), float(value), value + 0.5, str(value), -value - 1, 2**64, None]
    if isinstance(value, float):
        return [int(value) if value == value and abs(value) != float("inf") else 0, value != 0,
                float("nan"), float("inf"), -float("inf"), -value, str(value), None]
    if isinstance(value, str):
        return [value + "\n", "\n" + value, value.upper(), value[:-1], "", value.translate(_WIDE_DIGITS),
                [value], None, 0]
    if isinstance(value, list):
        return [[], [*value, *value[:1]], value[1:], {}, None, [None]]
    if isinstance(value, dict):
        return [{}, [], None, list(value)]
    return [None]


def _swapped(value: Any, which: int) -> Any:
    """``value`` with every leaf inside it replaced by its ``which``-th near miss (where it has one):
    each field of a subtree forged at once, so a rule of a rarely drawn field is reached too."""
    if isinstance(value, dict):
        return {key: _swapped(item, which) for key, item in value.items()}
    if isinstance(value, list) and value and not isinstance(value[0], dict | list):
        misses = _near_misses(value)
        return misses[which % len(misses)] if which % 3 == 0 else [_swapped(item, which) for item in value]
    if isinstance(value, list):
        return [_swapped(item, which) for item in value]
    misses = _near_misses(value)
    return misses[which % len(misses)]


_WIDE_DIGITS = str.maketrans("0123456789", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19")


@st.composite
def _forged(draw: st.DrawFn, document: dict[str, Any]) -> Any:
    """``document`` with one to three mutations at places drawn from it: a value replaced by a near
    miss of its own or by any JSON value, a field removed, a field added, a container emptied."""
    forged: Any = copy.deepcopy(document)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        places = list(_places(forged))
        path = draw(st.sampled_from(places))
        here = forged
        for part in path:
            here = here[part]
        choices = ["replace", "near", "near everywhere"]
        choices += ["remove", "add"] if isinstance(here, dict) and here else []
        action = draw(st.sampled_from(choices))
        if action == "near everywhere":
            forged = _replaced(forged, path, _swapped(here, draw(st.integers(min_value=0, max_value=7))))
        elif action == "replace":
            forged = _replaced(forged, path, draw(JSON_VALUES))
        elif action == "near":
            forged = _replaced(forged, path, draw(st.sampled_from(_near_misses(here))))
        elif action == "remove":
            key = draw(st.sampled_from(sorted(here)))
            forged = _replaced(forged, path, {k: v for k, v in here.items() if k != key})
        else:
            key = draw(st.sampled_from(SCHEMA_WORDS) | st.text(max_size=6))
            forged = _replaced(forged, path, {**here, key: draw(JSON_VALUES)})
    return forged


@pytest.mark.parametrize(("name", "schema", "document"), _documents(), ids=lambda value: "")
@settings(max_examples=FORGERIES)
@given(data=st.data())
def test_the_compiled_check_and_jsonschema_agree_on_forged_documents(
    name: str, schema: Mapping[str, Any], document: dict[str, Any], data: st.DataObject
) -> None:
    forged = data.draw(_forged(document), label="forged")
    expected = _jsonschema_paths(schema, forged)
    found = sorted(path for path, _ in problems_of(compile_schema(schema), forged))
    assert found == expected, name
    assert _compiled(schema).valid(forged) == (not expected), name


_COMPILED: dict[int, CompiledSchema] = {}


def _compiled(schema: Mapping[str, Any]) -> CompiledSchema:
    """Each corpus schema compiled once (the corpus holds each schema object for the whole run)."""
    if id(schema) not in _COMPILED:
        _COMPILED[id(schema)] = CompiledSchema(schema)
    return _COMPILED[id(schema)]


def _split_corpus() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(a format-2 line, its run's facts) for each record of the corpus."""
    records = [*_legacy_records(), _enriched(_legacy_records()[0])]
    split = split_records(copy.deepcopy(records))
    return [(line, dict(split.runs[str(line["run_facts"])])) for _, line in split.lines]


@pytest.mark.parametrize(("line", "facts"), _split_corpus(), ids=lambda value: "")
@settings(max_examples=FORGERIES)
@given(data=st.data())
def test_a_forged_line_and_run_facts_that_pass_their_checks_join_into_a_record_the_schema_accepts(
    line: dict[str, Any], facts: dict[str, Any], data: st.DataObject
) -> None:
    """The gate types a joined format-2 record without checking it whole (``AcRecord.built``): the
    line's and the run's schemas must leave no record the record schema refuses."""
    forged_line = data.draw(_forged(line) if data.draw(st.booleans()) else st.just(line), label="line")
    forged_facts = data.draw(_forged(facts) if data.draw(st.booleans()) else st.just(facts), label="facts")
    if record_line_problems(forged_line) or run_facts_problems(forged_facts):
        return
    try:
        joined = join_record(forged_line, RunFacts(forged_facts))
    except IndexError:
        return
    assert _jsonschema_paths(evidence_schema(), joined) == []
