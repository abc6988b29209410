"""Fault injection and counters over the test kits' :class:`FakeEngine`, for the fault-gate tests.

The mock engine recovers from every fault it injects; to prove each gate FAILS
when an engine does not recover, :class:`FakeInjector` makes the fake engine leak a slot,
freeze its counters, change its greedy output or die after a fault - one knob per failure
the gates must catch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fake_engine import FakeEngine

from pytest_specgate.qualification import CounterReading, FaultObservation

BREAKAGES = ("slot-leak", "frozen-counters", "output-drift", "dead-after-fault", "not-provoked")


@dataclass
class FakeProbe:
    engine: FakeEngine

    def read(self) -> CounterReading:
        return CounterReading(
            self.engine.requests_total, self.engine.slots_active, self.engine.cancelled_total, "fake"
        )


@dataclass
class FakeInjector:
    """Every fault 'happens' (the client sees it) and the engine then recovers - or breaks as told."""

    engine: FakeEngine
    breakage: str | None = None
    name: str = "fake-faults"
    faults: list[str] = field(default_factory=list)

    def _fault(self, kind: str) -> FaultObservation:
        self.faults.append(kind)
        engine = self.engine
        if engine.counting:
            engine.requests_total += 1
            engine.cancelled_total += 1
        if self.breakage == "slot-leak":
            engine.slots_active += 1
        elif self.breakage == "frozen-counters":
            engine.counting = False
        elif self.breakage == "output-drift":
            engine.drift = True
        elif self.breakage == "dead-after-fault":
            engine.dead = True
        provoked = self.breakage != "not-provoked"
        return FaultObservation(
            provoked, f"fake {kind}" if provoked else f"fake {kind}: nothing happened", expects_cancel=True
        )

    def cancel_stream(self, engine: object, messages: object) -> FaultObservation:
        return self._fault("cancel_stream")

    def connection_reset(self, engine: object, messages: object) -> FaultObservation:
        return self._fault("connection_reset")

    def reconnect(self, engine: object, messages: object) -> FaultObservation:
        return self._fault("reconnect")

    def client_timeout(self, engine: object, messages: object) -> FaultObservation:
        return self._fault("client_timeout")

    def late_reply_after_cancel(self, engine: object, messages: object) -> FaultObservation:
        return self._fault("late_reply_after_cancel")


@dataclass
class NoteRecorder:
    """Stands in for the evidence fixture's recorder: keeps notes and attachments."""

    notes: dict[str, object] = field(default_factory=dict)
    attachments: dict[str, bytes] = field(default_factory=dict)

    def note(self, key: str, value: object) -> None:
        self.notes[key] = value

    def attach(self, name: str, content: bytes | str | object) -> object:
        from pathlib import Path

        assert isinstance(content, Path)
        self.attachments[name] = content.read_bytes()
        return name
