"""Engines behind one protocol: the built-in mock, mlx-lm, vLLM and any running endpoint.

Only the light modules are re-exported here; the HTTP client, boot helpers and
backends are imported where they are needed so loading the plugin stays fast.
"""

from __future__ import annotations

from pytest_specgate.engines.capabilities import (
    Capabilities,
    EngineProcess,
    FaultInjection,
    MissingCapability,
    RawStatus,
    TelemetryReset,
    WarmSwap,
)
from pytest_specgate.engines.config import EngineConfig, EnginePool, engine_config_from
from pytest_specgate.engines.protocol import (
    ChatResult,
    Engine,
    EngineBootError,
    EngineStartupRefused,
    StreamResult,
    Telemetry,
    acceptance_rate_of,
)
from pytest_specgate.engines.registry import (
    BUILTIN_BACKENDS,
    DEFAULT_BACKEND,
    ENTRY_POINT_GROUP,
    Backend,
    available_backends,
    boot_function,
)

__all__ = [
    "BUILTIN_BACKENDS",
    "DEFAULT_BACKEND",
    "ENTRY_POINT_GROUP",
    "Backend",
    "Capabilities",
    "ChatResult",
    "Engine",
    "EngineBootError",
    "EngineConfig",
    "EnginePool",
    "EngineProcess",
    "EngineStartupRefused",
    "FaultInjection",
    "MissingCapability",
    "RawStatus",
    "StreamResult",
    "Telemetry",
    "TelemetryReset",
    "WarmSwap",
    "acceptance_rate_of",
    "available_backends",
    "boot_function",
    "engine_config_from",
]
