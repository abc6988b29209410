"""FR-1 compares a stream by what it delivers: event boundaries are the server's timing, not its build."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

SPEC028 = Path(__file__).resolve().parents[2] / "acceptance" / "spec028"


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SPEC028))
    return importlib.import_module("spec028_checks")


def _event(content: str, tokens: list[int], finish: str | None = None) -> dict[str, object]:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish, "token_ids": tokens}
    return {"object": "chat.completion.chunk", "model": "m", "choices": [choice]}


ONE_BY_ONE = [
    {"object": "chat.completion.chunk", "model": "m",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    _event(" s", [87]), _event("", [245]), _event("\ufffd@", [36]), _event("!", [9], "length"),
    {"object": "chat.completion.chunk", "model": "m", "choices": [],
     "system_fingerprint": "vllm-0.32.0-0281c2ee"},
]
COALESCED = [ONE_BY_ONE[0], _event(" s\ufffd@", [87, 245, 36]), _event("!", [9], "length"), ONE_BY_ONE[-1]]


def test_the_same_tokens_cut_into_other_events_deliver_the_same(checks: ModuleType) -> None:
    assert checks.stream_as_delivered(COALESCED) == checks.stream_as_delivered(ONE_BY_ONE) == {
        "fields": {"object": ["chat.completion.chunk"], "model": ["m"],
                   "system_fingerprint": ["vllm-0.32.0-0281c2ee"]},
        "choices": [{"text": [" s\ufffd@!"], "token_ids": [87, 245, 36, 9],
                     "role": ["assistant"], "finish_reason": ["length"]}],
    }


@pytest.mark.parametrize("changed", [
    [ONE_BY_ONE[0], _event(" s\ufffd@", [87, 245, 36]), _event("?", [9], "length"), ONE_BY_ONE[-1]],
    [ONE_BY_ONE[0], _event(" s\ufffd@", [87, 245, 37]), _event("!", [9], "length"), ONE_BY_ONE[-1]],
    [ONE_BY_ONE[0], _event(" s\ufffd@", [87, 245, 36]), _event("!", [9], "stop"), ONE_BY_ONE[-1]],
    [*COALESCED[:-1], {**ONE_BY_ONE[-1], "system_fingerprint": "vllm-0.32.0-4063cc49"}],
], ids=["text", "token", "finish_reason", "fingerprint"])
def test_a_changed_text_token_finish_or_field_still_differs(
    checks: ModuleType, changed: list[object]
) -> None:
    assert checks.stream_as_delivered(changed) != checks.stream_as_delivered(ONE_BY_ONE)


def test_a_choice_with_a_non_integer_index_is_an_error_naming_the_event(checks: ModuleType) -> None:
    event = {"choices": [{"delta": {"content": "x"}, "index": "0"}]}
    with pytest.raises(AssertionError, match=r"a stream event's choice has no integer index: "):
        checks.stream_as_delivered([event])
