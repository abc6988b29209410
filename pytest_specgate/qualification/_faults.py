"""Fault gates: provoke a fault, then prove recovery by evidence, not by a 200.

Each gate provokes one fault through a :class:`FaultInjector` (the mock's
fault-injection admin API, or client-side faults any engine can take), then
demands evidence that the engine recovered: a later greedy request succeeds and
matches its pre-fault reference token for token, the engine's request counter
advanced, the slot the fault held was freed, and - where the engine counts them -
the cancel was seen as a cancel. ``greedy_restore`` closes the series with the
"greedy N/N identical" check over every fixed prompt.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import urlsplit

from pytest_specgate.qualification._budget import GateSpec

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine

__all__ = [
    "FAULT_GATES",
    "GREEDY_PROMPTS",
    "ClientFaultInjector",
    "CounterProbe",
    "CounterReading",
    "FaultGates",
    "FaultInjector",
    "FaultObservation",
    "GreedyOutput",
    "HttpCounterProbe",
    "MockFaultInjector",
    "RecoveryNotEvidenced",
    "compare_greedy",
    "fault_gate_specs",
    "injector_for",
]

GREEDY_PROMPTS: Final = (
    "Name three rivers and the cities on their banks.",
    "Describe a quiet garden at dawn in two sentences.",
    "List the planets from the sun outwards.",
    "Explain what a draft model does in speculative decoding.",
)
FAULT_GATES: Final = (
    "cancel_stream",
    "connection_reset",
    "reconnect",
    "client_timeout",
    "late_reply_after_cancel",
)
_RAW_READ_LIMIT: Final = 65536

Messages = list[dict[str, object]]


class RecoveryNotEvidenced(AssertionError):
    """A fault gate failed; ``evidence`` is what it saw (a qualification gate records it)."""

    def __init__(self, message: str, evidence: Mapping[str, object]) -> None:
        super().__init__(message)
        self.evidence = dict(evidence)


def fault_gate_specs(estimated_s: float = 10.0) -> tuple[GateSpec, ...]:
    """GateSpecs for the reference, the five fault gates and the restore check, in order."""
    return (
        GateSpec("greedy_reference", estimated_s, kind="greedy"),
        *(GateSpec(name, estimated_s, kind="fault") for name in FAULT_GATES),
        GateSpec("greedy_restore", estimated_s, kind="greedy"),
    )


def messages_for(prompt: str) -> Messages:
    return [{"role": "user", "content": prompt}]


# -- evidence of recovery ------------------------------------------------------------------


@dataclass(frozen=True)
class CounterReading:
    """Engine counters at one moment; None where the engine does not expose the counter."""

    requests_total: int | None
    slots_active: int | None
    cancelled_total: int | None
    source: str

    def to_dict(self) -> dict[str, object]:
        return {
            "requests_total": self.requests_total,
            "slots_active": self.slots_active,
            "cancelled_total": self.cancelled_total,
            "source": self.source,
        }


class CounterProbe(Protocol):
    def read(self) -> CounterReading: ...


def _int_at(mapping: Mapping[str, object], key: str) -> int | None:
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class HttpCounterProbe:
    """Counters from ``/metrics`` (vLLM names, also served by the mock) and the mock's ``/v1/status``."""

    def __init__(self, base_url: str, *, timeout_s: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str) -> str | None:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.base_url + path, timeout=self.timeout_s) as response:
                body: bytes = response.read()
        except (OSError, urllib.error.URLError):
            return None
        return body.decode("utf-8", errors="replace")

    def read(self) -> CounterReading:
        from pytest_specgate.engines.prometheus import MetricsParseError, metric_totals
        from pytest_specgate.inputs import InputError, parse_json

        problems: list[str] = []
        metrics_text = self._get("/metrics")
        try:
            metrics = metric_totals(metrics_text) if metrics_text is not None else {}
        except MetricsParseError as error:
            metrics = {}
            problems.append(str(error))
        status_text = self._get("/v1/status")
        try:
            status = parse_json(status_text, "/v1/status") if status_text is not None else {}
        except InputError as error:
            status = {}
            problems.append(str(error))
        slots = status.get("slots") if isinstance(status, dict) else None
        slots = slots if isinstance(slots, Mapping) else {}
        requests = metrics.get("vllm:request_success_total")
        running = metrics.get("vllm:num_requests_running")
        active = _int_at(slots, "active")
        sources = [name for name, found in (("/metrics", metrics), ("/v1/status", slots)) if found]
        return CounterReading(
            requests_total=None if requests is None else int(requests),
            slots_active=active if active is not None else (None if running is None else int(running)),
            cancelled_total=_int_at(slots, "cancelled_total"),
            source=(", ".join(sources) or "unavailable") + (f" ({'; '.join(problems)})" if problems else ""),
        )


@dataclass(frozen=True)
class GreedyOutput:
    prompt: str
    text: str
    token_ids: tuple[int, ...] | None
    finish_reason: str | None
    completion_tokens: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "prompt": self.prompt,
            "text": self.text,
            "token_ids": list(self.token_ids) if self.token_ids is not None else None,
            "finish_reason": self.finish_reason,
            "completion_tokens": self.completion_tokens,
        }


def compare_greedy(before: GreedyOutput, after: GreedyOutput) -> dict[str, object] | None:
    """None when identical; else the first differing position and both sequences."""
    if before.token_ids is not None and after.token_ids is not None:
        first: Sequence[object] = before.token_ids
        second: Sequence[object] = after.token_ids
        unit = "token"
    else:
        first, second, unit = before.text, after.text, "character"
    if list(first) == list(second):
        return None
    position = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), None)
    return {
        "prompt": before.prompt,
        "unit": unit,
        "first_difference": min(len(first), len(second)) if position is None else position,
        "before": list(first) if unit == "token" else before.text,
        "after": list(second) if unit == "token" else after.text,
    }


# -- faults ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultObservation:
    """What the client saw when the fault was provoked.

    ``expects_cancel`` is True when the engine was certainly mid-request when the
    client went away, so its cancel counter (where it has one) must advance.
    """

    provoked: bool
    detail: str
    expects_cancel: bool = False


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
    def _arm(engine: Engine, kind: str, *, seconds: float | None = None, after_chunks: int = 2) -> None:
        faults = engine.capabilities().faults
        if faults is None:
            raise TypeError(f"{engine.backend} engine at {engine.base_url} has no fault-injection API")
        faults.inject_fault(kind, seconds=seconds, after_chunks=after_chunks)

    def cancel_stream(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, "stall", seconds=self.stall_s)
        received, exhausted = _read_some_deltas(engine, messages, 1, 64)
        return FaultObservation(
            received >= 1 and not exhausted,
            f"stream stalled by the mock after its first delta; closed after {received} delta(s)",
            expects_cancel=True,
        )

    def connection_reset(self, engine: Engine, messages: Messages) -> FaultObservation:
        # After the first event: with a draft, one event carries a whole verification
        # round, so a short answer may hold only a couple of events.
        self._arm(engine, "reset", after_chunks=1)
        return _expect_transport_error(
            lambda: engine.stream(messages, temperature=0.0, max_tokens=64).drain(),
            "mock dropped the stream after its first event",
        )

    def reconnect(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, "reset")
        return _expect_transport_error(
            lambda: engine.chat(messages, temperature=0.0, max_tokens=16),
            "mock truncated the response and closed the connection",
        )

    def client_timeout(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, "stall", seconds=self.stall_s)
        return _expect_transport_error(
            lambda: engine.chat(messages, temperature=0.0, max_tokens=16, timeout_s=self.cancel_after_s),
            f"mock stalled {self.stall_s:g}s, client timeout {self.cancel_after_s:g}s",
        )

    def late_reply_after_cancel(self, engine: Engine, messages: Messages) -> FaultObservation:
        self._arm(engine, "late-reply", seconds=self.late_s)
        observed = _expect_transport_error(
            lambda: engine.chat(messages, temperature=0.0, max_tokens=16, timeout_s=self.cancel_after_s),
            f"mock replies after {self.late_s:g}s, client gave up after {self.cancel_after_s:g}s",
        )
        return FaultObservation(observed.provoked, observed.detail, expects_cancel=False)


def _address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"client-side faults need a plain http:// engine URL, found {base_url!r}")
    return parts.hostname, parts.port or 80


def _raw_request(engine: Engine, messages: Messages, *, stream: bool, max_tokens: int) -> bytes:
    body = json.dumps(
        {
            "model": engine.model_id,
            "messages": messages,
            "stream": stream,
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
    ).encode()
    host, port = _address(engine.base_url)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


def _reset_after(engine: Engine, request: bytes, until: bytes, timeout_s: float) -> bool:
    """Send ``request`` on a raw socket, read until ``until`` appears, then close with a TCP RST."""
    sock = socket.create_connection(_address(engine.base_url), timeout=timeout_s)
    seen = b""
    try:
        sock.sendall(request)
        while until not in seen and len(seen) < _RAW_READ_LIMIT:
            chunk = sock.recv(4096)
            if not chunk:
                break
            seen += chunk
    except OSError:
        return False
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    return until in seen


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
        request = _raw_request(engine, messages, stream=True, max_tokens=self.long_tokens)
        reset = _reset_after(engine, request, b"data:", self.raw_timeout_s)
        return FaultObservation(
            reset,
            "client sent TCP RST after the first streamed event"
            if reset
            else "no streamed event arrived before the reset",
        )

    def reconnect(self, engine: Engine, messages: Messages) -> FaultObservation:
        request = _raw_request(engine, messages, stream=False, max_tokens=16)
        reset = _reset_after(engine, request, b"\r\n\r\n", self.raw_timeout_s)
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


# -- the gates -------------------------------------------------------------------------------


class FaultGates:
    """The fault gates for one engine; call :meth:`greedy_reference` before any fault."""

    def __init__(
        self,
        engine: Engine,
        *,
        injector: FaultInjector | None = None,
        probe: CounterProbe | None = None,
        prompts: Sequence[str] = GREEDY_PROMPTS,
        max_tokens: int = 16,
        settle_s: float = 5.0,
        require_counters: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if len(prompts) < 2:
            raise ValueError(f"fault gates need at least 2 fixed prompts, found {len(prompts)}")
        self.engine = engine
        self.injector = injector if injector is not None else injector_for(engine)
        self.probe = probe if probe is not None else HttpCounterProbe(engine.base_url)
        self.prompts = tuple(prompts)
        self.max_tokens = max_tokens
        self.settle_s = settle_s
        self.require_counters = require_counters
        self._clock = clock
        self._sleep = sleep
        self._reference: tuple[GreedyOutput, ...] | None = None
        self._faults_run = 0

    def _greedy(self, prompt: str) -> GreedyOutput:
        result = self.engine.chat(messages_for(prompt), temperature=0.0, max_tokens=self.max_tokens)
        return GreedyOutput(
            prompt, result.text, result.token_ids, result.finish_reason, result.completion_tokens
        )

    def greedy_reference(self) -> dict[str, object]:
        """Greedy outputs on every fixed prompt before any fault: what recovery is compared to."""
        outputs = tuple(self._greedy(prompt) for prompt in self.prompts)
        empty = [o.prompt for o in outputs if not o.text and not o.token_ids]
        evidence = {"prompts": len(outputs), "outputs": [o.to_dict() for o in outputs]}
        if empty:
            raise RecoveryNotEvidenced(f"greedy_reference: empty output for {empty}", evidence)
        self._reference = outputs
        return evidence

    def _reference_or_fail(self, gate: str) -> tuple[GreedyOutput, ...]:
        if self._reference is None:
            raise RecoveryNotEvidenced(
                f"{gate}: no greedy reference; run the greedy_reference gate before any fault gate", {}
            )
        return self._reference

    def _settled(self, before: CounterReading) -> tuple[CounterReading, float]:
        started = self._clock()
        reading = self.probe.read()
        while (
            before.slots_active is not None
            and reading.slots_active is not None
            and reading.slots_active > before.slots_active
            and self._clock() - started < self.settle_s
        ):
            self._sleep(0.05)
            reading = self.probe.read()
        return reading, self._clock() - started

    def _fault_gate(
        self, gate: str, provoke: Callable[[Engine, Messages], FaultObservation]
    ) -> dict[str, object]:
        reference = self._reference_or_fail(gate)
        before = self.probe.read()
        problems: list[str] = []
        if self.require_counters and (before.requests_total is None or before.slots_active is None):
            problems.append(
                f"the engine exposes no request/slot counters ({before.source}); recovery cannot be "
                "evidenced (pass require_counters=False to accept that)"
            )
        observation = provoke(self.engine, messages_for(self.prompts[0]))
        if not observation.provoked:
            problems.append(f"the fault was not provoked: {observation.detail}")
        after_fault = self.probe.read()
        later_index = 1 + self._faults_run % (len(self.prompts) - 1)
        self._faults_run += 1
        evidence: dict[str, object] = {
            "gate": gate,
            "injector": self.injector.name,
            "fault": observation.detail,
            "provoked": observation.provoked,
            "counters_before": before.to_dict(),
            "counters_after_fault": after_fault.to_dict(),
        }
        try:
            later = self._greedy(self.prompts[later_index])
        except Exception as exc:
            problems.append(f"the request after the fault failed: {type(exc).__name__}: {exc}")
        else:
            evidence["later_request"] = later.to_dict()
            mismatch = compare_greedy(reference[later_index], later)
            if mismatch is not None:
                evidence["greedy_mismatch"] = mismatch
                problems.append(
                    f"greedy output after the fault differs from before it at {mismatch['unit']} "
                    f"{mismatch['first_difference']} (prompt {later.prompt!r})"
                )
        after, waited = self._settled(before)
        evidence["counters_after"] = after.to_dict()
        evidence["settle_waited_s"] = round(waited, 3)
        problems += _counter_problems(before, after_fault, after, observation, self.settle_s)
        evidence["recovered"] = not problems
        if problems:
            raise RecoveryNotEvidenced(f"{gate}: " + "; ".join(problems), evidence)
        return evidence

    def cancel_stream(self) -> dict[str, object]:
        return self._fault_gate("cancel_stream", self.injector.cancel_stream)

    def connection_reset(self) -> dict[str, object]:
        return self._fault_gate("connection_reset", self.injector.connection_reset)

    def reconnect(self) -> dict[str, object]:
        return self._fault_gate("reconnect", self.injector.reconnect)

    def client_timeout(self) -> dict[str, object]:
        return self._fault_gate("client_timeout", self.injector.client_timeout)

    def late_reply_after_cancel(self) -> dict[str, object]:
        return self._fault_gate("late_reply_after_cancel", self.injector.late_reply_after_cancel)

    def greedy_restore(self) -> dict[str, object]:
        """Greedy N/N identical: every fixed prompt gives its pre-fault output again."""
        reference = self._reference_or_fail("greedy_restore")
        mismatches: list[dict[str, object]] = []
        failures: list[str] = []
        for before in reference:
            try:
                after = self._greedy(before.prompt)
            except Exception as exc:
                failures.append(f"{before.prompt!r}: {type(exc).__name__}: {exc}")
                continue
            mismatch = compare_greedy(before, after)
            if mismatch is not None:
                mismatches.append(mismatch)
        identical = len(reference) - len(mismatches) - len(failures)
        summary = f"greedy {identical}/{len(reference)} identical"
        evidence: dict[str, object] = {
            "summary": summary,
            "identical": identical,
            "prompts": len(reference),
            "mismatches": mismatches,
            "failures": failures,
        }
        if identical != len(reference):
            first = mismatches[0] if mismatches else None
            where = (
                f"; first mismatch on {first['prompt']!r} at {first['unit']} {first['first_difference']}"
                if first is not None
                else f"; {failures[0]}"
            )
            raise RecoveryNotEvidenced(f"greedy_restore: {summary}{where}", evidence)
        return evidence


def _counter_problems(
    before: CounterReading,
    after_fault: CounterReading,
    after: CounterReading,
    observation: FaultObservation,
    settle_s: float,
) -> list[str]:
    """Slots back to where they were, the later request counted, the cancel counted as a cancel."""
    problems: list[str] = []
    if before.slots_active is not None and after.slots_active is not None:
        if after.slots_active > before.slots_active:
            problems.append(
                f"slot not freed: {after.slots_active} active after waiting {settle_s:g}s, "
                f"{before.slots_active} before the fault"
            )
    elif before.slots_active is not None:
        problems.append("slot counter disappeared after the fault")
    if after_fault.requests_total is not None and (
        after.requests_total is None or after.requests_total <= after_fault.requests_total
    ):
        problems.append(
            f"request counter did not advance for the request after the fault "
            f"({after_fault.requests_total} -> {after.requests_total})"
        )
    elif before.requests_total is not None and after_fault.requests_total is None:
        problems.append("request counter disappeared after the fault")
    if (
        observation.expects_cancel
        and before.cancelled_total is not None
        and (after.cancelled_total is None or after.cancelled_total <= before.cancelled_total)
    ):
        problems.append(
            f"the cancelled request was not counted as cancelled "
            f"({before.cancelled_total} -> {after.cancelled_total})"
        )
    return problems
