"""The per-test payload that travels on ``report.user_properties``.

It is the only channel from a test (possibly on an xdist worker) to the
controller that writes evidence, so it holds plain JSON data only. Its shape is
:class:`SpecPayload`: :func:`spec_payload` writes it, :func:`payload_of` reads it
back (checking the shape once), and the evidence writer reads its fields by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypedDict, cast

from pytest_specgate.contracts.jsonvalue import JsonValue

if TYPE_CHECKING:
    from pytest_specgate.contracts.hardware import HardwareVerdict
    from pytest_specgate.contracts.runmode import RunDecision

__all__ = [
    "SPEC_PROPERTY",
    "RecordedProperties",
    "SpecPayload",
    "UnbundledEvidence",
    "empty_payload",
    "later_phase_payload",
    "mismatched_hardware_runs",
    "payload_of",
    "spec_payload",
    "unbundled_evidence",
]

SPEC_PROPERTY: Final = "specgate"


class RecordedProperties(TypedDict):
    """What the ``evidence`` fixture recorded for a test (``EvidenceRecorder.to_properties``)."""

    measurements: list[JsonValue]
    attachments: list[JsonValue]
    notes: dict[str, JsonValue]
    engines: list[JsonValue]


class SpecPayload(RecordedProperties):
    """One test phase as the evidence writer reads it: the test, its AC marker's arguments,
    its hardware verdict, its run mode and what it recorded."""

    nodeid: str
    ac: dict[str, JsonValue] | None
    hardware: dict[str, JsonValue] | None
    mode: str


_PAYLOAD_KEYS: Final = frozenset(SpecPayload.__annotations__)


def spec_payload(
    nodeid: str,
    *,
    ac: Mapping[str, JsonValue] | None,
    verdict: HardwareVerdict | None,
    decision: RunDecision | None,
    recorded: RecordedProperties | None = None,
    engines: Sequence[Mapping[str, Any]] = (),
) -> SpecPayload:
    """Everything the evidence writer needs to know about one test phase.

    ``engines`` are the plugin's own records of the engines this test was handed; nothing the
    test recorded (``recorded``) can replace them.
    """
    first: SpecPayload = {
        "nodeid": nodeid,
        "ac": dict(ac) if ac is not None else None,
        "hardware": verdict.to_dict() if verdict is not None else None,
        "mode": decision.mode.value if decision is not None else "default",
        "measurements": [],
        "attachments": [],
        "notes": {},
        "engines": [],
    }
    return later_phase_payload(first, recorded, engines)


def later_phase_payload(
    first: SpecPayload, recorded: RecordedProperties | None, engines: Sequence[Mapping[str, Any]] = ()
) -> SpecPayload:
    """The payload of a later phase of the test whose earlier phase carried ``first``: the test's
    node id, AC, hardware verdict and run mode do not change between its phases, so they are
    ``first``'s (the same dicts: a payload is read, never written to); what it recorded by now
    (``recorded``) and its ``engines`` are this phase's."""
    return {
        "nodeid": first["nodeid"],
        "ac": first["ac"],
        "hardware": first["hardware"],
        "mode": first["mode"],
        "measurements": recorded["measurements"] if recorded else [],
        "attachments": recorded["attachments"] if recorded else [],
        "notes": recorded["notes"] if recorded else {},
        "engines": [cast("JsonValue", dict(engine)) for engine in engines],
    }


def empty_payload(nodeid: str) -> SpecPayload:
    """The payload of a test that reported none (no AC, no verdict, nothing recorded)."""
    return spec_payload(nodeid, ac=None, verdict=None, decision=None)


def payload_of(user_properties: Iterable[Any] | None) -> SpecPayload | None:
    """The last ``("specgate", payload)`` entry of a report (later phases carry everything earlier
    ones did); None when there is none or it lacks a field of :class:`SpecPayload`."""
    found: SpecPayload | None = None
    for entry in user_properties or ():
        if isinstance(entry, tuple | list) and len(entry) == 2 and entry[0] == SPEC_PROPERTY:
            value = entry[1]
            shaped = isinstance(value, dict) and value.keys() >= _PAYLOAD_KEYS
            found = cast(SpecPayload, value) if shaped else None
    return found


def mismatched_hardware_runs(reports: Iterable[Any]) -> set[str]:
    """Node ids whose call phase ran although the host did not match their hardware marker.

    The payload travels on the setup and teardown reports, so the verdict comes from
    whichever report of the test carries one.
    """
    called: set[str] = set()
    mismatched: set[str] = set()
    for report in reports:
        if getattr(report, "when", None) == "call":
            called.add(report.nodeid)
        payload = payload_of(getattr(report, "user_properties", ()))
        if payload is not None and payload["hardware"] is not None and not payload["hardware"]["matched"]:
            mismatched.add(report.nodeid)
    return called & mismatched


@dataclass(frozen=True)
class UnbundledEvidence:
    """What a test without an ``ac`` marker recorded, which therefore no bundle holds."""

    nodeid: str
    measurements: tuple[str, ...]
    attachments: tuple[str, ...]
    notes: tuple[str, ...]

    def describe(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("measurements", self.measurements),
                ("attachments", self.attachments),
                ("notes", self.notes),
            )
            if names
        ]
        return f"{self.nodeid}: {'; '.join(parts)}"


def _names(rows: list[JsonValue], key: str) -> tuple[str, ...]:
    return tuple(str(row.get(key)) for row in rows if isinstance(row, Mapping))


def unbundled_evidence(reports: Iterable[Any]) -> list[UnbundledEvidence]:
    """Tests that recorded measurements, attachments or notes but carry no ``ac`` marker.

    A test's last report holds everything it recorded; the engines the plugin records are not notes.
    """
    latest: dict[str, SpecPayload] = {}
    for report in reports:
        payload = payload_of(getattr(report, "user_properties", ()))
        if payload is not None:
            latest[payload["nodeid"]] = payload
    found = []
    for nodeid, payload in sorted(latest.items()):
        if payload["ac"] is not None:
            continue
        entry = UnbundledEvidence(
            nodeid=nodeid,
            measurements=_names(payload["measurements"], "name"),
            attachments=_names(payload["attachments"], "name"),
            notes=tuple(sorted(payload["notes"])),
        )
        if entry.measurements or entry.attachments or entry.notes:
            found.append(entry)
    return found
