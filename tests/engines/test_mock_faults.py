"""Fault injection: each mode, one-shot or N requests, and slots freed by cancelled clients."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest
from engines_testkit import GREEDY, BootMock, mock_config, oai_user, user, wait_until

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.client import EngineHTTPError
from pytest_specgate.engines.mock import MockEngine, boot
from pytest_specgate.engines.mock.app import CRASH_EXIT_CODE


def slots(engine: MockEngine) -> dict[str, int]:
    found = engine.status()["slots"]
    assert isinstance(found, dict)
    return {str(k): int(v) for k, v in found.items()}


def faults(engine: MockEngine) -> dict[str, object]:
    found = engine.status()["faults"]
    assert isinstance(found, dict)
    return found


def test_reset_drops_a_stream_mid_way_then_serves_again(boot_mock: BootMock) -> None:
    engine = boot_mock(eos_one_in=0)
    engine.inject_fault("reset", after_chunks=3)
    received: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError):
        received.extend(engine.stream(user("reset me"), max_tokens=30, **GREEDY))
    assert len(received) == 3
    assert engine.stream(user("reset me"), max_tokens=30, **GREEDY).completion_tokens == 30
    assert wait_until(lambda: slots(engine)["active"] == 0)


def test_reset_of_a_non_streamed_reply_is_a_connection_error(boot_mock: BootMock) -> None:
    engine = boot_mock()
    engine.inject_fault("reset", count=2)
    client = openai.OpenAI(base_url=f"{engine.base_url}/v1", api_key="unused", max_retries=0)
    for _ in range(2):
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model=engine.model_id, messages=oai_user("x"), temperature=0)
    assert client.chat.completions.create(
        model=engine.model_id, messages=oai_user("x"), temperature=0
    ).choices
    assert faults(engine)["fired"] == {"reset": 2}


def test_stall_outlasts_the_client_timeout_and_frees_the_slot(boot_mock: BootMock) -> None:
    engine = boot_mock()
    engine.inject_fault("stall", seconds=20)
    with pytest.raises(httpx.ReadTimeout):
        engine.chat(user("stall"), max_tokens=8, timeout_s=0.3, **GREEDY)
    assert wait_until(lambda: slots(engine)["active"] == 0)
    assert slots(engine)["cancelled_total"] == 1
    assert engine.chat(user("after"), max_tokens=8, **GREEDY).completion_tokens


def test_stall_mid_stream_times_out_between_chunks(boot_mock: BootMock) -> None:
    engine = boot_mock(eos_one_in=0)
    engine.inject_fault("stall", seconds=20)
    received: list[str] = []
    with pytest.raises(httpx.ReadTimeout):
        received.extend(engine.stream(user("stall"), max_tokens=8, timeout_s=1.5, **GREEDY))
    assert len(received) == 1
    assert wait_until(lambda: slots(engine) == {**slots(engine), "active": 0, "cancelled_total": 1})


def test_late_reply_arrives_after_the_client_gave_up(boot_mock: BootMock) -> None:
    engine = boot_mock()
    engine.inject_fault("late-reply", seconds=1.0)
    with pytest.raises(httpx.ReadTimeout):
        engine.chat(user("late"), max_tokens=8, timeout_s=0.2, **GREEDY)
    assert wait_until(lambda: faults(engine)["late_replies"] == 1)
    assert faults(engine)["late_replies_after_disconnect"] == 1
    assert wait_until(lambda: slots(engine)["active"] == 0)
    assert engine.chat(user("after"), max_tokens=8, **GREEDY).completion_tokens


def test_error_500_for_n_requests(boot_mock: BootMock) -> None:
    engine = boot_mock()
    engine.inject_fault("error-500", count=2)
    client = openai.OpenAI(base_url=f"{engine.base_url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model=engine.model_id, messages=oai_user("x"), temperature=0)
    with pytest.raises(EngineHTTPError) as second:
        engine.chat(user("x"), **GREEDY)
    assert second.value.status_code == 500
    assert engine.chat(user("x"), max_tokens=4, **GREEDY).completion_tokens


def test_faults_can_be_armed_from_engine_options(boot_mock: BootMock) -> None:
    engine = boot_mock(faults=("error-500:2",))
    statuses = [
        httpx.post(
            f"{engine.base_url}/v1/chat/completions", json={"messages": user("x"), "max_tokens": 2}
        ).status_code
        for _ in range(3)
    ]
    assert statuses == [500, 500, 200]


def test_clearing_faults_disarms_them(boot_mock: BootMock) -> None:
    engine = boot_mock()
    engine.inject_fault("error-500", count=5)
    assert engine.clear_faults()["armed"] == []
    assert engine.chat(user("x"), max_tokens=2, **GREEDY).completion_tokens


def test_crash_needs_its_own_process(boot_mock: BootMock) -> None:
    engine = boot_mock()
    with pytest.raises(EngineHTTPError) as refused:
        engine.inject_fault("crash")
    assert refused.value.status_code == 409


def test_crash_kills_a_subprocess_engine(tmp_path: Path) -> None:
    engine = boot(mock_config(isolation="subprocess"), tmp_path)
    try:
        engine.inject_fault("crash")
        with pytest.raises(httpx.TransportError):
            engine.chat(user("crash"), **GREEDY)
        assert wait_until(lambda: engine.exit_code() is not None)
        assert engine.exit_code() == CRASH_EXIT_CODE
    finally:
        engine.close()
    log = next(tmp_path.glob("mock-engine-*.log")).read_text()
    assert "serving specgate-mock-target" in log


def test_draft_failure_falls_back_to_target_only_and_is_counted(
    boot_mock: BootMock, baseline_engine: MockEngine
) -> None:
    engine = boot_mock(alpha=0.7, eos_one_in=0)
    engine.inject_fault("draft-failure")
    result = engine.chat(user("draft fails"), max_tokens=30, **GREEDY)
    assert result.token_ids == baseline_engine.chat(user("draft fails"), max_tokens=30, **GREEDY).token_ids
    status = engine.status()
    assert status["spec_decode_draft_failures_since_last"] == 1
    window = status["window"]
    assert isinstance(window, dict) and (window["drafts"], window["drafted"]) == (1, 4)
    assert faults(engine)["draft_failures_total"] == 1


def test_cancelled_stream_frees_its_slot(boot_mock: BootMock) -> None:
    engine = boot_mock(target_step_ms=20, eos_one_in=0)
    stream = engine.stream(user("cancel me"), max_tokens=400, **GREEDY)
    received = iter(stream)
    first = [next(received), next(received)]
    assert all(first)
    assert slots(engine)["active"] == 1
    stream.close()
    assert wait_until(lambda: slots(engine)["active"] == 0)
    assert slots(engine)["cancelled_total"] == 1 and slots(engine)["freed_total"] == 1


def test_crash_fault_configured_in_thread_mode_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(SpecgateInputError, match="would end this pytest process"):
        boot(mock_config(faults=("crash",)), tmp_path)


def test_admin_actions_and_fired_faults_are_in_the_engine_log(boot_mock: BootMock) -> None:
    engine = boot_mock()
    engine.inject_fault("error-500")
    with pytest.raises(EngineHTTPError):
        engine.chat(user("x"), **GREEDY)
    engine.roll()
    engine.swap("other-target")
    assert engine.log_path is not None
    log = engine.log_path.read_text()
    for line in (
        "started target=specgate-mock-target",
        "fault armed",
        "fault fired: error-500",
        "roll: closed window",
        "swap: specgate-mock-target -> other-target",
    ):
        assert line in log
