"""The EOS gate: stop at EOS with finish_reason 'stop' on every path, all paths agreeing."""

from __future__ import annotations

import pytest
from fake_engine import FakeEngine

from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.qualification import EosNotRespected, EosPath, eos_gate

EOS_PROMPT: list[dict[str, object]] = [{"role": "user", "content": "Say OK."}]
"""Greedy decoding of the mock's target reaches EOS after 12 tokens for this prompt."""


def test_mock_stops_at_eos_on_every_path(mock_engine: MockEngine, baseline_mock_engine: MockEngine) -> None:
    evidence = eos_gate(
        [
            EosPath("speculative", mock_engine, speculative=True),
            EosPath("baseline", baseline_mock_engine),
            EosPath("gated-baseline", mock_engine, {"logprobs": True}),
        ],
        EOS_PROMPT,
    )
    paths = evidence["paths"]
    assert isinstance(paths, dict)
    assert sorted(paths) == sorted(
        f"{name}/{mode}"
        for name in ("speculative", "baseline", "gated-baseline")
        for mode in ("non-streamed", "streamed")
    )
    assert {(run["finish_reason"], run["completion_tokens"]) for run in paths.values()} == {("stop", 12)}


def test_speculative_path_diverging_from_baseline_fails(
    mock_engine: MockEngine, baseline_mock_engine: MockEngine
) -> None:
    mock_engine.set_violations("corrupt-spec")
    with pytest.raises(EosNotRespected, match="output differs from") as failed:
        eos_gate([EosPath("baseline", baseline_mock_engine), EosPath("speculative", mock_engine)], EOS_PROMPT)
    assert failed.value.evidence["stopped_at_eos"] is False


def test_a_prompt_that_runs_to_max_tokens_fails(mock_engine: MockEngine) -> None:
    expected = r"finish_reason 'length', expected 'stop'.*ran to max_tokens=4"
    with pytest.raises(EosNotRespected, match=expected):
        eos_gate([EosPath("speculative", mock_engine)], EOS_PROMPT, max_tokens=4)


def test_a_streamed_path_reporting_the_wrong_finish_reason_fails() -> None:
    engine = FakeEngine(stream_finish_reason="length")
    with pytest.raises(EosNotRespected, match=r"^eos: fake/streamed: finish_reason 'length'"):
        eos_gate([EosPath("fake", engine)], EOS_PROMPT)


def test_a_speculative_path_that_never_drafts_fails(baseline_mock_engine: MockEngine) -> None:
    with pytest.raises(EosNotRespected, match="declared speculative but its draft counter did not advance"):
        eos_gate([EosPath("speculative", baseline_mock_engine, speculative=True)], EOS_PROMPT)


def test_a_failing_request_is_reported_per_path() -> None:
    engine = FakeEngine(dead=True)
    with pytest.raises(EosNotRespected, match="fake/non-streamed: request failed: ConnectionError"):
        eos_gate([EosPath("fake", engine)], EOS_PROMPT)
