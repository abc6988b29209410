"""Fault injectors: server-side faults through the mock's admin API, client-side faults for any engine.

Each injector provokes the five faults of the fault gates and says what the
client saw; whether the engine recovered is judged elsewhere, from its counters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pytest_specgate.contracts.wire import FaultKind
from pytest_specgate.qualification._greedy import Messages
from pytest_specgate.qualification._raw_http import raw_chat_request, reset_after
from pytest_specgate.qualification._recovery import FaultObservation

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine

__all__ = ["ClientFaultInjector", "FaultInjector", "MockFaultInjector", "injector_for"]


class FaultInjector(Protocol):
    name: str

    def cancel_stream(self, engine: Engine, messages: Messages) -> FaultObservation: ...

    def connection_reset(self, engine: Engine, messages: Messages) -> FaultObservation: ...

    def reconnect(self, engine: Engine, messages: Messages) -> FaultObservation: ...

    def client_timeout(self, engine: Engine, messages: Messages) -> FaultObservation: ...

    def late_reply_after_cancel(self, engine: Engine, messages: Messages) -> FaultObservation: ...


def _read_some_deltas(engine: Engine, messages: Messages, wanted: int, max_tokens: int) -> tuple[int, bool]:
    stream = engine.stream(messages, temperature=0.0, max_tokens=max_tokens)
    received = 0
    try:
        for _ in stream:
            received += 1
            if received >= wanted:
                break
    finally:
        stream.close()
    return received, stream.exhausted


def _expect_transport_error(action: Callable[[], object], what: str) -> FaultObservation:
    import httpx

    try:
        action()
    except httpx.TimeoutException as exc:
        return FaultObservation(True, f"{what}: client saw {type(exc).__name__}", expects_cancel=True)
    except httpx.TransportError as exc:
        return FaultObservation(True, f"{what}: client saw {type(exc).__name__}: {exc}")
    return FaultObservation(False, f"{what}: the request completed normally")


class MockFaultInjector:
    """Server-side faults through the mock engine's ``/admin/faults`` API."""

    name = "mock-admin-faults"

    def __init__(self, *, stall_s: float = 30.0, late_s: float = 1.0, cancel_after_s: float = 0.2) -> None:
        self.stall_s = stall_s
        self.late_s = late_s
        self.cancel_after_s = cancel_after_s

    @staticmethod
    def _arm(engine: Engine, kind: FaultKind, *, seconds: float | None = None, after_chunks: int = 2) -> None:
        faults = engine.capabilities().faults
        if faults is None:
            raise TypeError(f"{engine.backend} engine at {engine.base_url} has no fault-injection API")
        faults.inject_fault(kind, seconds=seconds, after_chunks=after_chunks)

    def cancel_stream(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, FaultKind.STALL, seconds=self.stall_s)
        received, exhausted = _read_some_deltas(engine, messages, 1, 64)
        return FaultObservation(
            received >= 1 and not exhausted,
            f"stream stalled by the mock after its first delta; closed after {received} delta(s)",
            expects_cancel=True,
        )

    def connection_reset(self, engine: Engine, messages: Messages) -> FaultObservation:
        # After the first event: with a draft, one event carries a whole verification
        # round, so a short answer may hold only a couple of events.
        self._arm(engine, FaultKind.RESET, after_chunks=1)
        return _expect_transport_error(
            lambda: engine.stream(messages, temperature=0.0, max_tokens=64).drain(),
            "mock dropped the stream after its first event",
        )

    def reconnect(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, FaultKind.RESET)
        return _expect_transport_error(
            lambda: engine.chat(messages, temperature=0.0, max_tokens=16),
            "mock truncated the response and closed the connection",
        )

    def client_timeout(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, FaultKind.STALL, seconds=self.stall_s)
        return _expect_transport_error(
            lambda: engine.chat(messages, temperature=0.0, max_tokens=16, timeout_s=self.cancel_after_s),
            f"mock stalled {self.stall_s:g}s, client timeout {self.cancel_after_s:g}s",
        )

    def late_reply_after_cancel(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, FaultKind.LATE_REPLY, seconds=self.late_s)
        observed = _expect_transport_error(
            lambda: engine.chat(messages, temperature=0.0, max_tokens=16, timeout_s=self.cancel_after_s),
            f"mock replies after {self.late_s:g}s, client gave up after {self.cancel_after_s:g}s",
        )
        return FaultObservation(observed.provoked, observed.detail, expects_cancel=False)


class ClientFaultInjector:
    """Faults any HTTP engine can take: the client cancels, times out, or resets its own connection."""

    name = "client-side-faults"

    def __init__(self, *, long_tokens: int = 256, tiny_timeout_s: float = 0.01, raw_timeout_s: float = 30.0):
        self.long_tokens = long_tokens
        self.tiny_timeout_s = tiny_timeout_s
        self.raw_timeout_s = raw_timeout_s

    def cancel_stream(self, engine: Engine, messages: Messages) -> FaultObservation:
        received, exhausted = _read_some_deltas(engine, messages, 2, self.long_tokens)
        return FaultObservation(
            received >= 2 and not exhausted, f"client closed the stream after {received} delta(s)"
        )

    def connection_reset(self, engine: Engine, messages: Messages) -> FaultObservation:
        request = raw_chat_request(engine, messages, stream=True, max_tokens=self.long_tokens)
        reset = reset_after(engine, request, b"data:", self.raw_timeout_s)
        return FaultObservation(
            reset,
            "client sent TCP RST after the first streamed event"
            if reset
            else "no streamed event arrived before the reset",
        )

    def reconnect(self, engine: Engine, messages: Messages) -> FaultObservation:
        request = raw_chat_request(engine, messages, stream=False, max_tokens=16)
        reset = reset_after(engine, request, b"\r\n\r\n", self.raw_timeout_s)
        received, _ = _read_some_deltas(engine, messages, 1, self.long_tokens)
        return FaultObservation(
            reset and received >= 1,
            f"keep-alive connection reset by the client (headers seen: {reset}); the engine client's "
            f"connection dropped after {received} delta(s), so the next request must reconnect",
        )

    def client_timeout(self, engine: Engine, messages: Messages) -> FaultObservation:
        return _expect_transport_error(
            lambda: engine.chat(
                messages, temperature=0.0, max_tokens=self.long_tokens, timeout_s=self.tiny_timeout_s
            ),
            f"client timeout {self.tiny_timeout_s:g}s",
        )

    def late_reply_after_cancel(self, engine: Engine, messages: Messages) -> FaultObservation:
        observed = self.client_timeout(engine, messages)
        return FaultObservation(
            observed.provoked, f"{observed.detail}; the engine's reply comes after the cancel"
        )


def injector_for(engine: Engine) -> FaultInjector:
    """Server-side faults where the engine can inject them (the mock), client-side faults elsewhere."""
    return MockFaultInjector() if engine.capabilities().faults is not None else ClientFaultInjector()
