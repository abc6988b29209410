"""Transient faults: the board that arms them and, per kind, everything that kind does.

Each fault kind is one class below, overriding only the moments of a request it
changes (before generating, before replying, after a streamed event, the reply
itself); the routes call every moment on whatever behaviour a request drew, so
one fault's behaviour is read in one place.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Final

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from pytest_specgate.contracts.validation import is_count, is_real
from pytest_specgate.contracts.wire import FaultKind
from pytest_specgate.engines.mock.envelopes import AbortConnection, json_response
from pytest_specgate.engines.mock.requests import ApiError, error_body
from pytest_specgate.engines.mock.settings import FAULT_KINDS, FaultSpec

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = [
    "CRASH_EXIT_CODE",
    "ArmedFault",
    "FaultBehaviour",
    "FaultBoard",
    "LateReplies",
    "behaviour_for",
    "fault_from_body",
]

CRASH_EXIT_CODE: Final = 70
_DEFAULT_STALL_S: Final = 30.0
_DEFAULT_LATE_S: Final = 1.0
CRASH_NEEDS_OWN_PROCESS: Final = "the crash fault needs a mock engine in its own process"


@dataclass
class LateReplies:
    """What the late-reply fault counts: replies sent, and how many of them after the client had gone."""

    count: int = 0
    after_disconnect: int = 0


@dataclass
class ArmedFault:
    fault: FaultSpec
    remaining: int


@dataclass
class FaultBoard:
    """Armed transient faults, consumed first-in first-out by generation requests."""

    armed: list[ArmedFault] = field(default_factory=list)
    fired: dict[str, int] = field(default_factory=dict)

    def arm(self, fault: FaultSpec) -> None:
        self.armed.append(ArmedFault(fault, fault.count))

    def take(self) -> FaultSpec | None:
        if not self.armed:
            return None
        entry = self.armed[0]
        entry.remaining -= 1
        if entry.remaining <= 0:
            self.armed.pop(0)
        self.fired[entry.fault.kind] = self.fired.get(entry.fault.kind, 0) + 1
        return entry.fault

    def clear(self) -> None:
        self.armed.clear()

    def describe(self) -> list[dict[str, object]]:
        return [{**entry.fault.to_dict(), "remaining": entry.remaining} for entry in self.armed]


class TruncatedResponse(Response):
    """Announces the whole body, sends half, and returns: the client sees a dropped connection."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        body = bytes(self.body)
        await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})


class FaultBehaviour:
    """What a request does at each moment a fault could change; this base is the fault-free request."""

    ignores_cancel: ClassVar[bool] = False
    """True when the reply is delayed regardless of the client: nothing watches for its disconnect."""
    draft_fails_after_rounds: ClassVar[int | None] = None

    @property
    def fault(self) -> FaultSpec | None:
        return None

    def refusal(self) -> Response | None:
        """A reply that replaces generating anything (None: generate)."""
        return None

    async def before_reply(self, request: Request, late: LateReplies) -> None:
        """Runs once the request is parsed, before any token (streamed or not) is generated."""

    async def before_work(self) -> None:
        """Runs at the start of a non-streamed request's generation, while a disconnect is watched."""

    async def after_content_event(self, content_events: int) -> None:
        """Runs after each streamed event that carried text (``content_events`` so far)."""

    def reply(self, body: bytes) -> Response:
        return Response(body, media_type="application/json")


class _Armed(FaultBehaviour):
    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec

    @property
    def fault(self) -> FaultSpec | None:
        return self.spec


class _Reset(_Armed):
    """Drop the connection: half a non-streamed body, or a stream after ``after_chunks`` events."""

    def reply(self, body: bytes) -> Response:
        return TruncatedResponse(body, media_type="application/json")

    async def after_content_event(self, content_events: int) -> None:
        if content_events >= self.spec.after_chunks:
            raise AbortConnection


class _Stall(_Armed):
    """Hang for ``seconds``: before a non-streamed answer, or after a stream's first text event."""

    async def _stall(self) -> None:
        await asyncio.sleep(self.spec.seconds or _DEFAULT_STALL_S)

    async def before_work(self) -> None:
        await self._stall()

    async def after_content_event(self, content_events: int) -> None:
        if content_events == 1:
            await self._stall()


class _LateReply(_Armed):
    """Reply after ``seconds`` even when the client has gone, counting whether it had."""

    ignores_cancel = True

    async def before_reply(self, request: Request, late: LateReplies) -> None:
        await asyncio.sleep(self.spec.seconds if self.spec.seconds is not None else _DEFAULT_LATE_S)
        late.count += 1
        if await request.is_disconnected():
            late.after_disconnect += 1


class _Error500(_Armed):
    def refusal(self) -> Response | None:
        return json_response(error_body("injected fault error-500", "internal_server_error", None, 500), 500)


class _Crash(_Armed):
    def refusal(self) -> Response | None:
        os._exit(CRASH_EXIT_CODE)


class _DraftFailure(_Armed):
    """The draft model fails after its first round; the request still completes on the target."""

    draft_fails_after_rounds = 1


_BEHAVIOURS: Final[dict[FaultKind, type[_Armed]]] = {
    FaultKind.RESET: _Reset,
    FaultKind.STALL: _Stall,
    FaultKind.LATE_REPLY: _LateReply,
    FaultKind.ERROR_500: _Error500,
    FaultKind.CRASH: _Crash,
    FaultKind.DRAFT_FAILURE: _DraftFailure,
}


def behaviour_for(fault: FaultSpec | None) -> FaultBehaviour:
    return FaultBehaviour() if fault is None else _BEHAVIOURS[fault.kind](fault)


def fault_from_body(body: object, *, allow_crash: bool) -> FaultSpec:
    """The FaultSpec a ``POST /admin/faults`` body asks for; ApiError names the bad field."""
    if not isinstance(body, dict) or body.get("kind") not in FAULT_KINDS:
        raise ApiError(400, f"fault needs 'kind', one of {list(FAULT_KINDS)}", param="kind")
    kind = FaultKind(body["kind"])
    if kind is FaultKind.CRASH and not allow_crash:
        raise ApiError(
            409,
            f"{CRASH_NEEDS_OWN_PROCESS} (isolation='subprocess' or `specgate mock-engine`)",
            param="kind",
        )
    count, seconds, after = body.get("count", 1), body.get("seconds"), body.get("after_chunks", 2)
    if not is_count(count):
        raise ApiError(400, "'count' must be a positive integer", param="count")
    if seconds is not None and (not is_real(seconds)):
        raise ApiError(400, "'seconds' must be a number", param="seconds")
    if not is_count(after):
        raise ApiError(400, "'after_chunks' must be a positive integer", param="after_chunks")
    return FaultSpec(kind, count, None if seconds is None else float(seconds), after)
