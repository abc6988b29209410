"""A JSON Schema compiled once into plain Python checks: what every reader runs on every record.

``jsonschema`` walks a schema afresh for every document (about 2 ms for one record line here):
a 10,000-AC bundle spent most of ``gate``, ``render``, ``merge`` and ``compare`` in it. Here each
schema node becomes one closure when the schema is first used, and a document is checked by
calling them: the same rules at a fraction of the cost.

It is as strict as the schema because it is built from the schema, keyword by keyword, with
``jsonschema``'s (Draft 2020-12) meaning of each: a number is an ``int`` or ``float`` but never
a ``bool``, ``pattern`` is ``re.search``, ``enum`` compares a ``bool`` only with a ``bool``. A
keyword it does not implement is a :class:`SchemaCompileError` when the schema is compiled, never
a rule silently skipped; the published schema files stay the contract, and a test checks that
this module and ``jsonschema`` agree on a corpus of valid and mutated records, error paths
included. Messages are worded as ``jsonschema`` words them.

Each schema is compiled twice (:class:`CompiledSchema`): into checks that report every problem
with its path, and into yes/no closures of the same rules that build no path and stop at the
first rule broken. A reader asks the second first; only a document it refuses is checked again
for the problems to report. Honest records, nearly all of what is read, cost half as much
(10,000 record lines: about 0.2 s instead of 0.4), and the tests hold both to ``jsonschema``'s
answer on every corpus document, mutation and forgery.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from pytest_specgate.contracts.jsonvalue import JsonValue

Path = tuple[str | int, ...]
Problem = tuple[Path, str]
Check = Callable[[object, Path, list[Problem]], None]
"""Appends each problem of the value (found at the path) to the list; appends nothing if valid."""

ANNOTATIONS: Final = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "examples",
                                "default"})
"""Keywords that never reject a document."""
IMPLEMENTED: Final = frozenset({
    "type", "enum", "const", "required", "properties", "additionalProperties", "propertyNames",
    "items", "minItems", "minLength", "pattern", "minimum", "exclusiveMinimum", "exclusiveMaximum",
    "oneOf", "anyOf", "not", "$ref",
})


class SchemaCompileError(Exception):
    """The schema uses something this compiler does not implement (it would not be as strict)."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPE_NAMES: Final = frozenset({"object", "array", "string", "null", "boolean", "number", "integer"})
_CLASSES: Final[Mapping[str, type]] = {
    "object": dict, "array": list, "string": str, "boolean": bool,
}


def _json_equal(one: object, two: object) -> bool:
    """Equality as JSON Schema means it (and ``jsonschema`` computes it): ``True`` is not ``1``."""
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_json_equal(one[key], two[key]) for key in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one is two
    return one == two


class _Compiler:
    """Compiles the nodes of one root schema; ``$ref`` targets once each (recursion allowed)."""

    def __init__(self, root: Mapping[str, JsonValue]) -> None:
        self._root = root
        self._refs: dict[str, Check] = {}

    def compile(self, node: JsonValue) -> Check:
        if node is True:
            return _nothing
        if node is False:
            return _everything_rejected
        if not isinstance(node, Mapping):
            raise SchemaCompileError(f"a schema must be an object or a boolean, found {node!r}")
        unknown = set(node) - IMPLEMENTED - ANNOTATIONS
        if unknown:
            raise SchemaCompileError(f"keywords not implemented: {sorted(unknown)}")
        checks: list[Check] = []
        is_object = "properties" in node or "additionalProperties" in node or "required" in node
        if "type" in node and not (is_object and node["type"] == "object"):
            checks.append(self._type(node["type"]))
        if is_object:
            checks.append(self._object(node, must_be_object=node.get("type") == "object"))
        for keyword, value in node.items():
            build = self._keywords.get(keyword)
            if build is not None:
                checks.append(build(self, value, node))
        if len(checks) == 1:
            return checks[0]
        if not checks:
            return _nothing
        chain = tuple(checks)

        def all_of(value: object, path: Path, problems: list[Problem]) -> None:
            for check in chain:
                check(value, path, problems)

        return all_of

    def _type(self, declared: JsonValue) -> Check:
        names = [declared] if isinstance(declared, str) else declared
        if not isinstance(names, list) or not names or any(name not in _TYPE_NAMES for name in names):
            raise SchemaCompileError(f"type must name JSON types, found {declared!r}")
        message_types = ", ".join(repr(name) for name in names)
        classes = tuple(_CLASSES[str(name)] for name in names if name in _CLASSES)
        null, number, integer = "null" in names, "number" in names, "integer" in names

        def of_type(value: object, path: Path, problems: list[Problem]) -> None:
            if isinstance(value, classes) or (null and value is None):
                return
            if (number and _is_number(value)) or (integer and _is_integer(value)):
                return
            problems.append((path, f"{value!r} is not of type {message_types}"))

        return of_type

    def _object(self, node: Mapping[str, JsonValue], *, must_be_object: bool) -> Check:
        """``required``, ``properties`` and ``additionalProperties`` of one object in one loop
        (and ``"type": "object"`` where ``must_be_object``); a property whose schema is a type
        alone is checked here, without a call."""
        required = node.get("required", [])
        properties = node.get("properties", {})
        if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
            raise SchemaCompileError(f"required must list property names, found {required!r}")
        if not isinstance(properties, Mapping):
            raise SchemaCompileError(f"properties must be an object, found {properties!r}")
        leaves = {str(name): leaf for name, child in properties.items() if (leaf := _type_leaf(child))}
        named = {str(name): self.compile(child) for name, child in properties.items() if name not in leaves}
        additional_schema = node.get("additionalProperties", True)
        refuse_others = additional_schema is False
        others = None if additional_schema is True or refuse_others else self.compile(additional_schema)
        required_names = tuple(str(name) for name in required)

        def object_check(value: object, path: Path, problems: list[Problem]) -> None:
            if not isinstance(value, dict):
                if must_be_object:
                    problems.append((path, f"{value!r} is not of type 'object'"))
                return
            for name in required_names:
                if name not in value:
                    problems.append((path, f"{name!r} is a required property"))
            unexpected: list[str] = []
            for key, item in value.items():
                leaf = leaves.get(key)
                if leaf is not None:
                    kinds, not_bool, shown = leaf
                    if not isinstance(item, kinds) or (not_bool and type(item) is bool):
                        problems.append(((*path, key), f"{item!r} is not of type {shown}"))
                    continue
                check = named.get(key)
                if check is not None:
                    check(item, (*path, key), problems)
                elif refuse_others:
                    unexpected.append(key)
                elif others is not None:
                    others(item, (*path, key), problems)
            if unexpected:
                listed = ", ".join(repr(key) for key in unexpected)
                verb = "was" if len(unexpected) == 1 else "were"
                problems.append((path, f"Additional properties are not allowed ({listed} {verb} unexpected)"))

        return object_check

    def _enum(self, allowed: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        if not isinstance(allowed, list) or not allowed:
            raise SchemaCompileError(f"enum must be a non-empty array, found {allowed!r}")
        choices = list(allowed)
        if all(isinstance(choice, str) for choice in choices):
            strings = frozenset(choices)

            def string_enum(value: object, path: Path, problems: list[Problem]) -> None:
                if not (isinstance(value, str) and value in strings):
                    problems.append((path, f"{value!r} is not one of {choices!r}"))

            return string_enum

        def enum(value: object, path: Path, problems: list[Problem]) -> None:
            if not any(_json_equal(choice, value) for choice in choices):
                problems.append((path, f"{value!r} is not one of {choices!r}"))

        return enum

    def _const(self, constant: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        def const(value: object, path: Path, problems: list[Problem]) -> None:
            if not _json_equal(constant, value):
                problems.append((path, f"{constant!r} was expected"))

        return const

    def _property_names(self, schema: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        check_name = self.compile(schema)

        def property_names(value: object, path: Path, problems: list[Problem]) -> None:
            if isinstance(value, dict):
                for key in value:
                    check_name(key, path, problems)

        return property_names

    def _items(self, schema: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        check_item = self.compile(schema)

        def items(value: object, path: Path, problems: list[Problem]) -> None:
            if isinstance(value, list):
                for index, item in enumerate(value):
                    check_item(item, (*path, index), problems)

        return items

    def _min_items(self, limit: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        bound = _count(limit, "minItems")

        def min_items(value: object, path: Path, problems: list[Problem]) -> None:
            if isinstance(value, list) and len(value) < bound:
                problems.append((path, _too_short(value, bound)))

        return min_items

    def _min_length(self, limit: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        bound = _count(limit, "minLength")

        def min_length(value: object, path: Path, problems: list[Problem]) -> None:
            if isinstance(value, str) and len(value) < bound:
                problems.append((path, _too_short(value, bound)))

        return min_length

    def _pattern(self, pattern: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        if not isinstance(pattern, str):
            raise SchemaCompileError(f"pattern must be a string, found {pattern!r}")
        search = re.compile(pattern).search

        def matches(value: object, path: Path, problems: list[Problem]) -> None:
            if isinstance(value, str) and search(value) is None:
                problems.append((path, f"{value!r} does not match {pattern!r}"))

        return matches

    def _minimum(self, limit: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        bound = _bound(limit, "minimum")

        def minimum(value: object, path: Path, problems: list[Problem]) -> None:
            if _is_number(value) and value < bound:  # type: ignore[operator]
                problems.append((path, f"{value!r} is less than the minimum of {limit!r}"))

        return minimum

    def _exclusive_minimum(self, limit: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        bound = _bound(limit, "exclusiveMinimum")

        def exclusive_minimum(value: object, path: Path, problems: list[Problem]) -> None:
            if _is_number(value) and value <= bound:  # type: ignore[operator]
                problems.append((path, f"{value!r} is less than or equal to the minimum of {limit!r}"))

        return exclusive_minimum

    def _exclusive_maximum(self, limit: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        bound = _bound(limit, "exclusiveMaximum")

        def exclusive_maximum(value: object, path: Path, problems: list[Problem]) -> None:
            if _is_number(value) and value >= bound:  # type: ignore[operator]
                problems.append((path, f"{value!r} is greater than or equal to the maximum of {limit!r}"))

        return exclusive_maximum

    def _branches(self, schemas: JsonValue, keyword: str) -> tuple[Check, ...]:
        if not isinstance(schemas, list) or not schemas:
            raise SchemaCompileError(f"{keyword} must be a non-empty array of schemas, found {schemas!r}")
        return tuple(self.compile(schema) for schema in schemas)

    def _one_of(self, schemas: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        branches = self._branches(schemas, "oneOf")

        def one_of(value: object, path: Path, problems: list[Problem]) -> None:
            valid = [index for index, branch in enumerate(branches) if _valid(branch, value)]
            if not valid:
                problems.append((path, f"{value!r} is not valid under any of the given schemas"))
            elif len(valid) > 1:
                shown = ", ".join(repr(schemas[index]) for index in valid)
                problems.append((path, f"{value!r} is valid under each of {shown}"))

        return one_of

    def _any_of(self, schemas: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        branches = self._branches(schemas, "anyOf")

        def any_of(value: object, path: Path, problems: list[Problem]) -> None:
            if not any(_valid(branch, value) for branch in branches):
                problems.append((path, f"{value!r} is not valid under any of the given schemas"))

        return any_of

    def _not(self, schema: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        negated = self.compile(schema)

        def not_(value: object, path: Path, problems: list[Problem]) -> None:
            if _valid(negated, value):
                problems.append((path, f"{value!r} should not be valid under {schema!r}"))

        return not_

    def _ref(self, reference: JsonValue, node: Mapping[str, JsonValue]) -> Check:
        if not isinstance(reference, str) or not reference.startswith("#/"):
            raise SchemaCompileError(f"only references within the schema (#/...) work here: {reference!r}")
        compiled = self._refs.get(reference)
        if compiled is not None:
            return compiled
        target: JsonValue = self._root
        for part in reference[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or key not in target:
                raise SchemaCompileError(f"{reference}: no such place in the schema")
            target = target[key]
        cell: list[Check] = []

        def by_reference(value: object, path: Path, problems: list[Problem]) -> None:
            cell[0](value, path, problems)

        self._refs[reference] = by_reference
        cell.append(self.compile(target))
        self._refs[reference] = cell[0]
        return cell[0]

    _keywords: Final[Mapping[str, Callable[[_Compiler, JsonValue, Mapping[str, JsonValue]], Check]]] = {
        "enum": _enum, "const": _const, "propertyNames": _property_names, "items": _items,
        "minItems": _min_items, "minLength": _min_length, "pattern": _pattern, "minimum": _minimum,
        "exclusiveMinimum": _exclusive_minimum, "exclusiveMaximum": _exclusive_maximum,
        "oneOf": _one_of, "anyOf": _any_of, "not": _not, "$ref": _ref,
    }


def _type_leaf(node: JsonValue) -> tuple[tuple[type, ...], bool, str] | None:
    """``(classes, bool refused, names as messages show them)`` of a schema that is a ``type``
    alone, of kinds an ``isinstance`` decides (``integer`` also takes ``1.0``: it is compiled)."""
    if not isinstance(node, Mapping) or set(node) - ANNOTATIONS != {"type"}:
        return None
    declared = node["type"]
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not set(names) <= set(_LEAF_CLASSES):
        return None
    classes = tuple(kind for name in names for kind in _LEAF_CLASSES[str(name)])
    not_bool = "number" in names and "boolean" not in names
    return classes, not_bool, ", ".join(repr(name) for name in names)


_LEAF_CLASSES: Final[Mapping[str, tuple[type, ...]]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "number": (int, float),
}


def _nothing(value: object, path: Path, problems: list[Problem]) -> None:
    return None


def _everything_rejected(value: object, path: Path, problems: list[Problem]) -> None:
    problems.append((path, f"False schema does not allow {value!r}"))


def _valid(check: Check, value: object) -> bool:
    found: list[Problem] = []
    check(value, (), found)
    return not found


def _count(limit: JsonValue, keyword: str) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise SchemaCompileError(f"{keyword} must be a non-negative integer, found {limit!r}")
    return limit


def _bound(limit: JsonValue, keyword: str) -> int | float:
    if not isinstance(limit, int | float) or isinstance(limit, bool):
        raise SchemaCompileError(f"{keyword} must be a number, found {limit!r}")
    return limit


def _too_short(value: Sequence[object] | str, bound: int) -> str:
    return f"{value!r} should be non-empty" if bound == 1 else f"{value!r} is too short"


def compile_schema(schema: Mapping[str, JsonValue]) -> Check:
    """The check of a whole schema document (its ``$defs`` reachable through ``$ref``)."""
    return _Compiler(schema).compile(schema)


def problems_of(check: Check, document: object) -> list[Problem]:
    """Every problem of ``document``, ordered by where it is (as the schema module lists them)."""
    found: list[Problem] = []
    check(document, (), found)
    return sorted(found, key=lambda problem: [str(part) for part in problem[0]])


Valid = Callable[[object], bool]
"""Whether a value meets a schema node: the same rules as a :data:`Check`, without the paths,
messages and lists a problem needs, stopping at the first rule broken."""


class _ValidityCompiler:
    """:class:`_Compiler`'s rules as yes/no closures (what every honest record takes: no problem
    to report, so no path to build). Each keyword means exactly what :class:`_Compiler` compiles
    it to; the schemas are first compiled there, which refuses whatever neither implements, and
    the agreement tests hold the two to the same answer on every document they judge."""

    def __init__(self, root: Mapping[str, JsonValue]) -> None:
        self._root = root
        self._refs: dict[str, Valid] = {}

    def compile(self, node: JsonValue) -> Valid:
        if node is True:
            return _always
        if node is False or not isinstance(node, Mapping):
            return _never
        checks: list[Valid] = []
        is_object = "properties" in node or "additionalProperties" in node or "required" in node
        if "type" in node and not (is_object and node["type"] == "object"):
            checks.append(self._type(node["type"]))
        if is_object:
            checks.append(self._object(node, must_be_object=node.get("type") == "object"))
        for keyword, value in node.items():
            build = self._keywords.get(keyword)
            if build is not None:
                checks.append(build(self, value))
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]
        chain = tuple(checks)

        def all_valid(value: object) -> bool:
            # A loop, not all() over a generator: a generator's frame per call was half the cost.
            for check in chain:  # noqa: SIM110
                if not check(value):
                    return False
            return True

        return all_valid

    def _type(self, declared: JsonValue) -> Valid:
        names = [declared] if isinstance(declared, str) else list(declared)
        classes = tuple(_CLASSES[str(name)] for name in names if name in _CLASSES)
        null, number, integer = "null" in names, "number" in names, "integer" in names

        def of_type(value: object) -> bool:
            return (isinstance(value, classes) or (null and value is None)
                    or (number and _is_number(value)) or (integer and _is_integer(value)))

        return of_type

    def _object(self, node: Mapping[str, JsonValue], *, must_be_object: bool) -> Valid:
        """Required and refused names by set comparisons, then each property's value; a property
        whose schema is a type alone is checked here, without a call."""
        required = frozenset(str(name) for name in node.get("required", []))
        properties: Mapping[str, JsonValue] = node.get("properties", {})
        leaves = {str(name): (leaf[0], leaf[1]) for name, child in properties.items()
                  if (leaf := _type_leaf(child))}
        named = {str(name): self.compile(child) for name, child in properties.items() if name not in leaves}
        additional_schema = node.get("additionalProperties", True)
        allowed = frozenset(map(str, properties)) if additional_schema is False else None
        others = None if additional_schema is True or allowed is not None else self.compile(additional_schema)

        def object_valid(value: object) -> bool:
            if not isinstance(value, dict):
                return not must_be_object
            names = value.keys()
            if not names >= required or (allowed is not None and not names <= allowed):
                return False
            for key, item in value.items():
                leaf = leaves.get(key)
                if leaf is not None:
                    if not isinstance(item, leaf[0]) or (leaf[1] and type(item) is bool):
                        return False
                    continue
                check = named.get(key, others)
                if check is not None and not check(item):
                    return False
            return True

        return object_valid

    def _enum(self, allowed: JsonValue) -> Valid:
        choices = list(allowed)
        if all(isinstance(choice, str) for choice in choices):
            strings = frozenset(choices)
            return lambda value: isinstance(value, str) and value in strings
        return lambda value: any(_json_equal(choice, value) for choice in choices)

    def _const(self, constant: JsonValue) -> Valid:
        return lambda value: _json_equal(constant, value)

    def _property_names(self, schema: JsonValue) -> Valid:
        check_name = self.compile(schema)
        return lambda value: not isinstance(value, dict) or all(check_name(key) for key in value)

    def _items(self, schema: JsonValue) -> Valid:
        check_item = self.compile(schema)

        def items_valid(value: object) -> bool:
            if isinstance(value, list):
                for item in value:
                    if not check_item(item):
                        return False
            return True

        return items_valid

    def _min_items(self, limit: JsonValue) -> Valid:
        bound = _count(limit, "minItems")
        return lambda value: not isinstance(value, list) or len(value) >= bound

    def _min_length(self, limit: JsonValue) -> Valid:
        bound = _count(limit, "minLength")
        return lambda value: not isinstance(value, str) or len(value) >= bound

    def _pattern(self, pattern: JsonValue) -> Valid:
        search = re.compile(str(pattern)).search
        return lambda value: not isinstance(value, str) or search(value) is not None

    def _minimum(self, limit: JsonValue) -> Valid:
        bound = _bound(limit, "minimum")
        return lambda value: not _is_number(value) or not value < bound  # type: ignore[operator]

    def _exclusive_minimum(self, limit: JsonValue) -> Valid:
        bound = _bound(limit, "exclusiveMinimum")
        return lambda value: not _is_number(value) or not value <= bound  # type: ignore[operator]

    def _exclusive_maximum(self, limit: JsonValue) -> Valid:
        bound = _bound(limit, "exclusiveMaximum")
        return lambda value: not _is_number(value) or not value >= bound  # type: ignore[operator]

    def _one_of(self, schemas: JsonValue) -> Valid:
        branches = tuple(self.compile(schema) for schema in schemas)
        return lambda value: sum(1 for branch in branches if branch(value)) == 1

    def _any_of(self, schemas: JsonValue) -> Valid:
        branches = tuple(self.compile(schema) for schema in schemas)
        return lambda value: any(branch(value) for branch in branches)

    def _not(self, schema: JsonValue) -> Valid:
        negated = self.compile(schema)
        return lambda value: not negated(value)

    def _ref(self, reference: JsonValue) -> Valid:
        text = str(reference)
        compiled = self._refs.get(text)
        if compiled is not None:
            return compiled
        target: JsonValue = self._root
        for part in text[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        cell: list[Valid] = []
        self._refs[text] = lambda value: cell[0](value)
        cell.append(self.compile(target))
        self._refs[text] = cell[0]
        return cell[0]

    _keywords: Final[Mapping[str, Callable[[_ValidityCompiler, JsonValue], Valid]]] = {
        "enum": _enum, "const": _const, "propertyNames": _property_names, "items": _items,
        "minItems": _min_items, "minLength": _min_length, "pattern": _pattern, "minimum": _minimum,
        "exclusiveMinimum": _exclusive_minimum, "exclusiveMaximum": _exclusive_maximum,
        "oneOf": _one_of, "anyOf": _any_of, "not": _not, "$ref": _ref,
    }


def _always(value: object) -> bool:
    return True


def _never(value: object) -> bool:
    return False


class CompiledSchema:
    """A schema compiled both ways: :meth:`problems` answers an honest document from the yes/no
    closures alone and builds the paths and messages only for a document that breaks a rule."""

    def __init__(self, schema: Mapping[str, JsonValue]) -> None:
        self.check = compile_schema(schema)  # first: refuses what is not implemented
        self.valid = _ValidityCompiler(schema).compile(schema)

    def problems(self, document: object) -> list[Problem]:
        return [] if self.valid(document) else problems_of(self.check, document)
