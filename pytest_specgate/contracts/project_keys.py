"""The keys ``[tool.specgate]`` may hold: the one schema strict reading of pyproject.toml checks.

A typo in a project's settings (``gate = [...]`` for ``gates``) must not be ignored: the
plugin and the CLI read only the keys listed here, so any other key is an error naming it
and the closest known one. A feature that reads a new key or table adds it here, with
the reader that checks its values; tables whose entries are names the project chooses
(``hosts.<profile>``, ``trust.signers.<name>``) are checked by their own readers.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, final

from pytest_specgate.contracts.errors import SpecgateInputError

__all__ = ["BACKENDS_TABLE", "PROJECT_TABLE", "SPECGATE_KEYS", "KeyTable", "check_known_keys",
           "enrolled_backends"]

PROJECT_TABLE: Final = "tool.specgate"
BACKENDS_TABLE: Final = "[tool.specgate.backends]"


@final
@dataclass(frozen=True)
class KeyTable:
    """The known keys of one table: each maps to its sub-table's keys, or None for a value (or a
    table of names the project chooses, which its reader checks)."""

    keys: Mapping[str, KeyTable | None] = field(default_factory=dict)


SPECGATE_KEYS: Final = KeyTable({
    "acs": None,
    "backends": None,
    "fixtures_dir": None,
    "gates": None,
    "hosts": None,
    "redact": KeyTable({"patterns": None}),
    "spec_paths": None,
    "sut_paths": None,
    "trust": None,
})
"""``[tool.specgate]``: per-AC settings, enrolled engine backends, the pinned fixtures
directory, merge gates in order, host profiles, redaction patterns, where the specs live (the
census), in-process code under test (changes the gate lists rather than blocks), the trust policy."""


def check_known_keys(table: Mapping[str, object], schema: KeyTable = SPECGATE_KEYS, *,
                     where: str, name: str = PROJECT_TABLE) -> None:
    """Every key of ``table`` (and of its known sub-tables) is in ``schema``; else one line naming
    the file, the table, the key and the closest known key."""
    known = sorted(schema.keys)
    for key in sorted(table):
        if key not in schema.keys:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SpecgateInputError(
                f"{where}: [{name}] has no key {key!r}{hint}; it takes {', '.join(known) or 'no keys'}",
                where=f"{where}: [{name}]", expected=f"one of {', '.join(known)}", found=repr(key),
            )
        sub, value = schema.keys[key], table[key]
        if sub is not None and isinstance(value, Mapping):
            check_known_keys(value, sub, where=where, name=f"{name}.{key}")


def enrolled_backends(table: object, where: str) -> dict[str, str]:
    """``[tool.specgate.backends]``: ``name = "distribution"`` for each non-built-in engine backend
    whose evidence may qualify; any other shape is one line naming the key and what it found. Read
    alike by the run (the project's copy) and the gate (the trusted copy)."""
    example = 'e.g. sglang = "specgate-sglang"'
    if not isinstance(table, Mapping):
        raise SpecgateInputError.mismatch(f"{where}: {BACKENDS_TABLE}",
                                          f"a table of backend = distribution names ({example})", table)
    for name, value in table.items():
        if not isinstance(value, str) or not value.strip():
            expected = f"the distribution that provides it, a string ({example})"
            raise SpecgateInputError.mismatch(f"{where}: {BACKENDS_TABLE} {name}", expected, value)
    return dict(table)
