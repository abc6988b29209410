"""Engines behind one protocol: the built-in mock, mlx-lm, vLLM and any running endpoint.

Only the light modules are re-exported here; the HTTP client, boot helpers and
backends are imported where they are needed so loading the plugin stays fast.
"""

from __future__ import annotations

from pytest_specgate.engines.config import (
    BACKENDS,
    DEFAULT_BACKEND,
    EngineConfig,
    EnginePool,
    boot_function,
    engine_config_from,
)
from pytest_specgate.engines.protocol import (
    ChatResult,
    Engine,
    EngineBootError,
    EngineStartupRefused,
    StreamResult,
    Telemetry,
    acceptance_rate_of,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "ChatResult",
    "Engine",
    "EngineBootError",
    "EngineConfig",
    "EnginePool",
    "EngineStartupRefused",
    "StreamResult",
    "Telemetry",
    "acceptance_rate_of",
    "boot_function",
    "engine_config_from",
]
