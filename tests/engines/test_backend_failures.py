"""Backend failures read well: a malformed answer names the backend, the URL and its first bytes;
a boot failure nobody caught is one summary line plus the engine log's tail (no traceback); a
failed boot's progress line says it failed."""

from __future__ import annotations

import io
from collections.abc import Callable

import httpx
import pytest

from pytest_specgate.contracts.engine import Telemetry
from pytest_specgate.engines.client import ClientEngine, EngineResponseError, OpenAIClient
from pytest_specgate.measure.progress import ProgressReporter


def _engine(respond: Callable[[httpx.Request], httpx.Response], backend: str = "sglang") -> ClientEngine:
    client = OpenAIClient("http://127.0.0.1:9", transport=httpx.MockTransport(respond))
    return ClientEngine(backend=backend, client=client, model_id="m", telemetry=Telemetry)


def test_a_malformed_chat_answer_names_the_backend_url_and_first_bytes() -> None:
    engine = _engine(lambda _: httpx.Response(200, content=b"<html>upstream timeout</html>"))
    with pytest.raises(EngineResponseError) as raised:
        engine.chat([{"role": "user", "content": "hi"}])
    message = str(raised.value)
    assert message.startswith("sglang engine: POST http://127.0.0.1:9/v1/chat/completions answered "
                              "malformed JSON (Expecting value: line 1 column 1 (char 0)); ")
    assert message.endswith("first bytes: b'<html>upstream timeout</html>'")
    assert isinstance(raised.value, ValueError) and raised.value.backend == "sglang"


def test_a_long_malformed_answer_shows_its_first_bytes_and_its_length() -> None:
    engine = _engine(lambda _: httpx.Response(200, content=b'{"choices": [' + b"x" * 500))
    with pytest.raises(EngineResponseError, match=r"first bytes \(of 513 bytes\): b'\{\"choices\": \[x+'$"):
        engine.chat([{"role": "user", "content": "hi"}])


def test_a_malformed_stream_event_names_the_backend_and_url() -> None:
    events = b'data: {"choices": [{"delta": {"content": "a"}}]}\n\ndata: {broken\n\n'
    engine = _engine(lambda _: httpx.Response(200, content=events,
                                              headers={"content-type": "text/event-stream"}))
    stream = engine.stream([{"role": "user", "content": "hi"}])
    with pytest.raises(EngineResponseError, match=r"^sglang engine: POST \(stream event\) "
                       r"http://127.0.0.1:9/v1/chat/completions answered malformed JSON .*b'\{broken'$"):
        list(stream)


def test_well_formed_answers_still_read() -> None:
    body = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    assert _engine(lambda _: httpx.Response(200, json=body)).chat([]).text == "ok"


BOOT_SPEC = """
from pytest_specgate import EngineBootError


def _wait(depth):
    if depth == 0:
        error = EngineBootError("engine process 4242 exited with code 1 before "
                                "http://127.0.0.1:9/health became healthy")
        error.add_note("last 2 line(s) of /tmp/engine/server.log:\\nloading weights\\nOSError: out of memory")
        raise error
    _wait(depth - 1)


def test_boot():
    _wait(40)
"""


def test_an_uncaught_boot_failure_is_one_line_and_the_log_tail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_boot_demo=BOOT_SPEC)
    # An in-process run re-marks the already imported plugin for assertion rewriting, and where the
    # plugin was not imported through the rewrite hook pytest warns; the summary below is the point.
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "_*_ test_boot _*_",
        "test_boot_demo.py::test_boot: engine boot failed: engine process 4242 exited with code 1 "
        "before http://127.0.0.1:9/health became healthy",
        "last 2 line(s) of /tmp/engine/server.log:",
        "loading weights",
        "OSError: out of memory",
        "=*= short test summary info =*=",
    ], consecutive=True)
    assert "_wait(depth - 1)" not in result.stdout.str()


def test_a_failed_boot_says_so_on_its_progress_line() -> None:
    ticks = iter([0.0, 4.0, 8.0])
    stream = io.StringIO()
    reporter = ProgressReporter(stream, label="engine boot vllm", clock=lambda: next(ticks), quiet_s=3.0)
    reporter.tick()
    reporter.tick(done=True, failed=True)
    assert stream.getvalue().splitlines() == ["engine boot vllm: 4s elapsed",
                                              "engine boot vllm: failed after 8s"]
    done = io.StringIO()
    ticks = iter([0.0, 4.0, 8.0])
    reporter = ProgressReporter(done, label="engine boot vllm", clock=lambda: next(ticks), quiet_s=3.0)
    reporter.tick()
    reporter.tick(done=True)
    assert done.getvalue().splitlines()[-1] == "engine boot vllm: done in 8s"


def test_the_boot_ticker_closes_a_failed_step_as_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_specgate.measure import progress

    calls: list[tuple[bool, bool]] = []

    class Recorder:
        def tick(self, *, done: bool = False, failed: bool = False) -> None:
            calls.append((done, failed))

    monkeypatch.setattr(progress, "progress_for", lambda label: Recorder())
    with pytest.raises(RuntimeError), progress.progress_ticker("engine boot", interval_s=60):
        raise RuntimeError("boot failed")
    with progress.progress_ticker("engine boot", interval_s=60):
        pass
    assert calls == [(True, True), (True, False)]
