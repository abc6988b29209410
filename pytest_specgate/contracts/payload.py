"""The per-test payload that travels on ``report.user_properties``.

It is the only channel from a test (possibly on an xdist worker) to the
controller that writes evidence, so it holds plain JSON data only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pytest_specgate.contracts.hardware import HardwareVerdict
    from pytest_specgate.contracts.runmode import RunDecision

__all__ = [
    "SPEC_PROPERTY",
    "UnbundledEvidence",
    "mismatched_hardware_runs",
    "payload_of",
    "spec_payload",
    "unbundled_evidence",
]

SPEC_PROPERTY: Final = "specgate"


def spec_payload(
    nodeid: str,
    *,
    ac: Mapping[str, Any] | None,
    verdict: HardwareVerdict | None,
    decision: RunDecision | None,
    recorded: Mapping[str, Any] | None = None,
    engines: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Everything the evidence writer needs to know about one test phase.

    ``engines`` are the plugin's own records of the engines this test was handed; nothing the
    test recorded (``recorded``) can replace them.
    """
    payload: dict[str, Any] = {
        "nodeid": nodeid,
        "ac": dict(ac) if ac is not None else None,
        "hardware": verdict.to_dict() if verdict is not None else None,
        "mode": decision.mode.value if decision is not None else "default",
        "measurements": [],
        "attachments": [],
        "notes": {},
        "engines": [],
    }
    if recorded:
        payload.update(recorded)
    payload["engines"] = [dict(engine) for engine in engines]
    return payload


def payload_of(user_properties: Iterable[Any] | None) -> dict[str, Any] | None:
    """The last ``("specgate", dict)`` entry of a report: later phases carry everything earlier ones did."""
    found: dict[str, Any] | None = None
    for entry in user_properties or ():
        if isinstance(entry, tuple | list) and len(entry) == 2 and entry[0] == SPEC_PROPERTY:
            found = entry[1] if isinstance(entry[1], dict) else None
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


def _names(rows: Any, key: str) -> tuple[str, ...]:
    if not isinstance(rows, list):
        return ()
    return tuple(str(row.get(key)) for row in rows if isinstance(row, Mapping))


def unbundled_evidence(reports: Iterable[Any]) -> list[UnbundledEvidence]:
    """Tests that recorded measurements, attachments or notes but carry no ``ac`` marker.

    A test's last report holds everything it recorded; the engines the plugin records are not notes.
    """
    latest: dict[str, dict[str, Any]] = {}
    for report in reports:
        payload = payload_of(getattr(report, "user_properties", ()))
        if payload is not None:
            latest[str(payload.get("nodeid", getattr(report, "nodeid", "")))] = payload
    found = []
    for nodeid, payload in sorted(latest.items()):
        if payload.get("ac") is not None:
            continue
        notes = payload.get("notes")
        entry = UnbundledEvidence(
            nodeid=nodeid,
            measurements=_names(payload.get("measurements"), "name"),
            attachments=_names(payload.get("attachments"), "name"),
            notes=tuple(sorted(notes)) if isinstance(notes, Mapping)
            else (),
        )
        if entry.measurements or entry.attachments or entry.notes:
            found.append(entry)
    return found
