"""Fail-closed start-up, disabled-mode identity with a build lacking speculation, clean teardown."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from engines_testkit import GREEDY, BootMock, mock_config, user

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.mock import MockEngine, boot


def _mock_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("specgate-mock-engine-")]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_draft_with_another_vocabulary_refuses_to_start(tmp_path: Path) -> None:
    threads_before = _mock_threads()
    with pytest.raises(EngineStartupRefused) as refused:
        boot(mock_config(draft_vocab="words-v2"), tmp_path)
    assert refused.value.code == "draft_model_tokenizer_mismatch"
    message = str(refused.value)
    assert "specgate-mock-draft" in message and "words-v2" in message and "words-v1" in message
    assert _mock_threads() == threads_before


@pytest.mark.parametrize("isolation", ["thread", "subprocess"])
def test_memory_budget_below_target_draft_and_kv_refuses_to_start(tmp_path: Path, isolation: str) -> None:
    config = mock_config(
        memory_budget_gb=1.5, target_size_gb=1.0, draft_size_gb=0.25, kv_cache_gb=0.5, isolation=isolation
    )
    with pytest.raises(EngineStartupRefused) as refused:
        boot(config, tmp_path)
    assert refused.value.code == "draft_model_capacity_shortfall"
    for figure in ("1.50 GB", "1.00 GB", "0.25 GB", "0.50 GB", "1.75 GB"):
        assert figure in str(refused.value)
    assert not list(tmp_path.glob("mock-engine-*.log"))


def test_enough_memory_starts(boot_mock: BootMock) -> None:
    engine = boot_mock(memory_budget_gb=1.75)
    assert engine.chat(user("fits"), max_tokens=4, **GREEDY).completion_tokens


def test_draft_on_a_build_without_speculation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EngineStartupRefused) as refused:
        boot(mock_config(speculation_support=False), tmp_path)
    assert refused.value.code == "speculation_unsupported"


def test_bad_mock_options_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecgateInputError, match="unknown mock engine option"):
        boot(mock_config(alhpa=0.5), tmp_path)
    with pytest.raises(SpecgateInputError, match=r"alpha must be within \[0, 1\]"):
        boot(mock_config(alpha=1.5), tmp_path)
    with pytest.raises(SpecgateInputError, match="unknown mock fault 'explode'"):
        boot(mock_config(faults=("explode",)), tmp_path)


def _without_ids(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key not in {"id", "created"}}


def _raw_stream(engine: MockEngine, path: str, body: dict[str, object]) -> list[dict[str, Any]]:
    """Every SSE event of a streamed answer, minus id/created, plus the exact [DONE] ending."""
    with httpx.stream("POST", f"{engine.base_url}{path}", json={**body, "stream": True}) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [_without_ids(json.loads(line[6:])) for line in lines[:-1]]


def test_disabled_mode_answers_like_a_build_without_speculation(boot_mock: BootMock) -> None:
    disabled = boot_mock(draft=None)
    unsupported = boot_mock(draft=None, speculation_support=False)
    for path, body in (
        ("/v1/chat/completions", {"messages": user("identical"), "max_tokens": 20, **GREEDY}),
        (
            "/v1/chat/completions",
            {"messages": user("sampled"), "max_tokens": 20, "temperature": 0.7, "seed": 1},
        ),
        ("/v1/completions", {"prompt": "identical", "max_tokens": 20, **GREEDY}),
    ):
        answers = [
            httpx.post(f"{e.base_url}{path}", json={**body, "model": e.model_id})
            for e in (disabled, unsupported)
        ]
        assert answers[0].status_code == answers[1].status_code == 200
        assert _without_ids(answers[0].json()) == _without_ids(answers[1].json())
        streams = [_raw_stream(e, path, {**body, "model": e.model_id}) for e in (disabled, unsupported)]
        assert streams[0] == streams[1] and streams[0]
    assert "spec_decode_enabled" not in unsupported.status()
    assert disabled.status()["spec_decode_enabled"] is False


def test_close_leaves_no_thread_and_no_listening_port(tmp_path: Path) -> None:
    engine = boot(mock_config(), tmp_path)
    port = engine.port
    assert _listening(port) and f"specgate-mock-engine-{port}" in _mock_threads()
    engine.close()
    assert not _listening(port)
    assert f"specgate-mock-engine-{port}" not in _mock_threads()
    engine.close()


def test_subprocess_mode_serves_and_terminates(tmp_path: Path) -> None:
    import os

    engine = boot(mock_config(isolation="subprocess", alpha=0.7), tmp_path)
    pid = engine.pid
    assert pid is not None and pid != os.getpid()
    try:
        assert engine.status()["pid"] == pid
        assert engine.chat(user("in a process"), max_tokens=8, **GREEDY).completion_tokens
        assert engine.telemetry().drafted
    finally:
        engine.close()
    assert not _listening(engine.port)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert list(tmp_path.glob("mock-engine-*.log"))


def test_subprocess_that_dies_during_boot_reports_its_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from pytest_specgate.contracts.engine import EngineBootError
    from pytest_specgate.engines.mock import server

    dying = [sys.executable, "-c", "print('mock engine cannot bind'); raise SystemExit(4)"]
    monkeypatch.setattr(server, "subprocess_argv", lambda settings, port: dying)
    with pytest.raises(EngineBootError, match="exited with code 4") as error:
        boot(mock_config(isolation="subprocess"), tmp_path)
    assert "mock engine cannot bind" in "\n".join(error.value.__notes__)


def test_mock_engine_satisfies_the_engine_protocol(spec_engine: MockEngine) -> None:
    from pytest_specgate.contracts.engine import Engine

    assert isinstance(spec_engine, Engine)
    versions = spec_engine.versions()
    assert versions["backend"] == "mock" and versions["engine"] == "specgate-mock"
    assert versions["model"] == spec_engine.model_id and versions["uvicorn"]
