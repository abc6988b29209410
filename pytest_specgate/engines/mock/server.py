"""Running the mock engine: on a background thread in this process, or as its own process.

The thread mode is what the ``engine`` fixture uses by default (fast, no fork);
the subprocess mode exists for faults that need a process of their own (crash)
and for the ``specgate mock-engine`` command. Both listen on 127.0.0.1 only.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import EngineBootError, Telemetry
from pytest_specgate.engines.boot import ManagedProcess, wait_for_health
from pytest_specgate.engines.client import ClientEngine, OpenAIClient, telemetry_from_status
from pytest_specgate.engines.mock.settings import (
    FaultSpec,
    MockSettings,
    check_startup,
    fault_kind,
    settings_from_config,
)

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from pytest_specgate.contracts.engine_config import EngineConfig

__all__ = ["InProcessServer", "MockEngine", "boot", "boot_settings", "build_app", "listen_loopback",
           "serve_forever"]

_STOP_GRACE_S = 5.0


def build_app(
    settings: MockSettings, *, allow_crash: bool, log: Callable[[str], None] | None = None
) -> Starlette:
    """The Starlette app for ``settings`` (raises EngineStartupRefused first if refused)."""
    from pytest_specgate.engines.mock.app import MockState, create_app

    return create_app(MockState(settings, allow_crash=allow_crash, log=log))


def _uvicorn_config(app: Starlette, *, in_process: bool) -> uvicorn.Config:
    import uvicorn

    return uvicorn.Config(
        app,
        host="127.0.0.1",
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
        log_config=None if in_process else uvicorn.config.LOGGING_CONFIG,
    )


def _loopback_socket(port: int) -> socket.socket:
    """A bound listening-to-be socket; proto must be IPPROTO_TCP or asyncio skips TCP_NODELAY."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


class InProcessServer:
    """uvicorn serving the mock app on a daemon thread, bound to a kernel-chosen port."""

    def __init__(self, settings: MockSettings, workdir: Path) -> None:
        import uvicorn

        self._socket = _loopback_socket(0)
        self.port: int = self._socket.getsockname()[1]
        self.log_path = workdir / f"mock-engine-{self.port}.log"
        self._log = self.log_path.open("a", encoding="utf-8", buffering=1)
        try:
            app = build_app(settings, allow_crash=False, log=self._write_log)
        except BaseException:
            self._log.close()
            self._socket.close()
            raise
        self._server = uvicorn.Server(_uvicorn_config(app, in_process=True))
        self.thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"specgate-mock-engine-{self.port}",
            daemon=True,
        )

    def _write_log(self, line: str) -> None:
        self._log.write(line + "\n")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, deadline_s: float) -> InProcessServer:
        self.thread.start()
        give_up = time.monotonic() + deadline_s
        while not self._server.started:
            if not self.thread.is_alive():
                self._socket.close()
                self._log.close()
                raise EngineBootError(f"mock engine thread on port {self.port} exited during start-up")
            if time.monotonic() > give_up:
                self.stop()
                raise EngineBootError(f"mock engine on port {self.port} not started within {deadline_s}s")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self.thread.join(_STOP_GRACE_S)
        if self.thread.is_alive():
            self._server.force_exit = True
            self.thread.join(_STOP_GRACE_S)
        self._socket.close()
        self._log.close()


class MockEngine(ClientEngine):
    """The Engine for the mock, plus its admin API (roll, swap, faults, violations)."""

    def __init__(
        self,
        settings: MockSettings,
        client: OpenAIClient,
        *,
        close: Callable[[], object],
        process: ManagedProcess | None,
        thread: threading.Thread | None,
        log_path: Path | None,
    ) -> None:
        super().__init__(
            backend="mock",
            client=client,
            model_id=settings.target,
            telemetry=self._read_telemetry,
            close=close,
            versions=self._read_versions,
            default_params={"return_token_ids": True},
        )
        self.settings = settings
        self.process = process
        self.thread = thread
        self.log_path = log_path

    @property
    def pid(self) -> int | None:
        """The engine's process id in subprocess mode (None when it runs on a thread here)."""
        return None if self.process is None else self.process.pid

    def exit_code(self) -> int | None:
        """The subprocess's exit code once it has exited (None while running or in thread mode)."""
        return None if self.process is None else self.process.returncode()

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def capabilities(self) -> Capabilities:
        """Everything: the mock exists to be put into every situation a spec needs."""
        return Capabilities(
            telemetry_reset=self, faults=self, swap=self, process=self.process, raw_status=self,
            log=self.log_path,
        )

    def _read_telemetry(self) -> Telemetry:
        return telemetry_from_status(self.status())

    def _read_versions(self) -> dict[str, str]:
        return {key: str(value) for key, value in self.client.get_json("/version").items()}

    def status(self) -> dict[str, object]:
        return self.client.get_json("/v1/status")

    def metrics_text(self) -> str:
        return self.client.get_text("/metrics")

    def roll(self) -> dict[str, object]:
        """Close the telemetry window; returns the closed window's summary."""
        return self.client.post_json("/admin/roll")

    def reset_telemetry(self) -> None:
        """Start a fresh telemetry window (same name as on the vLLM engine)."""
        self.roll()

    def swap(self, target: str, *, vocab: str | None = None) -> dict[str, object]:
        """Warm-swap the target model; since-last counters restart at zero."""
        body: dict[str, object] = {"target": target}
        if vocab is not None:
            body["vocab"] = vocab
        answer = self.client.post_json("/admin/swap", body)
        self.model_id = target
        return answer

    def inject_fault(
        self,
        kind: str,
        *,
        count: int = 1,
        seconds: float | None = None,
        after_chunks: int = 2,
    ) -> dict[str, object]:
        """Arm a transient fault for the next ``count`` generation requests."""
        fault = FaultSpec(fault_kind(kind), count, seconds, after_chunks)
        return self.client.post_json("/admin/faults", fault.to_dict())

    def clear_faults(self) -> dict[str, object]:
        return self.client.post_json("/admin/faults", method="DELETE")

    def set_violations(self, *names: str) -> dict[str, object]:
        """Replace the active violations (``set_violations()`` turns them all off)."""
        return self.client.post_json("/admin/violations", {"violations": list(names)}, method="PUT")


def _client_for(base_url: str, settings: MockSettings) -> OpenAIClient:
    return OpenAIClient(base_url, timeout_s=settings.request_timeout_s, backend="mock")


def _boot_thread(settings: MockSettings, workdir: Path) -> MockEngine:
    server = InProcessServer(settings, workdir).start(settings.boot_timeout_s)
    try:
        return MockEngine(
            settings,
            _client_for(server.base_url, settings),
            close=server.stop,
            process=None,
            thread=server.thread,
            log_path=server.log_path,
        )
    except BaseException:
        server.stop()
        raise


def subprocess_argv(settings: MockSettings, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest_specgate.engines.mock",
        "--port",
        str(port),
        *settings.to_cli_options(),
    ]


def _boot_subprocess(settings: MockSettings, workdir: Path) -> MockEngine:
    from pytest_specgate.engines.boot import free_loopback_port

    port = free_loopback_port()
    process = ManagedProcess()
    log_path = workdir / f"mock-engine-{port}.log"
    process.start(subprocess_argv(settings, port), None, log_path)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(f"{base_url}/health", settings.boot_timeout_s, process)
        return MockEngine(
            settings,
            _client_for(base_url, settings),
            close=process.terminate,
            process=process,
            thread=None,
            log_path=log_path,
        )
    except BaseException:
        process.terminate()
        raise


def boot_settings(settings: MockSettings, workdir: Path) -> MockEngine:
    """Boot from MockSettings; start-up refusals are raised before anything listens."""
    check_startup(settings)
    if settings.isolation == "subprocess":
        return _boot_subprocess(settings, workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    return _boot_thread(settings, workdir)


def boot(config: EngineConfig, workdir: Path) -> MockEngine:
    """The ``mock`` backend's boot function (named in the built-in backend table)."""
    return boot_settings(settings_from_config(config), workdir)


def listen_loopback(port: int) -> socket.socket:
    """The socket ``serve_forever`` serves on; OSError when 127.0.0.1:``port`` cannot be bound."""
    return _loopback_socket(port)


def serve_forever(settings: MockSettings, sock: socket.socket) -> None:
    """Serve on ``sock`` in the foreground until SIGINT/SIGTERM (``specgate mock-engine``); closes it."""
    import uvicorn

    app = build_app(settings, allow_crash=True, log=lambda line: print(line, file=sys.stderr, flush=True))
    try:
        uvicorn.Server(_uvicorn_config(app, in_process=False)).run(sockets=[sock])
    finally:
        sock.close()
