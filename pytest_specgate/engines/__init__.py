"""Engines behind one protocol: the built-in mock, mlx-lm, vLLM and any running endpoint.

Public names load their module on first use: the plugin reads ``engines.backends`` when it
resolves its settings, and importing a submodule runs this file first, so re-exporting
eagerly here would load the protocol, capabilities and configuration on every pytest start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_specgate._lazy import lazy_getattr

if TYPE_CHECKING:
    from pytest_specgate.contracts.capabilities import (
        Capabilities,
        EngineProcess,
        FaultInjection,
        MissingCapability,
        RawStatus,
        TelemetryReset,
        WarmSwap,
    )
    from pytest_specgate.contracts.engine import (
        ChatResult,
        Engine,
        EngineBootError,
        EngineStartupRefused,
        StreamResult,
        Telemetry,
        acceptance_rate_of,
    )
    from pytest_specgate.contracts.engine_config import EngineConfig
    from pytest_specgate.engines.backends import (
        BUILTIN_BACKENDS,
        DEFAULT_BACKEND,
        ENTRY_POINT_GROUP,
        Backend,
        available_backends,
        boot_function,
    )
    from pytest_specgate.engines.config import EnginePool, engine_config_from

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Capabilities", "EngineProcess", "FaultInjection", "MissingCapability",
                     "RawStatus", "TelemetryReset", "WarmSwap"), "pytest_specgate.contracts.capabilities"),
    "EngineConfig": "pytest_specgate.contracts.engine_config",
    **dict.fromkeys(("EnginePool", "engine_config_from"), "config"),
    **dict.fromkeys(("ChatResult", "Engine", "EngineBootError", "EngineStartupRefused",
                     "StreamResult", "Telemetry", "acceptance_rate_of"), "pytest_specgate.contracts.engine"),
    **dict.fromkeys(("BUILTIN_BACKENDS", "DEFAULT_BACKEND", "ENTRY_POINT_GROUP", "Backend",
                     "available_backends", "boot_function"), "backends"),
}

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

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
