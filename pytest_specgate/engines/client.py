"""The one OpenAI-compatible client every backend uses, and the Engine built on it.

Backends only decide how a server boots and where telemetry comes from; chat,
streaming, timing and error handling live here once, so a spec measures every
engine the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Self

import httpx

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import (
    ChatResult,
    StreamResult,
    Telemetry,
    acceptance_rate_of,
    first_choice,
    token_ids_of,
)
from pytest_specgate.contracts.validation import is_real, is_whole
from pytest_specgate.contracts.wire import StatusKey

__all__ = [
    "ClientEngine",
    "EngineHTTPError",
    "EngineResponseError",
    "OpenAIClient",
    "chat_result_from",
    "telemetry_from_status",
]

DEFAULT_TIMEOUT_S = 120.0


class EngineHTTPError(Exception):
    """A 4xx/5xx answer from an engine, keeping the status and the decoded error body."""

    def __init__(self, method: str, url: str, status_code: int, body: object) -> None:
        message = body
        if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
            message = body["error"].get("message", body)
        super().__init__(f"{method} {url} -> HTTP {status_code}: {message}")
        self.status_code = status_code
        self.body = body


FIRST_BYTES_SHOWN = 120


class EngineResponseError(ValueError):
    """An answer that is not the JSON the OpenAI protocol promises: names the backend, the URL and
    the answer's first bytes, so a broken server is told from a broken spec."""

    def __init__(self, backend: str, method: str, url: str, content: bytes, problem: str) -> None:
        shown = content[:FIRST_BYTES_SHOWN]
        more = f" (of {len(content)} bytes)" if len(content) > FIRST_BYTES_SHOWN else ""
        super().__init__(f"{backend} engine: {method} {url} answered malformed JSON ({problem}); "
                         f"first bytes{more}: {shown!r}")
        self.backend = backend
        self.url = url


def _decoded(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return response.text


def _int_or_none(value: object) -> int | None:
    return value if is_whole(value) else None


def chat_result_from(body: Mapping[str, object], wall_s: float) -> ChatResult:
    """A ChatResult from a chat or completions JSON body."""
    choice = first_choice(body) or {}
    message = choice.get("message")
    text: object = message.get("content") if isinstance(message, Mapping) else choice.get("text")
    ids = token_ids_of(choice)
    usage = body.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    reason = choice.get("finish_reason")
    return ChatResult(
        text=text if isinstance(text, str) else "",
        token_ids=None if ids is None else tuple(ids),
        finish_reason=reason if isinstance(reason, str) else None,
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        raw=dict(body),
        wall_s=wall_s,
    )


def _sse_events(response: httpx.Response, backend: str) -> Iterator[dict[str, object]]:
    """JSON payloads of a stream's server-sent events up to ``[DONE]``.

    httpx-sse splits the events (multi-line ``data:``, comments, ``event:`` and ``id:``
    fields) and refuses a response that is not ``text/event-stream``.
    """
    from httpx_sse import EventSource

    for event in EventSource(response).iter_sse():
        if event.data == "[DONE]":
            return
        if not event.data:
            continue
        try:
            payload = json.loads(event.data)
        except ValueError as error:
            raise EngineResponseError(backend, "POST (stream event)", str(response.url),
                                      event.data.encode(), str(error)) from None
        if isinstance(payload, dict):
            yield payload


class OpenAIClient:
    """httpx over an OpenAI-compatible base URL (``http://host:port``, no ``/v1``)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        backend: str = "OpenAI-compatible",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.backend = backend
        # The last ``system_fingerprint`` a chat answer carried: part of the server's identity.
        self.system_fingerprint: str | None = None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout_s),
            headers=headers,
            transport=transport,
        )

    def _check(self, method: str, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            raise EngineHTTPError(method, str(response.url), response.status_code, _decoded(response))
        return response

    def _json(self, method: str, response: httpx.Response) -> object:
        """The checked response's JSON; a malformed answer is an :class:`EngineResponseError`."""
        self._check(method, response)
        try:
            return response.json()
        except ValueError as error:
            raise EngineResponseError(self.backend, method, str(response.url), response.content,
                                      str(error)) from None

    def get_json(self, path: str, *, timeout_s: float | None = None) -> dict[str, object]:
        return self.get_json_with_headers(path, timeout_s=timeout_s)[0]

    def get_json_with_headers(
        self, path: str, *, timeout_s: float | None = None
    ) -> tuple[dict[str, object], Mapping[str, str]]:
        """The JSON body and the response headers (what a server says about itself)."""
        response = self._http.get(path, timeout=self._timeout(timeout_s))
        body = self._json("GET", response)
        return (body if isinstance(body, dict) else {"value": body}), response.headers

    def get_text(self, path: str, *, timeout_s: float | None = None) -> str:
        return self._check("GET", self._http.get(path, timeout=self._timeout(timeout_s))).text

    def post_json(
        self,
        path: str,
        body: Mapping[str, object] | None = None,
        *,
        method: str = "POST",
        timeout_s: float | None = None,
    ) -> dict[str, object]:
        response = self._http.request(
            method, path, json=dict(body) if body is not None else None, timeout=self._timeout(timeout_s)
        )
        decoded = self._json(method, response)
        return decoded if isinstance(decoded, dict) else {"value": decoded}

    def _timeout(self, timeout_s: float | None) -> httpx.Timeout:
        return httpx.Timeout(self.timeout_s if timeout_s is None else timeout_s)

    def chat(
        self,
        body: Mapping[str, object],
        *,
        path: str = "/v1/chat/completions",
        timeout_s: float | None = None,
    ) -> ChatResult:
        started = time.perf_counter()
        response = self._http.post(path, json=dict(body), timeout=self._timeout(timeout_s))
        decoded = self._json("POST", response)
        wall_s = time.perf_counter() - started
        body = decoded if isinstance(decoded, dict) else {}
        fingerprint = body.get("system_fingerprint")
        if isinstance(fingerprint, str):
            self.system_fingerprint = fingerprint
        return chat_result_from(body, wall_s)

    def stream(
        self,
        body: Mapping[str, object],
        *,
        path: str = "/v1/chat/completions",
        timeout_s: float | None = None,
    ) -> StreamResult:
        """Open an SSE stream; the returned StreamResult reads it lazily."""
        payload = dict(body)
        payload["stream"] = True
        payload.setdefault("stream_options", {"include_usage": True})
        started = time.perf_counter()
        request = self._http.build_request("POST", path, json=payload, timeout=self._timeout(timeout_s))
        response = self._http.send(request, stream=True)
        if response.status_code >= 400:
            response.read()
            response.close()
            self._check("POST", response)
        return StreamResult(_sse_events(response, self.backend), started=started, on_close=response.close)

    def close(self) -> None:
        self._http.close()


def telemetry_from_status(status: Mapping[str, object], *, source: str = "/v1/status") -> Telemetry:
    """Normalize a ``/v1/status`` body with ``spec_decode_*`` fields.

    A body without those fields yields ``available=False`` (never invented zeros).
    """
    if StatusKey.SPEC_DECODE_ENABLED not in status:
        return Telemetry.unavailable(enabled=False)
    drafted = _int_or_none(status.get(StatusKey.SPEC_DECODE_DRAFTED_SINCE_LAST))
    accepted = _int_or_none(status.get(StatusKey.SPEC_DECODE_ACCEPTED_SINCE_LAST))
    draft_id = status.get(StatusKey.SPEC_DECODE_DRAFT_MODEL_ID)
    gamma = _int_or_none(status.get(StatusKey.SPEC_DECODE_NUM_DRAFT_TOKENS))
    positions = status.get(StatusKey.SPEC_DECODE_ACCEPTED_PER_POSITION_SINCE_LAST)
    per_position = (
        tuple(positions)
        if isinstance(positions, list) and all(type(count) is int for count in positions)
        else None
    )
    return Telemetry(
        available=drafted is not None and accepted is not None,
        enabled=bool(status.get(StatusKey.SPEC_DECODE_ENABLED)),
        draft_model_id=draft_id if isinstance(draft_id, str) else None,
        num_draft_tokens=gamma,
        drafted=drafted,
        accepted=accepted,
        acceptance_rate=acceptance_rate_of(drafted, accepted),
        window="since_last_roll",
        source=source,
        drafts=_int_or_none(status.get(StatusKey.SPEC_DECODE_DRAFTS_SINCE_LAST)),
        accepted_per_position=per_position,
    )


class ClientEngine:
    """An Engine: the shared client plus a backend's telemetry and close callables.

    ``default_params`` are merged under each request's params (request wins), so a
    backend can ask for e.g. ``return_token_ids`` once. ``timeout_s`` in params
    sets a per-request timeout and is not sent to the server.
    """

    def __init__(
        self,
        *,
        backend: str,
        client: OpenAIClient,
        model_id: str,
        telemetry: Callable[[], Telemetry],
        close: Callable[[], object] | None = None,
        versions: Callable[[], dict[str, str]] | None = None,
        default_params: Mapping[str, object] | None = None,
    ) -> None:
        self.backend = backend
        self.client = client
        # The client names the backend in its errors (a malformed answer).
        client.backend = backend
        self.base_url = client.base_url
        self.model_id = model_id
        self._telemetry = telemetry
        self._close = close
        self._versions = versions
        self.default_params: dict[str, object] = dict(default_params or {})
        self._closed = False

    def _body(self, params: Mapping[str, object], **fields: object) -> tuple[dict[str, object], float | None]:
        body = {"model": self.model_id, **self.default_params, **params, **fields}
        timeout = body.pop("timeout_s", None)
        if timeout is not None and (not is_real(timeout)):
            raise TypeError(f"timeout_s must be a number of seconds, got {timeout!r}")
        return body, None if timeout is None else float(timeout)

    def chat(self, messages: list[dict[str, object]], **params: object) -> ChatResult:
        body, timeout_s = self._body(params, messages=messages)
        return self.client.chat(body, timeout_s=timeout_s)

    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamResult:
        body, timeout_s = self._body(params, messages=messages)
        return self.client.stream(body, timeout_s=timeout_s)

    def complete(self, prompt: str, **params: object) -> ChatResult:
        """Legacy ``/v1/completions`` (not part of the Engine protocol)."""
        body, timeout_s = self._body(params, prompt=prompt)
        return self.client.chat(body, path="/v1/completions", timeout_s=timeout_s)

    def complete_stream(self, prompt: str, **params: object) -> StreamResult:
        """Streamed legacy ``/v1/completions``."""
        body, timeout_s = self._body(params, prompt=prompt)
        return self.client.stream(body, path="/v1/completions", timeout_s=timeout_s)

    def telemetry(self) -> Telemetry:
        return self._telemetry()

    def capabilities(self) -> Capabilities:
        """A plain HTTP engine can only serve; backends with more say so by overriding this."""
        return Capabilities()

    def versions(self) -> dict[str, str]:
        found = {"backend": self.backend, "model": self.model_id}
        if self._versions is not None:
            found.update(self._versions())
        return found

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.client.close()
        finally:
            if self._close is not None:
                self._close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
