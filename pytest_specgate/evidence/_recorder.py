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
from typing import cast

import pytest

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.payload import RecordedProperties
from pytest_specgate.contracts.samples import RecordedSamples, samples_note_key
from pytest_specgate.contracts.thresholds import (
    DECIDE_RULES,
    DEFAULT_CONFIDENCE_LEVEL,
    INCONCLUSIVE_FAILURE_PREFIX,
    Decide,
    IntervalEstimate,
)
from pytest_specgate.contracts.validation import MAX_VALUE_DEPTH, value_nesting_depth
from pytest_specgate.evidence._acrecord import Measurement as Measurement
from pytest_specgate.evidence._jsonio import replace_atomically, sha256_hex
from pytest_specgate.evidence._known_secrets import MIN_KNOWN_LENGTH
from pytest_specgate.evidence._payloads import RefusedPayload
from pytest_specgate.evidence._records import redacted_as_shown, safe_file_name
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


def soft_failure_message(
    nodeid: str, ac_id: str | None, misses: Sequence[str], *, inconclusive: bool = False
) -> str:
    """The one failure of a test whose soft checks missed: the first miss and how many others,
    then the others one per line. Lines start with the AC id when the test has one; when every
    miss is an inconclusive measurement the message begins with ``inconclusive: ``."""
    prefix = f"{ac_id}: " if ac_id else ""
    more = len(misses) - 1
    first = f"{INCONCLUSIVE_FAILURE_PREFIX if inconclusive else ''}{prefix}{nodeid}: {misses[0]}"
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
        confidence_level: float = DEFAULT_CONFIDENCE_LEVEL,
        announce_secret: Callable[[str], None] | None = None,
    ) -> None:
        """``redactor``: the redactor, or what builds it the first time text needs redacting
        (a test that only measures never does). ``ac_id``: the test's criterion, named first
        in its soft-check failure. ``confidence_level``: the run's setting; an estimate whose
        interval has a lower level is a soft-check miss. ``announce_secret``: told each value
        :meth:`secret` registers (the plugin tells the CI runner to mask it)."""
        self.nodeid = nodeid
        self._announce_secret = announce_secret
        self.ac_id = ac_id
        self._redactor_source = redactor
        self._resolved_redactor = redactor if isinstance(redactor, Redactor) else None
        self._staging = staging
        self._measurements: list[Measurement] = []
        self._attachments: list[Attachment] = []
        self._notes: dict[str, JsonValue] = {}
        self._misses: list[str] = []
        self._inconclusive: set[int] = set()
        self._reported = 0
        self.confidence_level = confidence_level
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
        value: float | IntervalEstimate,
        unit: str | None = None,
        *,
        at_least: float | None = None,
        at_most: float | None = None,
        decide: Decide | None = None,
        samples: RecordedSamples | None = None,
    ) -> Measurement:
        """Record a figure, a plain number or an estimate with its confidence interval.

        An estimate is judged on its interval (passed, failed or inconclusive) unless
        ``decide="point"``; a number can only be judged on itself. A missed bound and an
        inconclusive one are soft checks: the test fails when it has finished. ``samples`` (the
        pair speedups or request latencies behind the figure) are noted as ``<name>_samples``, so
        ``specgate compare`` judges a change on both runs' data.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"evidence.measure: name must be a non-empty string, found {name!r}")
        if unit is not None and not isinstance(unit, str):
            raise TypeError(f"evidence.measure({name!r}): unit must be a string, found {unit!r}")
        if decide is not None and decide not in DECIDE_RULES:
            raise ValueError(f"evidence.measure({name!r}): decide must be one of "
                             f"{', '.join(DECIDE_RULES)}, found {decide!r}")
        bounds = (None if at_least is None else _number("at_least", at_least, name),
                  None if at_most is None else _number("at_most", at_most, name))
        if isinstance(value, numbers.Real | str):
            if decide == "interval":
                raise ValueError(f"evidence.measure({name!r}): decide='interval' needs an estimate "
                                 f"with a confidence interval, found the number {value!r}")
            measurement = Measurement(self.nodeid, name, _number("value", value, name), unit, *bounds)
        else:
            estimate = cast("IntervalEstimate", value)  # numbers.Real does not narrow for mypy
            measurement = self._estimate(name, estimate, unit, decide or "interval", bounds)
        if samples is not None:
            if not isinstance(samples, RecordedSamples):
                raise TypeError(f"evidence.measure({name!r}): samples must be RecordedSamples "
                                f"(PairedRun.speedup_samples(), ttft_samples(...)), found {samples!r}")
            self.note(samples_note_key(name), samples.to_dict())
        self._measurements.append(measurement)
        verdict = measurement.verdict
        if verdict.reason is not None:
            shown = f"{measurement.value:g}" + (f" {unit}" if unit else "")
            if verdict.verdict == "inconclusive":
                self._inconclusive.add(len(self._misses))
            self._misses.append(f"measurement {name} = {shown} {verdict.reason}")
        return measurement

    def _estimate(self, name: str, estimate: IntervalEstimate, unit: str | None, decide: Decide,
                  bounds: tuple[float | None, float | None]) -> Measurement:
        try:
            point, low, high, level = (estimate.point, estimate.ci_low, estimate.ci_high,
                                       estimate.confidence_level)
        except AttributeError:
            raise TypeError(
                f"evidence.measure({name!r}): value must be a real number (or an estimate with "
                f"point, ci_low, ci_high and confidence_level), found {estimate!r}"
            ) from None
        measurement = Measurement(
            self.nodeid, name, _number("point", point, name), unit, *bounds,
            ci_low=None if low is None else _number("ci_low", low, name),
            ci_high=None if high is None else _number("ci_high", high, name),
            confidence_level=_number("confidence_level", level, name), decide=decide,
        )
        if decide == "interval" and measurement.confidence_level is not None \
                and measurement.confidence_level < self.confidence_level:
            self._misses.append(
                f"measurement {name}: its interval has confidence level "
                f"{measurement.confidence_level:g}, below the run's {self.confidence_level:g} "
                "(--specgate-confidence-level)"
            )
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

    def _new_misses_inconclusive(self) -> bool:
        """Whether every miss not reported yet is an inconclusive measurement (and one exists)."""
        pending = range(self._reported, len(self._misses))
        return bool(pending) and all(index in self._inconclusive for index in pending)

    def fail_on_new_misses(self) -> None:
        """Fail (``pytest.fail``) with the misses not reported yet; the plugin calls this when the
        test body ends and again at teardown, so each miss fails exactly one phase."""
        inconclusive = self._new_misses_inconclusive()
        new = self.take_new_misses()
        if new:
            pytest.fail(soft_failure_message(self.nodeid, self.ac_id, new, inconclusive=inconclusive),
                        pytrace=False)

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

    def secret(self, value: str) -> None:
        """Mask ``value`` in everything this run writes and prints from now on: evidence files,
        the terminal, and (under GitHub Actions) the CI log; its percent-encoded, base64,
        JSON-escaped and repr forms too. Register a credential the spec holds before using it."""
        if not isinstance(value, str):
            found = type(value).__name__
            raise TypeError(f"{self.nodeid}: evidence.secret: expected a string, found {found}")
        if len(value) < MIN_KNOWN_LENGTH:
            raise ValueError(
                f"{self.nodeid}: evidence.secret: a value of {len(value)} characters is too short to mask "
                f"(expected {MIN_KNOWN_LENGTH} or more; shorter ones would shred the text)"
            )
        if self._redactor.register_secret(value) and self._announce_secret is not None:
            self._announce_secret(value)

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
        entry["name"] = redacted_as_shown(self._redactor, measurement.name)
        if measurement.unit is not None:
            entry["unit"] = redacted_as_shown(self._redactor, measurement.unit)
        return entry


def empty_properties() -> RecordedProperties:
    """The recorder keys for a test that never asked for the ``evidence`` fixture."""
    return {"measurements": [], "attachments": [], "notes": {}, "engines": []}
