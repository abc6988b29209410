"""An in-memory engine whose recovery can be broken on purpose, for the fault-gate tests.

The mock engine recovers from every fault it injects; to prove each gate FAILS
when an engine does not recover, :class:`FakeEngine` can leak a slot, freeze its
counters, change its greedy output or die after a fault - one knob per failure
the gates must catch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import TracebackType

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import ChatResult, StreamResult, Telemetry
from pytest_specgate.qualification import CounterReading, FaultObservation

BREAKAGES = ("slot-leak", "frozen-counters", "output-drift", "dead-after-fault", "not-provoked")


def _prompt_of(messages: list[dict[str, object]]) -> str:
    return " ".join(str(message.get("content")) for message in messages)


@dataclass
class FakeEngine:
    """Greedy output is a hash of the prompt; counters behave like a healthy server's unless broken."""

    backend: str = "fake"
    base_url: str = "http://127.0.0.1:9"
    model_id: str = "fake-model"
    requests_total: int = 0
    slots_active: int = 0
    cancelled_total: int = 0
    counting: bool = True
    drift: bool = False
    dead: bool = False
    finish_reason: str = "stop"
    stream_finish_reason: str = "stop"
    calls: list[dict[str, object]] = field(default_factory=list)

    def _tokens(self, prompt: str, max_tokens: int) -> tuple[int, ...]:
        digest = hashlib.sha256(("drift:" if self.drift else "").encode() + prompt.encode()).digest()
        return tuple(digest[: min(max_tokens, 8)])

    def _admit(self, messages: list[dict[str, object]], params: dict[str, object]) -> tuple[int, ...]:
        if self.dead:
            raise ConnectionError("fake engine is dead")
        self.calls.append({"messages": messages, **params})
        if self.counting:
            self.requests_total += 1
        max_tokens = params.get("max_tokens", 16)
        assert isinstance(max_tokens, int)
        return self._tokens(_prompt_of(messages), max_tokens)

    def chat(self, messages: list[dict[str, object]], **params: object) -> ChatResult:
        tokens = self._admit(messages, dict(params))
        text = " ".join(f"t{token}" for token in tokens)
        return ChatResult(text, tokens, self.finish_reason, 3, len(tokens), {}, 0.0)

    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamResult:
        tokens = self._admit(messages, dict(params))
        events: list[dict[str, object]] = [
            {"choices": [{"delta": {"content": f"{' ' if i else ''}t{token}"}, "token_ids": [token]}]}
            for i, token in enumerate(tokens)
        ]
        events.append({"choices": [{"delta": {}, "finish_reason": self.stream_finish_reason}]})
        events.append({"choices": [], "usage": {"completion_tokens": len(tokens), "prompt_tokens": 3}})
        return StreamResult(events)

    def telemetry(self) -> Telemetry:
        return Telemetry.unavailable(enabled=False)

    def versions(self) -> dict[str, str]:
        return {"backend": self.backend}

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def close(self) -> None:
        return None

    def __enter__(self) -> FakeEngine:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


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
