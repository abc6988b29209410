"""What the mock puts on the wire around generated text: OpenAI response and chunk shapes.

The JSON shapes of a completion, a streamed chunk and a usage block, and the
streaming response that may drop its connection, are built here only, so the
streamed and the non-streamed paths cannot drift apart.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.responses import Response, StreamingResponse
from starlette.types import Send

from pytest_specgate.engines.mock.requests import ApiError, GenerationRequest

__all__ = [
    "DONE_EVENT",
    "AbortConnection",
    "AbortableStreamingResponse",
    "ChoiceOutcome",
    "ChunkWriter",
    "api_error_response",
    "completion_body",
    "dumps",
    "json_response",
]


def dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(value: object, status: int = 200) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json")


def api_error_response(error: ApiError) -> Response:
    return json_response(error.body(), error.status)


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


@dataclass
class ChoiceOutcome:
    """How one choice of a request ended: its text, its tokens and why it stopped."""

    text: str
    token_ids: list[int]
    finish_reason: str


def completion_body(
    response_id: str,
    extra: dict[str, object],
    request: GenerationRequest,
    outcomes: list[ChoiceOutcome],
    logprobs_for: Callable[[list[int]], list[dict[str, object]]],
) -> dict[str, object]:
    """A non-streamed reply; ``extra`` holds top-level fields a violation adds."""
    choices: list[dict[str, object]] = []
    for index, outcome in enumerate(outcomes):
        logprobs: object = None
        if request.logprobs:
            entries = logprobs_for(outcome.token_ids)
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
        "id": response_id,
        "object": "chat.completion" if request.chat else "text_completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": choices,
        "usage": usage(len(request.prompt_ids), completion_tokens),
        **extra,
    }


class ChunkWriter:
    """The server-sent events of one streamed request, all sharing its id and creation time;
    ``extra`` holds the top-level fields a violation adds to every content chunk."""

    def __init__(self, response_id: str, extra: dict[str, object], request: GenerationRequest) -> None:
        self._extra = extra
        self._request = request
        self._id = response_id
        self._created = int(time.time())
        self._object = "chat.completion.chunk" if request.chat else "text_completion"

    def _envelope(self, choices: list[dict[str, object]]) -> dict[str, object]:
        return {
            "id": self._id,
            "object": self._object,
            "created": self._created,
            "model": self._request.model,
            "choices": choices,
        }

    def role(self, index: int) -> bytes:
        """The opening chat event that names the assistant role."""
        choice = {"index": index, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                  "finish_reason": None}
        return _event(self._envelope([choice]))

    def chunk(self, index: int, text: str | None, finish: str | None, ids: list[int]) -> bytes:
        request = self._request
        choice: dict[str, object] = {"index": index}
        if request.chat:
            choice["delta"] = {} if text is None else {"content": text}
        else:
            choice["text"] = text or ""
        choice["logprobs"] = None
        choice["finish_reason"] = finish
        if request.return_token_ids:
            choice["token_ids"] = ids
        return _event({**self._envelope([choice]), **self._extra})

    def usage(self, completion_tokens: int) -> bytes:
        totals = usage(len(self._request.prompt_ids), completion_tokens)
        return _event({**self._envelope([]), "usage": totals})


def _event(value: object) -> bytes:
    return b"data: " + dumps(value) + b"\n\n"


DONE_EVENT = b"data: [DONE]\n\n"


class AbortConnection(Exception):
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
        except AbortConnection:
            return
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
