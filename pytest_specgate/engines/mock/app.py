"""The mock engine's ASGI app: OpenAI-compatible endpoints, telemetry, admin and faults.

Starlette does the HTTP; this module only maps requests onto the mock model.
The zero-latency, fault-free, non-streamed path never awaits, which keeps the
server well above 500 requests/s on two cores.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from pytest_specgate._version import __version__
from pytest_specgate.contracts.engine import EngineStartupRefused, acceptance_rate_of
from pytest_specgate.engines.identity import MOCK_SERVER_NAME
from pytest_specgate.engines.mock.model import (
    DraftModel,
    Round,
    TargetModel,
    Vocabulary,
    baseline_rounds,
    speculative_rounds,
    vocabulary_named,
)
from pytest_specgate.engines.mock.requests import (
    ApiError,
    GenerationRequest,
    error_body,
    parse_generation_request,
)
from pytest_specgate.engines.mock.settings import (
    FAULT_KINDS,
    VIOLATIONS,
    FaultSpec,
    MockSettings,
    check_startup,
)
from pytest_specgate.engines.mock.telemetry import Counters, TelemetryWindow

__all__ = ["CRASH_EXIT_CODE", "MockState", "create_app"]

T = TypeVar("T")
CRASH_EXIT_CODE = 70
_DEFAULT_STALL_S = 30.0
_DEFAULT_LATE_S = 1.0


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _json(value: object, status: int = 200) -> Response:
    return Response(_dumps(value), status_code=status, media_type="application/json")


def _api_error(error: ApiError) -> Response:
    return _json(error.body(), error.status)


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


@dataclass
class Slots:
    """Generation slots: active now, freed so far, and how many ended by a client cancel."""

    active: int = 0
    peak: int = 0
    freed: int = 0
    cancelled: int = 0

    def acquire(self) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)

    def release(self, cancelled: bool) -> None:
        self.active -= 1
        self.freed += 1
        if cancelled:
            self.cancelled += 1


class MockState:
    """Mutable server state: current models, telemetry window, faults, violations, slots."""

    def __init__(
        self,
        settings: MockSettings,
        *,
        allow_crash: bool,
        log: Callable[[str], None] | None = None,
    ) -> None:
        check_startup(settings)
        if not allow_crash and any(fault.kind == "crash" for fault in settings.faults):
            raise ValueError("the crash fault needs a mock engine in its own process")
        self.settings = settings
        self.allow_crash = allow_crash
        self._log = log
        self.vocab: Vocabulary = vocabulary_named(settings.vocab)
        self.target = TargetModel(settings.target, self.vocab, settings.seed, settings.eos_one_in)
        self.draft: DraftModel | None = (
            DraftModel(settings.draft, self.vocab, settings.alpha, settings.seed)
            if settings.draft is not None
            else None
        )
        self.telemetry = TelemetryWindow(settings.roll_period_s)
        self.faults = FaultBoard()
        for fault in settings.faults:
            self.faults.arm(fault)
        self.violations: set[str] = set(settings.violations)
        self.slots = Slots()
        self.late_replies = 0
        self.late_replies_after_disconnect = 0
        self.created = int(time.time())
        self._next_id = 0
        self._sample_seed = settings.seed
        self.event(
            f"started target={settings.target} draft={settings.draft} gamma={settings.num_draft_tokens} "
            f"alpha={settings.alpha} target_step_ms={settings.target_step_ms} "
            f"draft_step_ms={settings.draft_step_ms} violations={sorted(self.violations)} "
            f"faults={[fault.to_dict() for fault in settings.faults]}"
        )

    def event(self, message: str) -> None:
        """Record an admin action, fault or start-up line in the engine log (never per request)."""
        if self._log is not None:
            self._log(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} mock-engine {message}")

    def next_id(self, prefix: str) -> str:
        self._next_id += 1
        return f"{prefix}-{self._next_id:016x}"

    def next_sample_seed(self) -> int:
        self._sample_seed += 1
        return self._sample_seed

    def gate_reason(self, request: GenerationRequest) -> str | None:
        """Why a request must take the baseline path (None: it may speculate)."""
        if not request.params.greedy:
            return "temperature"
        for feature in request.features:
            if feature in self.settings.gated_features:
                return feature
        return None

    def speculates(self, gate_reason: str | None) -> bool:
        if self.draft is None:
            return False
        return gate_reason is None or "gate-disabled" in self.violations

    def swap_target(self, target: str, vocab_name: str | None) -> dict[str, object]:
        vocab = vocabulary_named(vocab_name or self.vocab.name)
        if self.draft is not None and vocab.digest != self.draft.vocab.digest:
            raise EngineStartupRefused(
                "draft_model_tokenizer_mismatch",
                f"swap target {target} vocabulary {vocab.name} differs from draft model "
                f"{self.draft.model_id} vocabulary {self.draft.vocab.name}",
            )
        previous = self.target.model_id
        self.vocab = vocab
        self.target = TargetModel(target, vocab, self.settings.seed, self.settings.eos_one_in)
        self.settings = self.settings.with_target(target)
        self.telemetry.swap(reset="no-reset-on-swap" not in self.violations)
        return {"previous": previous, "target": target, "swaps": self.telemetry.swaps}

    def release_slot(self, cancelled: bool) -> None:
        """Free a request's slot; the ``slot-leak`` violation keeps cancelled ones held."""
        if cancelled and "slot-leak" in self.violations:
            self.slots.cancelled += 1
            return
        self.slots.release(cancelled)

    def reported_accepted(self, accepted: int) -> int:
        """Accepted count as reported, i.e. with the off-by-one violation applied."""
        return accepted + 1 if "telemetry-off-by-one" in self.violations else accepted

    def status(self) -> dict[str, object]:
        window = self.telemetry.status_window()
        drafted = self.telemetry.window.drafted
        accepted = self.reported_accepted(self.telemetry.window.accepted)
        body: dict[str, object] = {
            "object": "status",
            "model": self.target.model_id,
            "vocab": self.vocab.name,
        }
        if self.settings.speculation_support:
            body.update(
                {
                    "spec_decode_enabled": self.draft is not None,
                    "spec_decode_draft_model_id": self.draft.model_id if self.draft else None,
                    "spec_decode_num_draft_tokens": (self.settings.num_draft_tokens if self.draft else None),
                    "spec_decode_drafted_tokens_since_last": drafted,
                    "spec_decode_accepted_tokens_since_last": accepted,
                    "spec_decode_acceptance_rate": acceptance_rate_of(drafted, accepted),
                    "spec_decode_num_drafts_since_last": window["drafts"],
                    "spec_decode_draft_failures_since_last": window["draft_failures"],
                    "spec_decode_alpha": self.draft.alpha if self.draft else None,
                }
            )
        body.update(
            {
                "window": window,
                "previous_window": self.telemetry.previous,
                "rolls": self.telemetry.rolls,
                "swaps": self.telemetry.swaps,
                "roll_period_s": self.telemetry.roll_period_s,
                "slots": {
                    "active": self.slots.active,
                    "peak": self.slots.peak,
                    "freed_total": self.slots.freed,
                    "cancelled_total": self.slots.cancelled,
                },
                "faults": {
                    "armed": self.faults.describe(),
                    "fired": dict(self.faults.fired),
                    "late_replies": self.late_replies,
                    "late_replies_after_disconnect": self.late_replies_after_disconnect,
                    "draft_failures_total": self.telemetry.totals.draft_failures,
                },
                "violations": sorted(self.violations),
                "gated_features": list(self.settings.gated_features),
                "pid": os.getpid(),
            }
        )
        return body

    def metrics_text(self) -> str:
        totals = self.telemetry.totals
        label = f'model_name="{self.target.model_id}"'
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, int]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{name}{{{labels}}} {value}" for labels, value in samples)

        metric(
            "vllm:num_requests_running", "gauge", "Requests being generated.", [(label, self.slots.active)]
        )
        counters = [
            ("vllm:prompt_tokens_total", "Prefill tokens processed.", totals.prompt_tokens),
            ("vllm:generation_tokens_total", "Generation tokens processed.", totals.completion_tokens),
            ("vllm:request_success_total", "Requests admitted.", totals.requests),
        ]
        if self.draft is not None:
            counters += [
                ("vllm:spec_decode_num_drafts_total", "Speculative drafts.", totals.drafts),
                ("vllm:spec_decode_num_draft_tokens_total", "Draft tokens.", totals.drafted),
                (
                    "vllm:spec_decode_num_accepted_tokens_total",
                    "Accepted tokens.",
                    self.reported_accepted(totals.accepted),
                ),
            ]
        for name, help_text, value in counters:
            metric(name, "counter", help_text, [(label, value)])
        if self.draft is not None:
            gamma = self.settings.num_draft_tokens
            reached = list(totals.accepted_per_position[:gamma])
            accepted_at = reached + [0] * (gamma - len(reached))
            metric(
                "vllm:spec_decode_num_accepted_tokens_per_pos_total",
                "counter",
                "Accepted tokens per draft position.",
                [
                    (f'{label},position="{position}"', count)
                    for position, count in enumerate(accepted_at)
                ],
            )
        return "\n".join(lines) + "\n"


class TextAssembler:
    """Turns tokens into text deltas, honouring stop strings without emitting past them.

    The last ``len(longest stop) - 1`` characters are held back until it is clear
    they do not begin a stop string, so streamed and non-streamed text agree.
    """

    def __init__(self, vocab: Vocabulary, stop: tuple[str, ...]) -> None:
        self._vocab = vocab
        self._stop = stop
        self._longest = max((len(s) for s in stop), default=0)
        self._holdback = max(self._longest - 1, 0)
        self.text = ""
        self.emitted = 0
        self.token_ids: list[int] = []
        self.stopped = False

    def push(self, token: int) -> str:
        before = len(self.text)
        self.token_ids.append(token)
        self.text += self._vocab.piece(token)
        if self._stop:
            start = max(0, before - self._longest + 1)
            hits = [i for i in (self.text.find(s, start) for s in self._stop) if i >= 0]
            if hits:
                self.text = self.text[: min(hits)]
                self.stopped = True
                return self.flush()
        safe = len(self.text) - self._holdback
        if safe <= self.emitted:
            return ""
        delta = self.text[self.emitted : safe]
        self.emitted = safe
        return delta

    def flush(self) -> str:
        delta = self.text[self.emitted :]
        self.emitted = len(self.text)
        return delta


@dataclass
class ChoiceOutcome:
    text: str
    token_ids: list[int]
    finish_reason: str


class _AbortConnection(Exception):
    """Raised inside a stream to drop the connection without finishing the body."""


class AbortableStreamingResponse(StreamingResponse):
    """A stream that can drop its connection, and always closes its generator.

    Closing the generator (shielded from the cancel that a client disconnect
    causes) runs its ``finally`` at once, so a cancelled stream frees its slot
    immediately rather than whenever the generator is garbage-collected.
    """

    async def stream_response(self, send: Send) -> None:
        try:
            await super().stream_response(send)
        except _AbortConnection:
            return
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()


class TruncatedResponse(Response):
    """Announces the whole body, sends half, and returns: the client sees a dropped connection."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        body = bytes(self.body)
        await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})


class Generation:
    """Drives the rounds for one request and records them in the telemetry."""

    def __init__(self, state: MockState, request: GenerationRequest, fault: FaultSpec | None):
        self.state = state
        self.request = request
        self.fault = fault
        self.gate_reason = state.gate_reason(request)
        self.speculative = state.speculates(self.gate_reason)
        self.epoch = state.telemetry.epoch
        self.target = state.target
        self.draft = state.draft
        for counters in self._counters():
            counters.add_request(len(request.prompt_ids), self.speculative, self.gate_reason)

    def _counters(self) -> Iterator[Counters]:
        yield self.state.telemetry.totals
        window = self.state.telemetry.current(self.epoch)
        if window is not None:
            yield window

    def rounds(self, choice: int) -> Iterator[Round]:
        request = self.request
        params = request.params
        if choice:
            params = dataclasses.replace(params, sample_seed=(params.sample_seed or 0) + choice)
        settings = self.state.settings
        if not self.speculative or self.draft is None:
            return baseline_rounds(self.target, request.prompt_ids, params, settings.target_step_ms / 1000)
        fail_after = 1 if self.fault is not None and self.fault.kind == "draft-failure" else None
        return speculative_rounds(
            self.target,
            self.draft,
            request.prompt_ids,
            params,
            gamma=settings.num_draft_tokens,
            target_step_s=settings.target_step_ms / 1000,
            draft_step_s=settings.draft_step_ms / 1000,
            corrupt="corrupt-spec" in self.state.violations,
            fail_draft_after_rounds=fail_after,
        )

    def record(self, round_: Round, tokens_kept: int) -> None:
        for counters in self._counters():
            counters.add_round(round_.drafted, round_.accepted, tokens_kept)
            if round_.draft_failed:
                counters.draft_failures += 1

    def feed(self, assembler: TextAssembler, round_: Round) -> list[tuple[str, int]]:
        """Push a round's tokens; returns (delta, token) pairs and records the round."""
        pieces: list[tuple[str, int]] = []
        for token in round_.tokens:
            pieces.append((assembler.push(token), token))
            if assembler.stopped:
                break
        self.record(round_, len(pieces))
        return pieces

    def finish_reason(self, assembler: TextAssembler, round_: Round | None) -> str:
        if assembler.stopped:
            return "stop"
        return round_.finished if round_ is not None and round_.finished else "length"

    def run_sync(self, choice: int) -> ChoiceOutcome:
        assembler = TextAssembler(self.state.vocab, self.request.stop)
        last: Round | None = None
        for round_ in self.rounds(choice):
            last = round_
            self.feed(assembler, round_)
            if assembler.stopped or round_.finished:
                break
        assembler.flush()
        return ChoiceOutcome(assembler.text, assembler.token_ids, self.finish_reason(assembler, last))

    async def run_async(self, choice: int) -> ChoiceOutcome:
        assembler = TextAssembler(self.state.vocab, self.request.stop)
        last: Round | None = None
        for round_ in self.rounds(choice):
            if round_.cost_s > 0:
                await asyncio.sleep(round_.cost_s)
            last = round_
            self.feed(assembler, round_)
            if assembler.stopped or round_.finished:
                break
        assembler.flush()
        return ChoiceOutcome(assembler.text, assembler.token_ids, self.finish_reason(assembler, last))

    def logprobs_for(self, token_ids: list[int]) -> list[dict[str, object]]:
        state = self.target.initial_state(self.request.prompt_ids)
        entries: list[dict[str, object]] = []
        for token in token_ids:
            piece = self.state.vocab.piece(token)
            entries.append(
                {
                    "token": piece,
                    "logprob": self.target.logprob(state, token),
                    "bytes": list(piece.encode()),
                    "top_logprobs": [],
                }
            )
            state = self.target.advance(state, token)
        return entries


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _completion_body(
    state: MockState, generation: Generation, outcomes: list[ChoiceOutcome]
) -> dict[str, object]:
    request = generation.request
    choices: list[dict[str, object]] = []
    for index, outcome in enumerate(outcomes):
        logprobs: object = None
        if request.logprobs:
            entries = generation.logprobs_for(outcome.token_ids)
            logprobs = (
                {"content": entries}
                if request.chat
                else {
                    "tokens": [e["token"] for e in entries],
                    "token_logprobs": [e["logprob"] for e in entries],
                }
            )
        choice: dict[str, object] = {"index": index}
        if request.chat:
            choice["message"] = {"role": "assistant", "content": outcome.text}
        else:
            choice["text"] = outcome.text
        choice["logprobs"] = logprobs
        choice["finish_reason"] = outcome.finish_reason
        if request.return_token_ids:
            choice["token_ids"] = outcome.token_ids
        choices.append(choice)
    completion_tokens = sum(len(outcome.token_ids) for outcome in outcomes)
    return {
        "id": state.next_id("chatcmpl" if request.chat else "cmpl"),
        "object": "chat.completion" if request.chat else "text_completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": choices,
        "usage": _usage(len(request.prompt_ids), completion_tokens),
        **_disabled_drift(state),
    }


def _disabled_drift(state: MockState) -> dict[str, object]:
    """The ``disabled-drift`` violation: a draft-less engine leaks a field the build before lacked."""
    if "disabled-drift" in state.violations and state.draft is None and state.settings.speculation_support:
        return {"system_fingerprint": "spec-decode-off"}
    return {}


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
            return _api_error(error)
        state = self.state
        fault = state.faults.take()
        if fault is not None:
            state.event(f"fault fired: {fault.kind}")
        if fault is not None and fault.kind == "crash":
            os._exit(CRASH_EXIT_CODE)
        if fault is not None and fault.kind == "error-500":
            return _json(error_body("injected fault error-500", "internal_server_error", None, 500), 500)
        generation = Generation(state, parsed, fault)
        if parsed.stream:
            return await self._stream(request, generation)
        return await self._complete(request, generation)

    async def _complete(self, request: Request, generation: Generation) -> Response:
        state = self.state
        fault = generation.fault
        settings = state.settings
        timed = settings.target_step_ms > 0 or settings.draft_step_ms > 0
        state.slots.acquire()
        cancelled = False
        try:
            if fault is None and not timed:
                outcomes = [generation.run_sync(i) for i in range(generation.request.n)]
            elif fault is not None and fault.kind == "late-reply":
                outcomes = await self._late(request, generation, fault)
            else:
                result = await _unless_disconnected(request.receive, self._timed_outcomes(generation, fault))
                if isinstance(result, _Disconnected):
                    cancelled = True
                    return Response(status_code=499)
                outcomes = result
        finally:
            state.release_slot(cancelled)
        body = _completion_body(state, generation, outcomes)
        if fault is not None and fault.kind == "reset":
            return TruncatedResponse(_dumps(body), media_type="application/json")
        return _json(body)

    async def _timed_outcomes(self, generation: Generation, fault: FaultSpec | None) -> list[ChoiceOutcome]:
        if fault is not None and fault.kind == "stall":
            await asyncio.sleep(fault.seconds or _DEFAULT_STALL_S)
        return [await generation.run_async(i) for i in range(generation.request.n)]

    async def _wait_late(self, request: Request, fault: FaultSpec) -> None:
        """Delay the reply, deliberately ignoring a client cancel, and count who was still there."""
        await asyncio.sleep(fault.seconds if fault.seconds is not None else _DEFAULT_LATE_S)
        self.state.late_replies += 1
        if await request.is_disconnected():
            self.state.late_replies_after_disconnect += 1

    async def _late(self, request: Request, generation: Generation, fault: FaultSpec) -> list[ChoiceOutcome]:
        await self._wait_late(request, fault)
        return [await generation.run_async(i) for i in range(generation.request.n)]

    async def _stream(self, request: Request, generation: Generation) -> Response:
        fault = generation.fault
        if fault is not None and fault.kind == "late-reply":
            await self._wait_late(request, fault)
        return AbortableStreamingResponse(self._events(generation), media_type="text/event-stream")

    async def _events(self, generation: Generation) -> AsyncIterator[bytes]:
        state = self.state
        request = generation.request
        fault = generation.fault
        chunk_id = state.next_id("chatcmpl" if request.chat else "cmpl")
        created = int(time.time())
        object_name = "chat.completion.chunk" if request.chat else "text_completion"

        def chunk(index: int, text: str | None, finish: str | None, ids: list[int]) -> bytes:
            choice: dict[str, object] = {"index": index}
            if request.chat:
                choice["delta"] = {} if text is None else {"content": text}
            else:
                choice["text"] = text or ""
            choice["logprobs"] = None
            choice["finish_reason"] = finish
            if request.return_token_ids:
                choice["token_ids"] = ids
            event = {
                "id": chunk_id,
                "object": object_name,
                "created": created,
                "model": request.model,
                "choices": [choice],
                **_disabled_drift(state),
            }
            return b"data: " + _dumps(event) + b"\n\n"

        state.slots.acquire()
        completed = False
        content_chunks = 0
        completion_tokens = 0
        try:
            for index in range(request.n):
                if request.chat:
                    role = {
                        "id": chunk_id,
                        "object": object_name,
                        "created": created,
                        "model": request.model,
                        "choices": [
                            {
                                "index": index,
                                "delta": {"role": "assistant", "content": ""},
                                "logprobs": None,
                                "finish_reason": None,
                            }
                        ],
                    }
                    yield b"data: " + _dumps(role) + b"\n\n"
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
                        yield chunk(index, delta, None, pending)
                        pending = []
                        content_chunks += 1
                        if (
                            fault is not None
                            and fault.kind == "reset"
                            and content_chunks >= fault.after_chunks
                        ):
                            raise _AbortConnection
                        if fault is not None and fault.kind == "stall" and content_chunks == 1:
                            await asyncio.sleep(fault.seconds or _DEFAULT_STALL_S)
                    if assembler.stopped or round_.finished:
                        break
                rest = assembler.flush()
                if rest:
                    yield chunk(index, rest, None, pending)
                    pending = []
                completion_tokens += len(assembler.token_ids)
                finish = generation.finish_reason(assembler, last)
                yield chunk(index, None if request.chat else "", finish, pending)
            if request.include_usage:
                usage = {
                    "id": chunk_id,
                    "object": object_name,
                    "created": created,
                    "model": request.model,
                    "choices": [],
                    "usage": _usage(len(request.prompt_ids), completion_tokens),
                }
                yield b"data: " + _dumps(usage) + b"\n\n"
            yield b"data: [DONE]\n\n"
            completed = True
        finally:
            state.release_slot(cancelled=not completed)

    async def models(self, request: Request) -> Response:
        state = self.state
        return _json(
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
        return _json({"status": "ok"})

    async def status(self, request: Request) -> Response:
        return _json(self.state.status())

    async def metrics(self, request: Request) -> Response:
        return Response(self.state.metrics_text(), media_type="text/plain; version=0.0.4")

    async def version(self, request: Request) -> Response:
        import starlette
        import uvicorn

        return _json(
            {
                "engine": MOCK_SERVER_NAME,
                "version": __version__,
                "starlette": starlette.__version__,
                "uvicorn": uvicorn.__version__,
            }
        )

    async def roll(self, request: Request) -> Response:
        closed = self.state.telemetry.roll()
        self.state.event(f"roll: closed window drafted={closed['drafted']} accepted={closed['accepted']}")
        return _json({"closed": closed, "rolls": self.state.telemetry.rolls})

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
            return _json(swapped)
        except ApiError as error:
            return _api_error(error)
        except ValueError as exc:
            return _api_error(ApiError(400, str(exc), param="vocab"))
        except EngineStartupRefused as refused:
            return _api_error(ApiError(409, refused.message, code=refused.code))

    async def faults(self, request: Request) -> Response:
        state = self.state
        if request.method == "DELETE":
            state.faults.clear()
        elif request.method == "POST":
            try:
                fault = self._fault_from(await self._body(request))
                state.faults.arm(fault)
                state.event(f"fault armed: {fault.to_dict()}")
            except ApiError as error:
                return _api_error(error)
        return _json({"armed": state.faults.describe(), "fired": dict(state.faults.fired)})

    def _fault_from(self, body: object) -> FaultSpec:
        if not isinstance(body, dict) or body.get("kind") not in FAULT_KINDS:
            raise ApiError(400, f"fault needs 'kind', one of {list(FAULT_KINDS)}", param="kind")
        kind = str(body["kind"])
        if kind == "crash" and not self.state.allow_crash:
            raise ApiError(
                409,
                "the crash fault needs a mock engine in its own process "
                "(isolation='subprocess' or `specgate mock-engine`)",
                param="kind",
            )
        count, seconds, after = body.get("count", 1), body.get("seconds"), body.get("after_chunks", 2)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ApiError(400, "'count' must be a positive integer", param="count")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)):
            raise ApiError(400, "'seconds' must be a number", param="seconds")
        if isinstance(after, bool) or not isinstance(after, int) or after < 1:
            raise ApiError(400, "'after_chunks' must be a positive integer", param="after_chunks")
        return FaultSpec(kind, count, None if seconds is None else float(seconds), after)

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
                return _api_error(error)
            state.violations = {str(n) for n in names}
            state.event(f"violations: {sorted(state.violations)}")
        return _json({"violations": sorted(state.violations)})


async def _http_exception(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    error_type = "invalid_request_error" if status < 500 else "internal_server_error"
    message = f"{detail}: {request.method} {request.url.path}"
    return _json(error_body(message, error_type, None, status), status)


def create_app(state: MockState) -> Starlette:
    handlers = MockEngineApp(state)
    routes: list[tuple[str, Callable[[Request], Any], list[str]]] = [
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
    return Starlette(
        routes=[Route(path, endpoint, methods=methods) for path, endpoint, methods in routes],
        exception_handlers={HTTPException: _http_exception, Exception: _http_exception},
    )
