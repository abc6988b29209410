"""The capability smoke floor: always chat and streaming, the rest only when declared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_engine import FakeEngine

from pytest_specgate.engines.mock import MockEngine, MockSettings, boot_settings
from pytest_specgate.evidence import EvidenceRecorder, Redactor
from pytest_specgate.smoke import ALWAYS, CAPABILITIES, DECLARABLE, declared_capabilities, smoke

EVERYTHING = {"capabilities": list(DECLARABLE), "context_tokens": 2048}


@pytest.fixture(scope="module")
def mock_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockEngine]:
    engine = boot_settings(MockSettings(draft="specgate-mock-draft"), tmp_path_factory.mktemp("mock"))
    try:
        yield engine
    finally:
        engine.close()


def test_model_declaring_no_tools_records_tool_call_unsmoked_and_partial(mock_engine: MockEngine) -> None:
    result = smoke(mock_engine, {"capabilities": []})
    document = result.to_dict()
    assert document["capabilities"] == {
        "chat": "passed",
        "streaming": "passed",
        "tool-call": "unsmoked",
        "structured-output": "unsmoked",
        "reasoning-streaming": "unsmoked",
        "vision": "unsmoked",
        "long-context": "unsmoked",
    }
    assert document["partial"] is True
    assert result.status_of("tool-call") == "unsmoked"
    assert "tool-call: unsmoked" in result.summary() and result.summary().endswith("partial: true")


def test_a_config_without_capabilities_key_smokes_only_the_floor(mock_engine: MockEngine) -> None:
    result = smoke(mock_engine, {})
    assert [r.name for r in result.results if r.status != "unsmoked"] == list(ALWAYS)
    assert not result.failed


def test_mock_long_context_is_smoked_when_declared(mock_engine: MockEngine) -> None:
    result = smoke(mock_engine, {"capabilities": ["long-context"], "context_tokens": 2000})
    assert result.status_of("long-context") == "passed"
    assert result.partial


def test_mock_declared_tool_calls_fail_because_the_mock_answers_with_text(mock_engine: MockEngine) -> None:
    result = smoke(mock_engine, {"capabilities": ["tool-call"]})
    assert result.status_of("tool-call") == "failed"
    assert "no tool_calls" in result.failed[0].detail


def test_every_declared_capability_is_smoked_and_the_result_is_complete() -> None:
    engine = FakeEngine()
    result = smoke(engine, EVERYTHING)
    assert {r.name: r.status for r in result.results} == dict.fromkeys(CAPABILITIES, "passed")
    assert result.partial is False
    tool_request = next(r for r in engine.requests if "tools" in r)
    assert tool_request["tool_choice"] == "required"
    vision_request = next(r for r in engine.requests if isinstance(r["messages"][0]["content"], list))  # type: ignore[index]
    image = vision_request["messages"][0]["content"][1]  # type: ignore[index]
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


@pytest.mark.parametrize(
    ("broken", "detail"),
    [
        ("tool-call", "no tool_calls in the answer"),
        ("structured-output", "does not match the schema: 'age' is a required property"),
        ("reasoning-streaming", "no reasoning_content/reasoning deltas"),
        ("vision", "empty answer to an image prompt"),
        ("long-context", "the prompt was cut"),
        ("streaming", "the stream carried no text deltas"),
    ],
)
def test_a_declared_capability_that_does_not_work_fails_with_the_reason(broken: str, detail: str) -> None:
    result = smoke(FakeEngine(broken=frozenset({broken})), EVERYTHING)
    assert [r.name for r in result.failed] == [broken]
    assert detail in result.failed[0].detail


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"capabilities": "tool-call"}, "must be a list of names"),
        ({"capabilities": ["telepathy"]}, "unknown capabilities \\['telepathy'\\]"),
        ({"capabilities": ["long-context"]}, "'context_tokens' is not a token count"),
    ],
)
def test_bad_declarations_are_errors(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        declared_capabilities(config)


def test_the_result_goes_into_the_evidence_recorder(tmp_path: Path) -> None:
    recorder = EvidenceRecorder("tests/test_x.py::test_smoke", Redactor(rules=()), tmp_path)
    result = smoke(FakeEngine(), {"capabilities": ["vision"]}, evidence=recorder)
    notes = recorder.to_properties()["notes"]
    assert notes["smoke"] == result.to_dict()
    assert notes["smoke"]["capabilities"]["tool-call"] == "unsmoked"
    assert notes["smoke"]["partial"] is True
