"""specgate-echo: a pytest-specgate backend written from docs/backends.md.

Its server (``specgate_echo.server``) answers every chat request with the words of the last
message, token by token, and counts a "drafted" and an "accepted" token for each word when a
draft model is configured (an echo's draft always agrees). It is an example of the kit:
declared options, a server started under the plugin's reaper, the shared OpenAI client,
telemetry and capabilities.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_specgate.backends import (
    Capabilities,
    ClientEngine,
    EngineBackend,
    EngineConfig,
    EngineOption,
    OpenAIClient,
    OptionType,
    ServerProcess,
    Telemetry,
    acceptance_rate_of,
    start_server,
)

__version__ = "1.0"
DEFAULT_GAMMA = 4


class EchoEngine(ClientEngine):
    """The shared OpenAI-compatible client, plus the echo server's counters and process."""

    def __init__(self, config: EngineConfig, server: ServerProcess) -> None:
        self._config = config
        self._server = server
        super().__init__(
            backend="echo",
            client=OpenAIClient(server.base_url),
            model_id=config.target or "echo",
            telemetry=self._read_telemetry,
            close=server.close,
            versions=lambda: {"specgate-echo": __version__},
        )

    def _read_telemetry(self) -> Telemetry:
        if self._config.draft is None:
            return Telemetry.unavailable(enabled=False)
        stats = self.client.get_json("/stats")
        drafted, accepted = stats["drafted"], stats["accepted"]
        assert isinstance(drafted, int) and isinstance(accepted, int)
        return Telemetry(
            available=True,
            enabled=True,
            draft_model_id=self._config.draft,
            num_draft_tokens=self._config.num_draft_tokens or DEFAULT_GAMMA,
            drafted=drafted,
            accepted=accepted,
            acceptance_rate=acceptance_rate_of(drafted, accepted),
            window="since_boot",
            source="/stats",
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(process=self._server, log=self._server.log)


def boot(config: EngineConfig, workdir: Path) -> EchoEngine:
    """Start the echo server for ``config`` and return the engine talking to it."""

    def command(port: int) -> list[str]:
        argv = [sys.executable, "-m", "specgate_echo.server", f"--port={port}",
                f"--model={config.target or 'echo'}", f"--delay-ms={config.option('delay_ms', 0)}"]
        if config.draft is not None:
            argv.append(f"--num-draft-tokens={config.num_draft_tokens or DEFAULT_GAMMA}")
        return argv

    server = start_server(command, workdir, health_path="/health",
                          boot_timeout_s=config.positive_number_option("boot_timeout_s", 30.0))
    return EchoEngine(config, server)


BACKEND = EngineBackend(
    boot,
    options=[
        EngineOption("delay_ms", OptionType.NON_NEGATIVE, "milliseconds the server waits before each word"),
        EngineOption("boot_timeout_s", OptionType.POSITIVE, "seconds to wait for the server's /health"),
    ],
)
