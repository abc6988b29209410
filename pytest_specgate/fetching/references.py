"""Reference outputs: what a named earlier build answered, stored with digests, for "unchanged" specs.

"Disabled mode is byte-identical to the build before" can only be checked
against the build before. Comparing two servers of the current build proves
only that the build is deterministic. So a run with
``--specgate-record-reference=DIR`` asks the earlier build (an engine
configured as that build) for its answers and writes them to
``DIR/<name>.json``: the build's versions and configuration, each response's
canonical bytes and their sha256. Later runs compare the current engine with
that file; the shipped files live in ``fixtures/references/`` and are pinned
by the ``SHA256SUMS`` beside them, so an edited reference is refused, not
believed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "REFERENCE_SCHEMA",
    "ReferenceError",
    "ReferenceOutputs",
    "ReferenceResponse",
    "canonical_bytes",
    "load_reference",
    "write_reference",
]

REFERENCE_SCHEMA: Final = "specgate.reference-outputs/v1"
DIGESTS_FILE: Final = "SHA256SUMS"


class ReferenceError(Exception):
    """A reference file that is missing, malformed, unpinned or does not match its digests."""


def canonical_bytes(value: object) -> bytes:
    """The bytes a response is compared by: sorted-key JSON, no whitespace variance."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class ReferenceResponse:
    """One request's answer: ``key`` names the request, ``body`` is what came back."""

    key: str
    body: object

    @property
    def sha256(self) -> str:
        return hashlib.sha256(canonical_bytes(self.body)).hexdigest()

    def to_dict(self) -> dict[str, object]:
        return {"key": self.key, "body": self.body, "sha256": self.sha256}


@dataclass(frozen=True)
class ReferenceOutputs:
    """The answers of a named build: ``build`` says which (versions, configuration, model)."""

    name: str
    build: Mapping[str, str]
    responses: tuple[ReferenceResponse, ...]

    def body_of(self, key: str) -> object:
        for response in self.responses:
            if response.key == key:
                return response.body
        raise KeyError(key)

    def to_dict(self) -> dict[str, object]:
        return {"schema": REFERENCE_SCHEMA, "name": self.name, "build": dict(self.build),
                "responses": [response.to_dict() for response in self.responses]}


def write_reference(directory: Path, name: str, build: Mapping[str, str],
                    responses: Sequence[ReferenceResponse]) -> Path:
    """Write ``directory/<name>.json`` and update ``SHA256SUMS`` beside it; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    text = json.dumps(ReferenceOutputs(name, build, tuple(responses)).to_dict(), sort_keys=True,
                      indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    sums = directory / DIGESTS_FILE
    pinned = _read_sums(sums) if sums.is_file() else {}
    pinned[path.name] = hashlib.sha256(text.encode()).hexdigest()
    sums.write_text("".join(f"{digest}  {file}\n" for file, digest in sorted(pinned.items())),
                    encoding="utf-8")
    return path


def load_reference(path: Path) -> ReferenceOutputs:
    """Read a reference file; its bytes must match ``SHA256SUMS`` and each response its sha256."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReferenceError(f"{path}: no reference outputs ({exc.strerror}); record them with "
                             f"--specgate-record-reference={path.parent}") from None
    sums = path.parent / DIGESTS_FILE
    pinned = _read_sums(sums).get(path.name) if sums.is_file() else None
    actual = hashlib.sha256(data).hexdigest()
    if pinned is None:
        raise ReferenceError(f"{path}: not pinned in {sums}; an unpinned reference is not believed")
    if pinned != actual:
        raise ReferenceError(f"{path}: sha256 {actual}, but {sums} pins {pinned}")
    try:
        document = json.loads(data)
        if document["schema"] != REFERENCE_SCHEMA:
            raise ReferenceError(f"{path}: schema {document['schema']!r}, expected {REFERENCE_SCHEMA!r}")
        responses = tuple(ReferenceResponse(str(entry["key"]), entry["body"])
                          for entry in document["responses"])
        recorded = [str(entry["sha256"]) for entry in document["responses"]]
        build = {str(key): str(value) for key, value in document["build"].items()}
        name = str(document["name"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReferenceError(f"{path}: not a reference-outputs file ({exc!r})") from None
    for response, digest in zip(responses, recorded, strict=True):
        if response.sha256 != digest:
            raise ReferenceError(f"{path}: response {response.key!r} hashes to {response.sha256}, "
                                 f"recorded {digest}")
    return ReferenceOutputs(name, build, responses)


def _read_sums(path: Path) -> dict[str, str]:
    pinned: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            pinned[name.strip()] = digest.strip()
    return pinned
