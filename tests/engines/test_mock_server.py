"""The mock as an OpenAI-compatible server, driven by the real `openai` package and by httpx."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from engines_testkit import GREEDY, BootMock, oai_user, user

from pytest_specgate.engines.mock import MockEngine


@pytest.fixture
def oai(spec_engine: MockEngine) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{spec_engine.base_url}/v1", api_key="unused", max_retries=0)


def test_openai_client_non_streamed_chat(oai: openai.OpenAI, spec_engine: MockEngine) -> None:
    answer = oai.chat.completions.create(
        model=spec_engine.model_id,
        messages=oai_user("hello"),
        temperature=0,
        max_tokens=12,
    )
    assert answer.object == "chat.completion"
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].finish_reason in {"length", "stop"}
    assert answer.usage is not None and answer.usage.completion_tokens <= 12
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert answer.choices[0].message.content == spec_engine.chat(user("hello"), max_tokens=12, **GREEDY).text


def test_openai_client_streamed_chat_matches_non_streamed(
    oai: openai.OpenAI, spec_engine: MockEngine
) -> None:
    stream = oai.chat.completions.create(
        model=spec_engine.model_id,
        messages=oai_user("stream me"),
        temperature=0,
        max_tokens=20,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    usage = chunks[-1].usage
    whole = spec_engine.chat(user("stream me"), max_tokens=20, **GREEDY)
    assert text == whole.text
    assert finish == [whole.finish_reason]
    assert usage is not None and usage.completion_tokens == whole.completion_tokens


def test_sse_stream_ends_with_done(spec_engine: MockEngine) -> None:
    body = {"model": spec_engine.model_id, "messages": user("sse"), "stream": True, "max_tokens": 5, **GREEDY}
    with httpx.stream("POST", f"{spec_engine.base_url}/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        data_lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert data_lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in data_lines[:-1]]
    assert {e["object"] for e in events} == {"chat.completion.chunk"}
    assert len({e["id"] for e in events}) == 1


def test_engine_stream_exposes_timings_and_totals(spec_engine: MockEngine) -> None:
    result = spec_engine.stream(user("timings"), max_tokens=16, **GREEDY)
    deltas = list(result)
    assert "".join(deltas) == result.text and deltas
    assert result.ttft_s is not None and result.ttft_s >= 0
    assert len(result.inter_token_s) == len(deltas) - 1
    assert result.completion_tokens == len(result.token_ids or ())
    assert result.raw_events[-1]["usage"] == {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": (result.prompt_tokens or 0) + (result.completion_tokens or 0),
    }


def test_completions_endpoint_streamed_and_not(oai: openai.OpenAI, spec_engine: MockEngine) -> None:
    plain = oai.completions.create(
        model=spec_engine.model_id, prompt="once upon", max_tokens=10, temperature=0
    )
    streamed = oai.completions.create(
        model=spec_engine.model_id, prompt="once upon", max_tokens=10, temperature=0, stream=True
    )
    assert plain.object == "text_completion"
    assert "".join(c.choices[0].text for c in streamed if c.choices) == plain.choices[0].text
    assert spec_engine.complete("once upon", max_tokens=10, **GREEDY).text == plain.choices[0].text


def test_models_and_health(oai: openai.OpenAI, spec_engine: MockEngine) -> None:
    assert [m.id for m in oai.models.list()] == [spec_engine.model_id]
    assert httpx.get(f"{spec_engine.base_url}/health").json() == {"status": "ok"}


def test_max_tokens_is_honoured(spec_engine: MockEngine) -> None:
    for limit in (1, 3, 9):
        result = spec_engine.chat(user("limits"), max_tokens=limit, **GREEDY)
        assert result.completion_tokens is not None and result.completion_tokens <= limit
    long = spec_engine.chat(user("limits"), max_tokens=9, **GREEDY)
    if long.finish_reason == "length":
        assert long.completion_tokens == 9


def test_eos_gives_finish_reason_stop(boot_mock: BootMock) -> None:
    engine = boot_mock(eos_one_in=2)
    result = engine.chat(user("ends soon"), max_tokens=200, **GREEDY)
    assert result.finish_reason == "stop"
    assert result.completion_tokens is not None and result.completion_tokens < 200


def test_stop_strings_truncate_identically_streamed_and_not(spec_engine: MockEngine) -> None:
    reference = spec_engine.chat(user("stop here"), max_tokens=30, **GREEDY).text
    words = reference.split()
    stop_word = words[len(words) // 2]
    cut = reference[: reference.index(f" {stop_word}")]
    whole = spec_engine.chat(user("stop here"), max_tokens=30, stop=[f" {stop_word}"], **GREEDY)
    streamed = spec_engine.stream(user("stop here"), max_tokens=30, stop=[f" {stop_word}"], **GREEDY)
    assert whole.text == cut and whole.finish_reason == "stop"
    assert streamed.text == cut and streamed.finish_reason == "stop"


def test_temperature_sampling_is_seeded(spec_engine: MockEngine) -> None:
    first = spec_engine.chat(user("sample"), temperature=0.8, seed=5, max_tokens=30).text
    assert first == spec_engine.chat(user("sample"), temperature=0.8, seed=5, max_tokens=30).text
    assert first != spec_engine.chat(user("sample"), temperature=0.8, seed=6, max_tokens=30).text
