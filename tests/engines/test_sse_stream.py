"""Streamed completions are read as server-sent events by httpx-sse: every event whole, nothing
after ``[DONE]``, and a response that is not an event stream is refused."""

from __future__ import annotations

import httpx
import pytest
from httpx_sse import SSEError

from pytest_specgate.engines.client import OpenAIClient


def _client(body: bytes, content_type: str = "text/event-stream") -> OpenAIClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=body)

    return OpenAIClient("http://127.0.0.1:9", transport=httpx.MockTransport(answer))


def test_events_split_over_lines_comments_and_fields_are_read_whole() -> None:
    body = (b': keep-alive\n\n'
            b'event: message\nid: 1\ndata: {"choices": [{"delta": {"content": "Hel"},\n'
            b'data:  "finish_reason": null}]}\n\n'
            b'data: {"choices": [{"delta": {"content": "lo"}, "finish_reason": "stop"}]}\r\n\r\n'
            b'data: [DONE]\n\n'
            b'data: {"choices": [{"delta": {"content": " after done"}}]}\n\n')
    stream = _client(body).stream({"messages": []})
    assert list(stream) == ["Hel", "lo"]
    assert stream.finish_reason == "stop"


def test_a_response_that_is_not_an_event_stream_is_refused() -> None:
    stream = _client(b'{"choices": []}', content_type="application/json").stream({"messages": []})
    with pytest.raises(SSEError, match="text/event-stream"):
        list(stream)
