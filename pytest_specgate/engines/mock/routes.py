"""The mock's HTTP routes: generation, models, health, telemetry and the admin endpoints.

Handlers parse the request, draw a fault, and hand the work to
:mod:`~pytest_specgate.engines.mock.generation`; response shapes come from
:mod:`~pytest_specgate.engines.mock.envelopes` and what a fault does from
:mod:`~pytest_specgate.engines.mock.faults`. The zero-latency, fault-free,
non-streamed path never awaits, which keeps the server well above 500 requests/s.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Final, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive

from pytest_specgate._version import __version__
from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.engines.identity import MOCK_SERVER_NAME
from pytest_specgate.engines.mock.envelopes import (
    DONE_EVENT,
    AbortableStreamingResponse,
    ChoiceOutcome,
    ChunkWriter,
    api_error_response,
    completion_body,
    dumps,
    json_response,
)
from pytest_specgate.engines.mock.exposition import metrics_text, status_body
from pytest_specgate.engines.mock.faults import behaviour_for, fault_from_body
from pytest_specgate.engines.mock.generation import Generation, TextAssembler
from pytest_specgate.engines.mock.model import Round
from pytest_specgate.engines.mock.requests import (
    ApiError,
    GenerationRequest,
    error_body,
    parse_generation_request,
)
from pytest_specgate.engines.mock.settings import VIOLATIONS
from pytest_specgate.engines.mock.state import MockState

__all__ = ["MockEngineApp", "http_exception", "route_table"]

T = TypeVar("T")


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        continue


class _Disconnected:
    """Marker returned when the client went away before the work finished."""


_DISCONNECTED: Final = _Disconnected()


async def _unless_disconnected(receive: Receive, work: Coroutine[Any, Any, T]) -> T | _Disconnected:
    """Run ``work`` but give up as soon as the client goes away.

    A stalled or slow request then frees its slot when the client times out
    instead of holding it until the work would have finished.
    """
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_wait_for_disconnect(receive))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if task in done:
        return task.result()
    task.cancel()
    return _DISCONNECTED


class MockEngineApp:
    """Route handlers bound to one MockState."""

    def __init__(self, state: MockState) -> None:
        self.state = state

    async def _body(self, request: Request) -> object:
        raw = await request.body()
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(400, f"request body is not valid JSON: {exc}") from exc

    def _parse(self, body: object, kind: str) -> GenerationRequest:
        state = self.state
        return parse_generation_request(
            body,
            kind=kind,
            served_model=state.target.model_id,
            vocab=state.vocab,
            default_max_tokens=state.settings.default_max_tokens,
            max_model_len=state.settings.max_model_len,
            default_sample_seed=state.next_sample_seed(),
        )

    async def chat(self, request: Request) -> Response:
        return await self._generate(request, "chat")

    async def completions(self, request: Request) -> Response:
        return await self._generate(request, "completion")

    async def _generate(self, request: Request, kind: str) -> Response:
        try:
            parsed = self._parse(await self._body(request), kind)
        except ApiError as error:
            return api_error_response(error)
        state = self.state
        fault = state.faults.take()
        if fault is not None:
            state.event(f"fault fired: {fault.kind}")
        behaviour = behaviour_for(fault)
        refusal = behaviour.refusal()
        if refusal is not None:
            return refusal
        generation = Generation(state.generation_setup(parsed), parsed, behaviour)
        if parsed.stream:
            return await self._stream(request, generation)
        return await self._complete(request, generation)

    async def _complete(self, request: Request, generation: Generation) -> Response:
        state = self.state
        behaviour = generation.fault_behaviour
        settings = state.settings
        timed = settings.target_step_ms > 0 or settings.draft_step_ms > 0
        state.slots.acquire()
        cancelled = False
        try:
            if behaviour.fault is None and not timed:
                outcomes = [generation.run_sync(i) for i in range(generation.request.n)]
            else:
                await behaviour.before_reply(request, state.late_replies)
                awaited = await self._outcomes_or_disconnect(request, generation)
                if awaited is None:
                    cancelled = True
                    return Response(status_code=499)
                outcomes = awaited
        finally:
            state.release_slot(cancelled)
        parsed = generation.request
        body = completion_body(state.response_id(parsed), state.drift_fields(), parsed,
                               outcomes, generation.logprobs_for)
        return behaviour.reply(dumps(body))

    async def _outcomes_or_disconnect(self, request: Request,
                                      generation: Generation) -> list[ChoiceOutcome] | None:
        """Every choice's outcome; None when the client went away first (unless the fault ignores that)."""
        if generation.fault_behaviour.ignores_cancel:
            return [await generation.run_async(i) for i in range(generation.request.n)]
        result = await _unless_disconnected(request.receive, self._timed_outcomes(generation))
        return None if isinstance(result, _Disconnected) else result

    async def _timed_outcomes(self, generation: Generation) -> list[ChoiceOutcome]:
        await generation.fault_behaviour.before_work()
        return [await generation.run_async(i) for i in range(generation.request.n)]

    async def _stream(self, request: Request, generation: Generation) -> Response:
        await generation.fault_behaviour.before_reply(request, self.state.late_replies)
        return AbortableStreamingResponse(self._events(generation), media_type="text/event-stream")

    async def _events(self, generation: Generation) -> AsyncIterator[bytes]:
        state = self.state
        request = generation.request
        behaviour = generation.fault_behaviour
        events = ChunkWriter(state.response_id(request), state.drift_fields(), request)
        state.slots.acquire()
        completed = False
        content_chunks = 0
        completion_tokens = 0
        try:
            for index in range(request.n):
                if request.chat:
                    yield events.role(index)
                assembler = TextAssembler(state.vocab, request.stop)
                last: Round | None = None
                pending: list[int] = []
                for round_ in generation.rounds(index):
                    if round_.cost_s > 0:
                        await asyncio.sleep(round_.cost_s)
                    last = round_
                    # One event per verification round, as a real engine sends one per step:
                    # the tokens a round accepted arrive together.
                    delta = ""
                    for piece, token in generation.feed(assembler, round_):
                        pending.append(token)
                        delta += piece
                    if delta:
                        yield events.chunk(index, delta, None, pending)
                        pending = []
                        content_chunks += 1
                        await behaviour.after_content_event(content_chunks)
                    if assembler.stopped or round_.finished:
                        break
                rest = assembler.flush()
                if rest:
                    yield events.chunk(index, rest, None, pending)
                    pending = []
                completion_tokens += len(assembler.token_ids)
                finish = generation.finish_reason(assembler, last)
                yield events.chunk(index, None if request.chat else "", finish, pending)
            if request.include_usage:
                yield events.usage(completion_tokens)
            yield DONE_EVENT
            completed = True
        finally:
            state.release_slot(cancelled=not completed)

    async def models(self, request: Request) -> Response:
        state = self.state
        return json_response(
            {
                "object": "list",
                "data": [
                    {
                        "id": state.target.model_id,
                        "object": "model",
                        "created": state.created,
                        "owned_by": MOCK_SERVER_NAME,
                        "max_model_len": state.settings.max_model_len,
                    }
                ],
            }
        )

    async def health(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def status(self, request: Request) -> Response:
        return json_response(status_body(self.state))

    async def metrics(self, request: Request) -> Response:
        return Response(metrics_text(self.state), media_type="text/plain; version=0.0.4")

    async def version(self, request: Request) -> Response:
        import starlette
        import uvicorn

        return json_response(
            {
                "engine": MOCK_SERVER_NAME,
                "version": __version__,
                "starlette": starlette.__version__,
                "uvicorn": uvicorn.__version__,
                "prefix_caching": "off",
            }
        )

    async def roll(self, request: Request) -> Response:
        closed = self.state.telemetry.roll()
        self.state.event(f"roll: closed window drafted={closed['drafted']} accepted={closed['accepted']}")
        return json_response({"closed": closed, "rolls": self.state.telemetry.rolls})

    async def swap(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            if not isinstance(body, dict) or not isinstance(body.get("target"), str):
                raise ApiError(400, 'swap needs {"target": "<model id>"}', param="target")
            vocab = body.get("vocab")
            if vocab is not None and not isinstance(vocab, str):
                raise ApiError(400, "'vocab' must be a vocabulary name", param="vocab")
            swapped = self.state.swap_target(body["target"], vocab)
            self.state.event(f"swap: {swapped['previous']} -> {swapped['target']}")
            return json_response(swapped)
        except ApiError as error:
            return api_error_response(error)
        except ValueError as exc:
            return api_error_response(ApiError(400, str(exc), param="vocab"))
        except EngineStartupRefused as refused:
            return api_error_response(ApiError(409, refused.message, code=refused.code))

    async def faults(self, request: Request) -> Response:
        state = self.state
        if request.method == "DELETE":
            state.faults.clear()
        elif request.method == "POST":
            try:
                fault = fault_from_body(await self._body(request), allow_crash=state.allow_crash)
                state.faults.arm(fault)
                state.event(f"fault armed: {fault.to_dict()}")
            except ApiError as error:
                return api_error_response(error)
        return json_response({"armed": state.faults.describe(), "fired": dict(state.faults.fired)})

    async def violations(self, request: Request) -> Response:
        state = self.state
        if request.method == "PUT":
            try:
                body = await self._body(request)
                names = body.get("violations") if isinstance(body, dict) else None
                if not isinstance(names, list) or any(n not in VIOLATIONS for n in names):
                    raise ApiError(
                        400,
                        f"violations must be a list drawn from {list(VIOLATIONS)}",
                        param="violations",
                    )
            except ApiError as error:
                return api_error_response(error)
            state.violations = {str(n) for n in names}
            state.event(f"violations: {sorted(state.violations)}")
        return json_response({"violations": sorted(state.violations)})


async def http_exception(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    error_type = "invalid_request_error" if status < 500 else "internal_server_error"
    message = f"{detail}: {request.method} {request.url.path}"
    return json_response(error_body(message, error_type, None, status), status)


def route_table(handlers: MockEngineApp) -> list[tuple[str, Callable[[Request], Any], list[str]]]:
    return [
        ("/v1/chat/completions", handlers.chat, ["POST"]),
        ("/v1/completions", handlers.completions, ["POST"]),
        ("/v1/models", handlers.models, ["GET"]),
        ("/v1/status", handlers.status, ["GET"]),
        ("/health", handlers.health, ["GET"]),
        ("/metrics", handlers.metrics, ["GET"]),
        ("/version", handlers.version, ["GET"]),
        ("/admin/roll", handlers.roll, ["POST"]),
        ("/admin/swap", handlers.swap, ["POST"]),
        ("/admin/faults", handlers.faults, ["GET", "POST", "DELETE"]),
        ("/admin/violations", handlers.violations, ["GET", "PUT"]),
    ]
