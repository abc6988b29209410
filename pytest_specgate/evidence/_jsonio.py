"""Deterministic JSON, digests and atomic file replacement.

Evidence must hash the same on every machine that produces the same facts, so every
JSON document goes through one of two serializers (sorted keys, no NaN; AC records compact
on one line, through the C encoder, every other file indented for people) and
every file a reader may already trust lands through a temp file + rename, so a killed run
never leaves half a file under a final name (files no manifest lists yet are written in place).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import json
import math
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from pytest_specgate.contracts.jsonvalue import JsonValue


def to_jsonable(value: object) -> JsonValue:
    """Turn any value evidence may carry into plain JSON types (the fallback encoder)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((to_jsonable(item) for item in value), key=canonical_json)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, dt.datetime):
        return utc_timestamp(value)
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def canonical_json(value: JsonValue) -> str:
    """Compact, key-sorted JSON used for digests (never for files people read)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def record_json(value: JsonValue) -> str:
    """An AC record as written since ``specgate.evidence/v3``: its canonical JSON and a newline.

    ``json.dumps`` with ``indent`` runs the pure-Python encoder; compact output runs the C
    encoder, several times faster over the thousand records of a large run.
    """
    return canonical_json(value) + "\n"


def pretty_json(value: JsonValue) -> str:
    """Key-sorted, indented JSON with a final newline: the form of every evidence file but the
    AC records (and of ``specgate.evidence/v2`` records)."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def utc_timestamp(moment: dt.datetime) -> str:
    """ISO 8601 in UTC with a Z suffix, to the second: evidence never carries local time."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory and a rename.

    The temp file is created with mode 0666 less the umask, like any file the user writes
    (``mkstemp`` would make every evidence file 0600).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temp_path = path.parent / f".{path.name[:64]}.{secrets.token_hex(6)}.tmp"
    descriptor = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temp_path, path)
    except BaseException:
        temp_path.unlink(missing_ok=True)
        raise


def write_unlisted(path: Path, data: bytes) -> None:
    """Write a bundle file that no manifest lists yet, in place: until ``manifest.json`` is
    written last, a half-written file only belongs to a bundle no gate accepts, so it needs
    no temp file and rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
