"""The validation kit: one set of checks for everything users hand in (files, options, numbers, text).

Every reader of outside input goes through these few checks, so a bad input is
one :class:`~pytest_specgate.contracts.errors.SpecgateInputError` line naming where
it came from, what was expected and what was found, never a RecursionError,
UnicodeDecodeError or traceback. The number predicates are the one place that says
a bool is not a number and NaN is not finite; callers word their own messages
around them. The plugin and the CLI each turn the error into what a user sees in
one place (a pytest.UsageError, exit 2).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.safe_read import MAX_DOCUMENT_BYTES, read_regular_file

JOB_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
"""A fleet job's nonce (``--specgate-nonce``, ``specgate sign --nonce``): long enough not to be
guessed, and nothing a shell or a redaction pattern could change."""

__all__ = [
    "JOB_NONCE",
    "MAX_JSON_DEPTH",
    "MAX_VALUE_DEPTH",
    "JsonNestingError",
    "compiled_patterns",
    "decode_utf8",
    "is_count",
    "is_finite_number",
    "is_finite_positive",
    "is_fraction",
    "is_real",
    "is_whole",
    "one_line_text",
    "parse_json",
    "read_json_file",
    "value_nesting_depth",
]

MAX_JSON_DEPTH = 100
"""Deeper than any document this project writes or reads, far below Python's recursion limit."""
MAX_VALUE_DEPTH = 64
"""How deeply a value a spec records may nest: room is left for the record around it, so
every record the plugin writes stays readable under MAX_JSON_DEPTH."""



class JsonNestingError(SpecgateInputError):
    """JSON nested deeper than MAX_JSON_DEPTH (refused before any parser recurses into it)."""


def value_nesting_depth(value: object, limit: int = MAX_VALUE_DEPTH) -> int:
    """How deeply lists, tuples and mappings nest in ``value``; stops counting past ``limit``.

    Iterative, so a value nested thousands deep is measured, not a RecursionError.
    """
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending and deepest <= limit:
        item, depth = pending.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _refuse_constant(name: str) -> float:
    raise SpecgateInputError(f"found {name}; expected a finite number")


def _finite_float(text: str) -> float:
    """A number written with a fraction or exponent; ``1e400`` is valid JSON but parses to
    infinity, which every writer here refuses (``allow_nan=False``) and every comparison passes."""
    value = float(text)
    if math.isinf(value):
        raise SpecgateInputError(f"found {text}, beyond the range of a finite number")
    return value


_FLOAT_DIGITS = 308
"""An integer of more digits than this may be past the largest float (``2e308``), which readers
turn it into: :func:`_integer_within_float_range` checks those few exactly."""


def _integer_within_float_range(text: str) -> int:
    """An integer a reader can take as a float: ``10**400`` is valid JSON and a number to the
    schema, but ``float()`` of it raised OverflowError in the typed record (a traceback)."""
    value = int(text)
    if len(text) > _FLOAT_DIGITS:
        try:
            float(value)
        except OverflowError:
            raise SpecgateInputError(
                f"found an integer of {len(text.lstrip('-'))} digits, beyond the range of a finite number"
            ) from None
    return value


def parse_json(text: str, where: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``text`` parsed as strict JSON (no NaN, Infinity or a number that overflows to it), nested
    at most ``max_depth`` deep.

    Linear in the text and without a regular expression: the C parser runs first (it stops
    with a RecursionError past Python's recursion limit, which is refused here too), then an
    iterative walk measures the depth of what it built.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                           parse_int=_integer_within_float_range)
    except json.JSONDecodeError as error:
        raise SpecgateInputError(
            f"{where}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise JsonNestingError(f"{where}: JSON nested deeper than {max_depth} levels") from None
    except SpecgateInputError as error:
        raise SpecgateInputError(f"{where}: {error}") from None
    except ValueError as error:  # an integer of more digits than int() converts
        raise SpecgateInputError(f"{where}: not valid JSON: {error}") from None
    # A container opens with a bracket: a text with at most max_depth of them nests no deeper.
    too_many_brackets = text.count("{") + text.count("[") > max_depth
    if too_many_brackets and value_nesting_depth(value, max_depth) > max_depth:
        raise JsonNestingError(f"{where}: JSON nested deeper than {max_depth} levels")
    return value


def decode_utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecgateInputError(
            f"{where}: expected UTF-8 text, found byte 0x{data[error.start]:02x} at offset {error.start}"
        ) from None


def read_json_file(
    path: Path, *, max_depth: int = MAX_JSON_DEPTH, what: str = "file", limit: int = MAX_DOCUMENT_BYTES
) -> tuple[bytes, Any]:
    """The file's bytes and what they parse to, from one bounded read of a regular file (no
    symlink, FIFO or device: :mod:`~pytest_specgate.contracts.safe_read`); every failure names
    the file."""
    data = read_regular_file(path, what, limit=limit)
    return data, parse_json(decode_utf8(data, str(path)), str(path), max_depth=max_depth)


def is_real(value: object) -> TypeGuard[int | float]:
    """An int or float that is not a bool (``True`` is an int to Python, never a number to a user)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_whole(value: object) -> TypeGuard[int]:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_count(value: object, minimum: int = 1) -> TypeGuard[int]:
    """A whole number (not a bool) of at least ``minimum``."""
    return is_whole(value) and value >= minimum


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """A real number that is neither NaN nor infinite."""
    return is_real(value) and math.isfinite(value)


def is_finite_positive(value: object) -> TypeGuard[int | float]:
    """A real number (not a bool), finite and > 0: NaN compares false and inf never ends a wait."""
    return is_finite_number(value) and value > 0


def is_fraction(value: object) -> TypeGuard[int | float]:
    """A real number within [0, 1] (NaN is not)."""
    return is_real(value) and 0.0 <= value <= 1.0


def one_line_text(value: str, where: str) -> str:
    """``value`` when it is one line of printable text (it becomes a markdown heading or line).

    Refused: control characters (``\\r``, ``\\n``, ``\\x85``...) and the Unicode line and
    paragraph separators, which readers of the markdown treat as line breaks.
    """
    if value.isprintable():  # refuses every Cc, Zl and Zp character, in C: the common case
        return value
    for position, character in enumerate(value):
        if unicodedata.category(character) in ("Cc", "Zl", "Zp"):
            raise SpecgateInputError(
                f"{where}: expected one line of printable text, found {character!r} "
                f"(U+{ord(character):04X}) at position {position}"
            )
    return value


def shown_on_one_line(text: str) -> str:
    """``text`` with every character that is not printable shown as its escape (``\\n``,
    ``\\r``, ``\\u2028``, a bidirectional override's ``\\u202e``), so text a bundle's author
    wrote (a forged node id) stays on the line it is printed on: it cannot start a line that
    reads as specgate's own (``specgate gate: accepted``), a CI runner's command (``::error::``)
    or a markdown row, nor rewrite the line a terminal shows (``\\r``)."""
    if text.isprintable():  # the common case, in C
        return text
    return "".join(
        character if character.isprintable() else character.encode("unicode_escape").decode("ascii")
        for character in text
    )


def compiled_patterns(patterns: Sequence[object], where: str) -> tuple[re.Pattern[str], ...]:
    """Each of ``patterns`` compiled as a regular expression; the error names the one that is not."""
    compiled = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise SpecgateInputError.mismatch(where, "a non-empty regular expression string", pattern)
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise SpecgateInputError(
                f"{where}: pattern {pattern!r} is not a valid regular expression: {error}",
                where=where, expected="a valid regular expression", found=repr(pattern),
            ) from None
    return tuple(compiled)
