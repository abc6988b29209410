"""The shared client, StreamResult timing, telemetry normalization and the process boot helpers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from engines_testkit import wait_until

from pytest_specgate.contracts.engine import EngineBootError, StreamResult, Telemetry
from pytest_specgate.engines.boot import ManagedProcess, free_loopback_port, wait_for_health
from pytest_specgate.engines.client import (
    EngineHTTPError,
    chat_result_from,
    telemetry_from_status,
)


class FakeClock:
    def __init__(self, times: list[float]) -> None:
        self._times = iter(times)

    def __call__(self) -> float:
        return next(self._times)


def _events() -> Iterator[dict[str, object]]:
    yield {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    for word, ids in ((" one", [1]), (" two", [2]), (" three", [3])):
        yield {"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None, "token_ids": ids}]}
    yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    yield {"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}}


def test_stream_result_records_deltas_timings_and_totals() -> None:
    closed: list[bool] = []
    result = StreamResult(
        _events(), started=10.0, on_close=lambda: closed.append(True), clock=FakeClock([10.5, 10.75, 11.25])
    )
    assert list(result) == [" one", " two", " three"]
    assert result.text == " one two three" and result.finish_reason == "length"
    assert result.ttft_s == 0.5 and result.inter_token_s == (0.25, 0.5)
    assert result.completion_tokens == 3 and result.prompt_tokens == 2 and result.token_ids == (1, 2, 3)
    assert len(result.raw_events) == 6 and result.exhausted and closed == [True]


def test_reading_a_total_drains_the_stream() -> None:
    result = StreamResult(_events(), started=0.0, clock=FakeClock([1.0, 2.0, 3.0]))
    assert result.text == " one two three" and result.exhausted


def test_closing_early_stops_reading() -> None:
    result = StreamResult(_events(), started=0.0, clock=FakeClock([1.0, 2.0, 3.0]))
    first = next(iter(result))
    result.close()
    assert first == " one" and result.text == " one" and not result.exhausted


def test_status_without_spec_fields_is_unavailable_not_zero() -> None:
    telemetry = telemetry_from_status({"model": "x"})
    assert telemetry == Telemetry.unavailable(enabled=False)
    assert telemetry.drafted is None and telemetry.source == "unavailable"
    assert set(telemetry.to_dict()) == {
        "available",
        "enabled",
        "draft_model_id",
        "num_draft_tokens",
        "drafted",
        "accepted",
        "acceptance_rate",
        "window",
        "source",
        "drafts",
        "accepted_per_position",
    }
    assert telemetry.drafts is None and telemetry.accepted_per_position is None


def test_status_with_spec_fields_is_normalized() -> None:
    telemetry = telemetry_from_status(
        {
            "spec_decode_enabled": True,
            "spec_decode_draft_model_id": "d",
            "spec_decode_num_draft_tokens": 4,
            "spec_decode_drafted_tokens_since_last": 40,
            "spec_decode_accepted_tokens_since_last": 30,
        }
    )
    assert (telemetry.available, telemetry.acceptance_rate, telemetry.draft_model_id) == (True, 0.75, "d")
    empty = telemetry_from_status(
        {
            "spec_decode_enabled": True,
            "spec_decode_drafted_tokens_since_last": 0,
            "spec_decode_accepted_tokens_since_last": 0,
        }
    )
    assert empty.acceptance_rate is None


def test_chat_result_reads_chat_and_completions_bodies() -> None:
    chat = chat_result_from(
        {
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop", "token_ids": [4, 5]}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2},
        },
        0.5,
    )
    legacy = chat_result_from({"choices": [{"text": "yo", "finish_reason": "length"}]}, 0.1)
    assert (chat.text, chat.token_ids, chat.completion_tokens, chat.wall_s) == ("hi", (4, 5), 2, 0.5)
    assert (legacy.text, legacy.token_ids, legacy.prompt_tokens) == ("yo", None, None)


def test_http_error_names_the_request_and_the_server_message() -> None:
    error = EngineHTTPError("POST", "http://h/v1/x", 400, {"error": {"message": "bad max_tokens"}})
    assert str(error) == "POST http://h/v1/x -> HTTP 400: bad max_tokens" and error.status_code == 400


def test_wait_for_health_times_out_with_a_boot_error() -> None:
    port = free_loopback_port()
    with pytest.raises(EngineBootError, match=rf"127.0.0.1:{port}/health not healthy within 0.3s"):
        wait_for_health(f"http://127.0.0.1:{port}/health", 0.3)


def test_early_exit_is_reported_with_the_log_tail(tmp_path: Path) -> None:
    script = "import sys\nfor i in range(60): print('line', i)\nsys.exit(3)"
    process = ManagedProcess().start([sys.executable, "-c", script], None, tmp_path / "engine.log")
    try:
        with pytest.raises(EngineBootError, match="exited with code 3") as error:
            wait_for_health(f"http://127.0.0.1:{free_loopback_port()}/health", 30, process)
    finally:
        process.terminate()
    note = "\n".join(error.value.__notes__)
    assert "last 40 line(s)" in note and "line 59" in note and "line 19\n" not in note + "\n"
    assert len(process.log_tail()) == 40


def test_a_final_status_fails_at_once_with_its_meaning_and_the_log(tmp_path: Path) -> None:
    port = free_loopback_port()
    script = (
        "import http.server\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(503); self.end_headers()\n"
        "print('model failed to load', flush=True)\n"
        f"http.server.HTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    )
    process = ManagedProcess().start([sys.executable, "-c", script], None, tmp_path / "engine.log")
    try:
        with pytest.raises(EngineBootError, match=r"/health answers 503: no model") as error:
            wait_for_health(f"http://127.0.0.1:{port}/health", 60, process, final_statuses={503: "no model"})
    finally:
        process.terminate()
    assert "model failed to load" in "\n".join(error.value.__notes__)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in state


def test_terminate_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('child', child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    log = tmp_path / "group.log"
    process = ManagedProcess().start([sys.executable, "-c", script], None, log)
    try:
        assert wait_until(lambda: "child" in log.read_text())
        child = int(log.read_text().split()[1])
    finally:
        process.terminate(grace_s=2)
    assert process.returncode() is not None
    assert _gone(child), "terminate returns only once no live member of the group is left"


def test_terminate_escalates_to_sigkill(tmp_path: Path) -> None:
    script = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    log = tmp_path / "stubborn.log"
    process = ManagedProcess().start([sys.executable, "-c", script], None, log)
    try:
        assert wait_until(lambda: "ready" in log.read_text())
    finally:
        code = process.terminate(grace_s=0.3)
    assert code == -9
