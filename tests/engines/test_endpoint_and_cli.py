"""The endpoint backend attached to a running mock, and the `specgate mock-engine` command."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from pathlib import Path

import httpx
import pytest
from engines_testkit import GREEDY, BootMock, user

from pytest_specgate.contracts.engine import EngineBootError
from pytest_specgate.contracts.engine_config import EngineConfig, RunEngineOptions
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.boot import ManagedProcess, free_loopback_port, wait_for_health
from pytest_specgate.engines.client import OpenAIClient
from pytest_specgate.engines.config import EnginePool, engine_config_from
from pytest_specgate.engines.endpoint import boot as endpoint_boot
from pytest_specgate.engines.endpoint import choose_telemetry
from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.engines.mock_cli import EXIT_BAD_OPTIONS, EXIT_REFUSED, configure_parser, run


def _endpoint(url: str, **options: object) -> EngineConfig:
    return EngineConfig(backend="endpoint", options=tuple(sorted({"url": url, **options}.items())))


def test_endpoint_uses_status_telemetry_and_leaves_the_server_running(
    spec_engine: MockEngine, tmp_path: Path
) -> None:
    pool = EnginePool()
    config = engine_config_from({}, RunEngineOptions(endpoint=f"{spec_engine.base_url}/v1"))
    try:
        engine = pool.get(config, tmp_path)
        assert engine.backend == "endpoint" and engine.model_id == spec_engine.model_id
        spec_engine.roll()
        result = engine.chat(user("via endpoint"), max_tokens=12, **GREEDY)
        assert result.text == spec_engine.chat(user("via endpoint"), max_tokens=12, **GREEDY).text
        telemetry = engine.telemetry()
        assert telemetry.source == "/v1/status" and telemetry.drafted
    finally:
        pool.close_all()
    assert httpx.get(f"{spec_engine.base_url}/health").status_code == 200


def test_endpoint_without_spec_counters_reports_unavailable(boot_mock: BootMock, tmp_path: Path) -> None:
    plain = boot_mock(draft=None, speculation_support=False)
    with endpoint_boot(_endpoint(plain.base_url), tmp_path) as engine:
        engine.chat(user("x"), max_tokens=3, **GREEDY)
        telemetry = engine.telemetry()
    assert telemetry.available is False and telemetry.drafted is None and telemetry.source == "unavailable"


def _vllm_metrics(drafts: int, draft_tokens: int, accepted: int) -> str:
    return (
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}\n'
        f'vllm:spec_decode_num_drafts_created{{engine="0",model_name="m"}} 1.7e9\n'
        f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {draft_tokens}\n'
        f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {accepted}\n'
    )


def _fake_vllm(metrics: list[str]) -> OpenAIClient:
    """A client whose server has no ``/v1/status`` and answers ``/metrics`` from ``metrics`` in turn."""
    answers = iter(metrics)

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":
            return httpx.Response(200, text=next(answers))
        return httpx.Response(404, json={"error": {"message": "not found"}})

    return OpenAIClient("http://127.0.0.1:9", transport=httpx.MockTransport(handle))


def test_endpoint_without_status_fields_reads_metrics_deltas_like_the_vllm_backend() -> None:
    client = _fake_vllm([_vllm_metrics(5, 15, 9), _vllm_metrics(8, 24, 13), _vllm_metrics(2, 6, 1)])
    config = EngineConfig(backend="endpoint", draft="d", num_draft_tokens=3)
    read = choose_telemetry(client, config)

    telemetry = read()
    assert (telemetry.drafted, telemetry.accepted, telemetry.source) == (9, 4, "/metrics")
    assert telemetry.enabled and telemetry.draft_model_id == "d" and telemetry.num_draft_tokens == 3
    with pytest.raises(ValueError, match="restarted"):
        read()


def test_endpoint_whose_metrics_are_not_prometheus_text_has_unavailable_telemetry() -> None:
    client = _fake_vllm(["<html>metrics dashboard</html>"])
    telemetry = choose_telemetry(client, EngineConfig(backend="endpoint", draft="d"))()
    assert telemetry.available is False and telemetry.enabled and telemetry.source == "unavailable"


def test_endpoint_for_a_model_the_server_lacks_fails_to_boot(spec_engine: MockEngine, tmp_path: Path) -> None:
    config = EngineConfig(backend="endpoint", target="other-model", options=(("url", spec_engine.base_url),))
    with pytest.raises(EngineBootError, match="does not serve 'other-model'"):
        endpoint_boot(config, tmp_path)


def test_endpoint_that_never_answers_fails_to_boot(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_loopback_port()}"
    with pytest.raises(EngineBootError, match=r"not healthy within 0\.3s"):
        endpoint_boot(_endpoint(url, health_deadline_s=0.3), tmp_path)


@pytest.mark.parametrize("option", ["health_deadline_s", "request_timeout_s"])
@pytest.mark.parametrize("bad", ["soon", 0, True])
def test_endpoint_timing_option_that_is_not_a_positive_number_is_an_input_error(
    option: str, bad: object, spec_engine: MockEngine, tmp_path: Path
) -> None:
    with pytest.raises(SpecgateInputError, match=rf"option {option} must be a positive number, got {bad!r}"):
        endpoint_boot(_endpoint(spec_engine.base_url, **{option: bad}), tmp_path)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="specgate mock-engine")
    configure_parser(parser)
    return parser.parse_args(list(argv))


def test_cli_refuses_a_tokenizer_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    code = run(_args("--port", "1", "--draft", "d", "--draft-vocab", "words-v2"))
    assert code == EXIT_REFUSED
    assert "refused to start: draft_model_tokenizer_mismatch" in capsys.readouterr().err


def test_cli_refuses_a_capacity_shortfall(capsys: pytest.CaptureFixture[str]) -> None:
    code = run(_args("--port", "1", "--draft", "d", "--memory-budget-gb", "0.5"))
    assert code == EXIT_REFUSED
    assert "draft_model_capacity_shortfall" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--alpha", "2"), "alpha must be within [0, 1]"),
        (("--target-step-ms", "1e308"), "target_step_ms must be within [0, 60000] ms (a minute per step)"),
        (("--draft-step-ms", "inf"), "draft_step_ms must be within [0, 60000] ms"),
        (("--target-step-ms", "nan"), "target_step_ms must be within [0, 60000] ms"),
        (("--fault", "meteor"), "unknown mock fault 'meteor'"),
        (("--option", "eos_one_in"), "--option expects KEY=JSON"),
        (("--option", "eos_one_in={"), "--option eos_one_in: not valid JSON"),
        (("--gated-features", "logprobs,telepathy"), "unknown gated feature(s) ['telepathy']"),
    ],
)
def test_cli_bad_options_exit_2(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(_args("--port", "1", *argv)) == EXIT_BAD_OPTIONS
    assert message in capsys.readouterr().err


def test_cli_serves_on_the_port_with_its_flags_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_loopback_port()
    argv = [
        sys.executable,
        "-m",
        "pytest_specgate.engines.mock",
        "--port",
        str(port),
        "--draft",
        "dr",
        "--num-draft-tokens",
        "3",
        "--alpha",
        "0.5",
        "--fault",
        "corrupt-spec",
        "--gated-features",
        "",
        "--option",
        "eos_one_in=0",
    ]
    process = ManagedProcess().start(argv, None, tmp_path / "cli.log")
    try:
        wait_for_health(f"http://127.0.0.1:{port}/health", 30, process)
        status = httpx.get(f"http://127.0.0.1:{port}/v1/status").json()
        answer = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"messages": user("cli"), "max_tokens": 7, **GREEDY},
        ).json()
    finally:
        code = process.terminate()
    assert (status["spec_decode_draft_model_id"], status["spec_decode_num_draft_tokens"]) == ("dr", 3)
    assert status["spec_decode_alpha"] == 0.5 and status["violations"] == ["corrupt-spec"]
    assert status["gated_features"] == []
    assert 1 <= answer["usage"]["completion_tokens"] <= 7
    assert code == -signal.SIGTERM, "uvicorn shuts down on SIGTERM and re-raises it; -9 would mean it hung"


def test_sigterm_stops_the_server_promptly_with_a_request_waiting_on_the_longest_step(
    tmp_path: Path,
) -> None:
    """The longest step the range allows (a minute) leaves a request waiting; the first SIGTERM
    still stops the server (uvicorn's one-second grace), not the SIGKILL after it."""
    import threading
    import time

    port = free_loopback_port()
    argv = [sys.executable, "-m", "pytest_specgate.engines.mock", "--port", str(port),
            "--target-step-ms", "60000"]
    process = ManagedProcess().start(argv, None, tmp_path / "cli.log")

    def ask() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                       json={"messages": user("slow"), "max_tokens": 4, **GREEDY}, timeout=30)

    try:
        wait_for_health(f"http://127.0.0.1:{port}/health", 30, process)
        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        time.sleep(0.5)
    finally:
        started = time.monotonic()
        code = process.terminate(grace_s=5.0)
        stopped_s = time.monotonic() - started
    assert code == -signal.SIGTERM and stopped_s < 5.0, (code, stopped_s)
