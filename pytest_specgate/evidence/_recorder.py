"""What the ``evidence`` fixture returns: figures, artifacts and notes for one test.

Thresholds are *soft checks*: a missed bound (or a failed ``evidence.check``) is recorded and
the test goes on, so every later figure and note still reaches the bundle; the plugin fails
the test once it has finished, naming the first miss and counting the others.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

import pytest

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.payload import RecordedProperties
from pytest_specgate.contracts.thresholds import threshold_verdict
from pytest_specgate.contracts.validation import MAX_VALUE_DEPTH, value_nesting_depth
from pytest_specgate.evidence._jsonio import replace_atomically, sha256_hex
from pytest_specgate.evidence._payloads import RefusedPayload
from pytest_specgate.evidence._records import safe_file_name
from pytest_specgate.evidence._redact import Redactor, is_text

STAGING_DIR_NAME = ".staging"
"""Attachments are staged content-addressed under ``<evidence dir>/.staging/<run id>`` (xdist
workers learn the directory from the controller) so they are stored before the bundle exists,
and two runs sharing one evidence folder never touch each other's."""
RESERVED_NOTE_KEYS = frozenset({"engines", "host", "source", "provenance", "policy", "qualifying",
                                "completeness"})
"""Facts the plugin writes into a record itself; a note by the same name could pass for them."""


def staging_dir(evidence_dir: Path, run_id: str) -> Path:
    return evidence_dir / STAGING_DIR_NAME / run_id


@dataclass(frozen=True)
class Measurement:
    name: str
    value: float
    unit: str | None
    at_least: float | None
    at_most: float | None

    @property
    def passed(self) -> bool:
        return threshold_verdict(self.value, self.at_least, self.at_most) is None

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "at_least": self.at_least,
            "at_most": self.at_most,
            "passed": self.passed,
        }


@dataclass(frozen=True)
class Attachment:
    """An artifact of a test; ``problem`` says why it cannot be in the bundle (then
    ``sha256`` is None when its redacted bytes never existed)."""

    name: str
    sha256: str | None
    size: int | None
    text: bool
    staged: bool
    problem: str | None = None

    def to_dict(self) -> dict[str, JsonValue]:
        entry: dict[str, JsonValue] = {
            "name": self.name,
            "sha256": self.sha256,
            "size": self.size,
            "text": self.text,
            "staged": self.staged,
        }
        if self.problem is not None:
            entry["problem"] = self.problem
        return entry


def _number(label: str, value: object, figure: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"evidence.measure({figure!r}): {label} must be a real number, found {value!r}")
    return float(value)


def soft_failure_message(nodeid: str, ac_id: str | None, misses: Sequence[str]) -> str:
    """The one failure of a test whose soft checks missed: the first miss and how many others,
    then the others one per line. Lines start with the AC id when the test has one."""
    prefix = f"{ac_id}: " if ac_id else ""
    more = len(misses) - 1
    first = f"{prefix}{nodeid}: {misses[0]}"
    if more:
        first += f" (and {more} more soft-check miss{'es' if more > 1 else ''})"
    return "\n".join([first, *(f"{prefix}{miss}" for miss in misses[1:])])


class EvidenceRecorder:
    """Collects one test's figures, artifacts and notes; ``to_properties`` ships them."""

    def __init__(
        self,
        nodeid: str,
        redactor: Redactor | Callable[[], Redactor],
        staging: Path | None,
        ac_id: str | None = None,
    ) -> None:
        """``redactor``: the redactor, or what builds it the first time text needs redacting
        (a test that only measures never does). ``ac_id``: the test's criterion, named first
        in its soft-check failure."""
        self.nodeid = nodeid
        self.ac_id = ac_id
        self._redactor_source = redactor
        self._resolved_redactor = redactor if isinstance(redactor, Redactor) else None
        self._staging = staging
        self._measurements: list[Measurement] = []
        self._attachments: list[Attachment] = []
        self._notes: dict[str, JsonValue] = {}
        self._misses: list[str] = []
        self._reported = 0
        self._engines: list[JsonValue] = []

    @property
    def _redactor(self) -> Redactor:
        if self._resolved_redactor is None:
            source = self._redactor_source
            self._resolved_redactor = source if isinstance(source, Redactor) else source()
        return self._resolved_redactor

    def measure(
        self,
        name: str,
        value: float,
        unit: str | None = None,
        *,
        at_least: float | None = None,
        at_most: float | None = None,
    ) -> Measurement:
        """Record a figure; a missed bound is a soft check: the test fails when it has finished."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"evidence.measure: name must be a non-empty string, found {name!r}")
        if unit is not None and not isinstance(unit, str):
            raise TypeError(f"evidence.measure({name!r}): unit must be a string, found {unit!r}")
        measurement = Measurement(
            name=name,
            value=_number("value", value, name),
            unit=unit,
            at_least=None if at_least is None else _number("at_least", at_least, name),
            at_most=None if at_most is None else _number("at_most", at_most, name),
        )
        self._measurements.append(measurement)
        missed = threshold_verdict(measurement.value, measurement.at_least, measurement.at_most)
        if missed is not None:
            shown = f"{measurement.value:g}" + (f" {unit}" if unit else "")
            self._misses.append(f"measurement {name} = {shown} {missed}")
        return measurement

    def check(self, condition: bool, message: str) -> bool:
        """A soft check without a figure: when ``condition`` is false, ``message`` fails the test
        at its end (like a missed ``measure`` bound). Returns ``condition``."""
        if not isinstance(message, str) or not message:
            raise TypeError(f"evidence.check: message must be a non-empty string, found {message!r}")
        if not condition:
            self._misses.append(message)
        return bool(condition)

    @property
    def misses(self) -> tuple[str, ...]:
        """Every soft check missed so far, in the order they were made."""
        return tuple(self._misses)

    def take_new_misses(self) -> tuple[str, ...]:
        """The misses not reported yet; each is handed out once."""
        new = tuple(self._misses[self._reported :])
        self._reported = len(self._misses)
        return new

    def fail_on_new_misses(self) -> None:
        """Fail (``pytest.fail``) with the misses not reported yet; the plugin calls this when the
        test body ends and again at teardown, so each miss fails exactly one phase."""
        new = self.take_new_misses()
        if new:
            pytest.fail(soft_failure_message(self.nodeid, self.ac_id, new), pytrace=False)

    def attach(self, name: str, content: bytes | str | Path) -> Attachment:
        """Add an artifact (a file path, text or bytes), redacted before it is stored.

        One that cannot be opened for redaction (zstd, an encrypted zip) or staged (a full
        disk) is recorded with its problem instead, so its AC does not qualify.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"evidence.attach: name must be a non-empty string, found {name!r}")
        if isinstance(content, Path):
            raw = content.read_bytes()
        elif isinstance(content, str):
            raw = content.encode()
        elif isinstance(content, bytes):
            raw = content
        else:
            raise TypeError(
                f"evidence.attach({name!r}): expected bytes, str or pathlib.Path, found "
                f"{type(content).__name__}"
            )
        shown = safe_file_name(self._redactor.text(PurePath(name).name or name))
        try:
            stored = self._redactor.encode(raw)
        except RefusedPayload as refusal:
            refused = self._redactor.text(f"refused: {refusal}")
            return self._add(Attachment(shown, None, None, False, False, refused))
        digest = sha256_hex(stored)
        problem: str | None = None
        if self._staging is not None:
            try:
                replace_atomically(self._staging / digest, stored)
            except OSError as error:
                problem = self._redactor.text(f"could not be staged: {error.strerror or error}")
        staged = self._staging is not None and problem is None
        return self._add(Attachment(shown, digest, len(stored), is_text(stored), staged, problem))

    def _add(self, attachment: Attachment) -> Attachment:
        self._attachments.append(attachment)
        return attachment

    def note(self, key: str, value: object) -> None:
        """Context for reviewers (model ids, weight digests, ...); facts the plugin records
        itself (``RESERVED_NOTE_KEYS``: the engines used, host, source) cannot be noted."""
        if not isinstance(key, str) or not key:
            raise TypeError(f"evidence.note: key must be a non-empty string, found {key!r}")
        if key in RESERVED_NOTE_KEYS:
            raise ValueError(
                f"{self.nodeid}: evidence.note({key!r}): {key!r} is recorded by specgate itself "
                f"(reserved: {', '.join(sorted(RESERVED_NOTE_KEYS))}); choose another key"
            )
        depth = value_nesting_depth(value)
        if depth > MAX_VALUE_DEPTH:
            raise ValueError(f"evidence.note({key!r}): value nested {depth} levels deep (or more); "
                             f"expected at most {MAX_VALUE_DEPTH}")
        self._notes[self._redactor.text(key)] = self._redactor.value(value)

    def note_engine(self, engine: Mapping[str, object]) -> None:
        """Record an engine this test used (backend, model, configuration, versions).

        Shipped as the test's ``engines`` (not a note); evidence from the built-in mock never qualifies.
        """
        self._engines.append(self._redactor.value(dict(engine)))

    @property
    def measurements(self) -> tuple[Measurement, ...]:
        return tuple(self._measurements)

    def to_properties(self) -> RecordedProperties:
        """The ``measurements``, ``attachments``, ``notes`` and ``engines`` entries of the per-test
        dict. Only measurement names and units are redacted here (so a test that only measures
        builds no redactor until its figures ship); the rest was redacted when recorded."""
        return {
            "measurements": [self._redacted_measurement(m) for m in self._measurements],
            "attachments": [a.to_dict() for a in self._attachments],
            "notes": dict(self._notes),
            "engines": list(self._engines),
        }

    def _redacted_measurement(self, measurement: Measurement) -> dict[str, JsonValue]:
        entry = measurement.to_dict()
        entry["name"] = self._redactor.text(measurement.name)
        if measurement.unit is not None:
            entry["unit"] = self._redactor.text(measurement.unit)
        return entry


def empty_properties() -> RecordedProperties:
    """The recorder keys for a test that never asked for the ``evidence`` fixture."""
    return {"measurements": [], "attachments": [], "notes": {}, "engines": []}
