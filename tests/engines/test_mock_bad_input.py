"""Bad input gets an OpenAI-style 4xx JSON error, never a 500 or a hang."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from engines_testkit import oai_user, user

from pytest_specgate.engines.mock import MockEngine

CHAT = "/v1/chat/completions"
OK_MESSAGES = user("hi")
CASES: list[tuple[str, str, bytes | dict[str, object], int, str | None]] = [
    ("malformed json", CHAT, b'{"messages": [', 400, None),
    ("body not an object", CHAT, b"[1, 2]", 400, None),
    ("missing messages", CHAT, {"model": "specgate-mock-target"}, 400, "messages"),
    ("empty messages", CHAT, {"messages": []}, 400, "messages"),
    ("message without role", CHAT, {"messages": [{"content": "x"}]}, 400, "messages"),
    ("unknown model", CHAT, {"model": "gpt-17", "messages": OK_MESSAGES}, 404, "model"),
    ("negative max_tokens", CHAT, {"messages": OK_MESSAGES, "max_tokens": -5}, 400, "max_tokens"),
    ("zero max_tokens", CHAT, {"messages": OK_MESSAGES, "max_tokens": 0}, 400, "max_tokens"),
    ("string max_tokens", CHAT, {"messages": OK_MESSAGES, "max_tokens": "ten"}, 400, "max_tokens"),
    ("context overflow", CHAT, {"messages": OK_MESSAGES, "max_tokens": 10**6}, 400, "max_tokens"),
    ("negative temperature", CHAT, {"messages": OK_MESSAGES, "temperature": -1}, 400, "temperature"),
    ("n zero", CHAT, {"messages": OK_MESSAGES, "n": 0}, 400, "n"),
    ("stop not strings", CHAT, {"messages": OK_MESSAGES, "stop": [1]}, 400, "stop"),
    ("stream not bool", CHAT, {"messages": OK_MESSAGES, "stream": "yes"}, 400, "stream"),
    ("bad logit_bias", CHAT, {"messages": OK_MESSAGES, "logit_bias": {"x": 1}}, 400, "logit_bias"),
    ("missing prompt", "/v1/completions", {"max_tokens": 3}, 400, "prompt"),
    ("prompt wrong type", "/v1/completions", {"prompt": {"a": 1}}, 400, "prompt"),
]


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as client:
        yield client


@pytest.mark.parametrize(
    ("path", "body", "status", "param"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_request_is_an_openai_style_4xx(
    http: httpx.Client,
    spec_engine: MockEngine,
    path: str,
    body: bytes | dict[str, object],
    status: int,
    param: str | None,
) -> None:
    url = f"{spec_engine.base_url}{path}"
    if isinstance(body, bytes):
        response = http.post(url, content=body, headers={"content-type": "application/json"})
    else:
        response = http.post(url, json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["message"]
    assert error["param"] == param


def test_unknown_route_and_wrong_method_are_json_errors(spec_engine: MockEngine) -> None:
    missing = httpx.get(f"{spec_engine.base_url}/v1/nothing-here")
    wrong = httpx.get(f"{spec_engine.base_url}{CHAT}")
    assert (missing.status_code, wrong.status_code) == (404, 405)
    assert missing.json()["error"]["type"] == wrong.json()["error"]["type"] == "invalid_request_error"


def test_openai_client_sees_typed_errors(spec_engine: MockEngine) -> None:
    client = openai.OpenAI(base_url=f"{spec_engine.base_url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="gpt-17"):
        client.chat.completions.create(model="gpt-17", messages=oai_user("hi"))
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.chat.completions.create(model=spec_engine.model_id, messages=oai_user("hi"), max_tokens=-1)


def test_server_still_serves_after_bad_input(http: httpx.Client, spec_engine: MockEngine) -> None:
    for _, path, body, _, _ in CASES:
        if isinstance(body, dict):
            assert http.post(f"{spec_engine.base_url}{path}", json=body).status_code in {400, 404}
    assert spec_engine.chat(OK_MESSAGES, max_tokens=3, temperature=0).completion_tokens
    slots = spec_engine.status()["slots"]
    assert isinstance(slots, dict) and slots["active"] == 0


def test_bad_admin_requests_are_4xx(http: httpx.Client, spec_engine: MockEngine) -> None:
    base = spec_engine.base_url
    assert http.post(f"{base}/admin/faults", json={"kind": "meteor"}).status_code == 400
    assert http.post(f"{base}/admin/faults", json={"kind": "stall", "count": 0}).status_code == 400
    assert http.put(f"{base}/admin/violations", json={"violations": ["nope"]}).status_code == 400
    assert http.post(f"{base}/admin/swap", json={}).status_code == 400
    assert http.post(f"{base}/admin/swap", json={"target": "x", "vocab": "nope"}).status_code == 400
    assert spec_engine.status()["model"] == "specgate-mock-target"
