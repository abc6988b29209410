"""Greedy speculative output is identical to baseline; corrupt-spec breaks it; the greedy gate."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engines_testkit import GREEDY, BootMock, mock_config, user

from pytest_specgate.engines.mock import MockEngine, boot

PROMPTS = ("explain speculative decoding", "hello", "the quick brown fox jumps", "a b c")
GATED_REQUESTS: dict[str, dict[str, object]] = {
    "logprobs": {"logprobs": True, "top_logprobs": 0},
    "n": {"n": 2},
    "logit_bias": {"logit_bias": {"3": 5}},
    "tools": {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
    "response_format": {"response_format": {"type": "json_object"}},
}


def first_difference(left: tuple[int, ...], right: tuple[int, ...]) -> int | None:
    for position, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return position
    return None if len(left) == len(right) else min(len(left), len(right))


def test_greedy_speculative_chat_is_identical_to_baseline(
    spec_engine: MockEngine, baseline_engine: MockEngine
) -> None:
    for prompt in PROMPTS:
        spec = spec_engine.chat(user(prompt), max_tokens=48, **GREEDY)
        base = baseline_engine.chat(user(prompt), max_tokens=48, **GREEDY)
        assert spec.token_ids is not None and spec.token_ids == base.token_ids
        assert spec.text == base.text and spec.finish_reason == base.finish_reason


def test_greedy_speculative_stream_is_identical_to_baseline(
    spec_engine: MockEngine, baseline_engine: MockEngine
) -> None:
    for prompt in PROMPTS:
        spec = spec_engine.stream(user(prompt), max_tokens=48, **GREEDY)
        base = baseline_engine.stream(user(prompt), max_tokens=48, **GREEDY)
        assert spec.text == base.text and spec.token_ids == base.token_ids


def test_speculation_really_ran(spec_engine: MockEngine) -> None:
    spec_engine.roll()
    spec_engine.chat(user(PROMPTS[0]), max_tokens=48, **GREEDY)
    telemetry = spec_engine.telemetry()
    assert telemetry.drafted and telemetry.accepted is not None and 0 < telemetry.accepted < telemetry.drafted


def test_corrupt_spec_is_detected_by_the_identity_check(
    boot_mock: BootMock, baseline_engine: MockEngine
) -> None:
    corrupt = boot_mock(alpha=0.7, faults=("corrupt-spec",))
    differences = [
        first_difference(
            corrupt.chat(user(p), max_tokens=48, **GREEDY).token_ids or (),
            baseline_engine.chat(user(p), max_tokens=48, **GREEDY).token_ids or (),
        )
        for p in PROMPTS
    ]
    assert all(position is not None for position in differences)


def test_corrupt_spec_can_be_switched_at_runtime(boot_mock: BootMock, baseline_engine: MockEngine) -> None:
    engine = boot_mock(alpha=0.7)
    reference = baseline_engine.chat(user(PROMPTS[0]), max_tokens=48, **GREEDY).token_ids
    assert engine.chat(user(PROMPTS[0]), max_tokens=48, **GREEDY).token_ids == reference
    engine.set_violations("corrupt-spec")
    assert engine.chat(user(PROMPTS[0]), max_tokens=48, **GREEDY).token_ids != reference
    engine.set_violations()
    assert engine.chat(user(PROMPTS[0]), max_tokens=48, **GREEDY).token_ids == reference


@pytest.fixture(scope="module")
def gate_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockEngine]:
    with boot(mock_config(alpha=0.7), tmp_path_factory.mktemp("gate")) as engine:
        yield engine


def _window(engine: MockEngine) -> dict[str, object]:
    window = engine.status()["window"]
    assert isinstance(window, dict)
    return window


@pytest.mark.parametrize("feature", sorted(GATED_REQUESTS))
def test_gated_feature_takes_baseline_and_is_not_counted(gate_engine: MockEngine, feature: str) -> None:
    gate_engine.roll()
    gated = gate_engine.chat(user("gate me"), max_tokens=24, **GREEDY, **GATED_REQUESTS[feature])
    window = _window(gate_engine)
    assert (window["drafted"], window["accepted"], window["speculative_requests"]) == (0, 0, 0)
    assert window["gated_by_reason"] == {feature: 1}
    assert window["requests"] == 1 and window["completion_tokens"] == gated.completion_tokens
    gate_engine.chat(user("gate me"), max_tokens=24, **GREEDY)
    assert int(str(_window(gate_engine)["drafted"])) > 0


def test_stochastic_request_takes_baseline_and_is_not_counted(gate_engine: MockEngine) -> None:
    gate_engine.roll()
    gate_engine.chat(user("sampled"), temperature=0.7, max_tokens=24)
    window = _window(gate_engine)
    assert window["drafted"] == 0 and window["gated_by_reason"] == {"temperature": 1}


def test_gated_answers_are_still_correct(gate_engine: MockEngine, baseline_engine: MockEngine) -> None:
    with_logprobs = gate_engine.chat(user("lp"), max_tokens=8, logprobs=True, **GREEDY)
    content = with_logprobs.raw["choices"][0]["logprobs"]["content"]  # type: ignore[index]
    assert len(content) == with_logprobs.completion_tokens
    assert all(entry["logprob"] < 0 for entry in content)
    assert with_logprobs.text == baseline_engine.chat(user("lp"), max_tokens=8, **GREEDY).text
    two = gate_engine.chat(user("n"), max_tokens=8, n=2, **GREEDY)
    assert len(two.raw["choices"]) == 2  # type: ignore[arg-type]


def test_gated_feature_list_is_configurable(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.7, gated_features=("tools",))
    engine.chat(user("gate me"), max_tokens=24, logprobs=True, **GREEDY)
    assert int(str(_window(engine)["drafted"])) > 0
    engine.roll()
    engine.chat(user("gate me"), max_tokens=24, **GREEDY, **GATED_REQUESTS["tools"])
    assert _window(engine)["drafted"] == 0


def test_gate_disabled_violation_speculates_on_gated_requests(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.7, faults=("gate-disabled",))
    engine.chat(user("gate me"), max_tokens=24, **GREEDY, **GATED_REQUESTS["logprobs"])
    window = _window(engine)
    assert int(str(window["drafted"])) > 0 and window["speculative_requests"] == 1


def test_no_draft_means_nothing_is_counted(baseline_engine: MockEngine) -> None:
    baseline_engine.chat(user("plain"), max_tokens=24, **GREEDY)
    telemetry = baseline_engine.telemetry()
    assert telemetry.enabled is False and telemetry.drafted == 0 and telemetry.acceptance_rate is None
