"""The backend kit: what a backend package implements, returns and starts its server with
(docs/backends.md is the guide; ``examples/backends/specgate-echo`` uses it).

Spec authors import from ``pytest_specgate``; a backend imports from here, which also
re-exports the engine contract it implements (``Engine``, ``EngineConfig``, the results and
errors), so one import line serves it. Names resolve on first use, as in ``pytest_specgate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_specgate._lazy import lazy_getattr

if TYPE_CHECKING:
    from pytest_specgate.contracts.capabilities import Capabilities as Capabilities
    from pytest_specgate.contracts.capabilities import EngineProcess as EngineProcess
    from pytest_specgate.contracts.capabilities import FaultInjection as FaultInjection
    from pytest_specgate.contracts.capabilities import MissingCapability as MissingCapability
    from pytest_specgate.contracts.capabilities import RawStatus as RawStatus
    from pytest_specgate.contracts.capabilities import TelemetryReset as TelemetryReset
    from pytest_specgate.contracts.capabilities import WarmSwap as WarmSwap
    from pytest_specgate.contracts.engine import ChatResult as ChatResult
    from pytest_specgate.contracts.engine import Engine as Engine
    from pytest_specgate.contracts.engine import EngineBootError as EngineBootError
    from pytest_specgate.contracts.engine import EngineStartupRefused as EngineStartupRefused
    from pytest_specgate.contracts.engine import StreamResult as StreamResult
    from pytest_specgate.contracts.engine import Telemetry as Telemetry
    from pytest_specgate.contracts.engine import acceptance_rate_of as acceptance_rate_of
    from pytest_specgate.contracts.engine_backend import BootFunction as BootFunction
    from pytest_specgate.contracts.engine_backend import EngineBackend as EngineBackend
    from pytest_specgate.contracts.engine_config import EngineConfig as EngineConfig
    from pytest_specgate.contracts.engine_options import EngineOption as EngineOption
    from pytest_specgate.contracts.engine_options import OptionType as OptionType
    from pytest_specgate.engines.boot import ServerProcess as ServerProcess
    from pytest_specgate.engines.boot import start_server as start_server
    from pytest_specgate.engines.client import ClientEngine as ClientEngine
    from pytest_specgate.engines.client import EngineHTTPError as EngineHTTPError
    from pytest_specgate.engines.client import EngineResponseError as EngineResponseError
    from pytest_specgate.engines.client import OpenAIClient as OpenAIClient
    from pytest_specgate.engines.client import telemetry_from_status as telemetry_from_status

_KIT: dict[str, str] = {
    # what a backend declares and returns
    **dict.fromkeys(("BootFunction", "EngineBackend"), "pytest_specgate.contracts.engine_backend"),
    **dict.fromkeys(("EngineOption", "OptionType"), "pytest_specgate.contracts.engine_options"),
    **dict.fromkeys(("Capabilities", "EngineProcess", "FaultInjection", "MissingCapability", "RawStatus",
                     "TelemetryReset", "WarmSwap"), "pytest_specgate.contracts.capabilities"),
    # what it starts its server with and talks to it through
    **dict.fromkeys(("ServerProcess", "start_server"), "pytest_specgate.engines.boot"),
    **dict.fromkeys(("ClientEngine", "EngineHTTPError", "EngineResponseError", "OpenAIClient",
                     "telemetry_from_status"), "pytest_specgate.engines.client"),
}
"""The names only a backend needs: they are not in ``pytest_specgate``."""

_EXPORTS: dict[str, str] = {
    **_KIT,
    # the engine contract, shared with spec authors (``pytest_specgate`` exports it too)
    **dict.fromkeys(("ChatResult", "Engine", "EngineBootError", "EngineStartupRefused", "StreamResult",
                     "Telemetry", "acceptance_rate_of"), "pytest_specgate.contracts.engine"),
    "EngineConfig": "pytest_specgate.contracts.engine_config",
}

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

__all__ = [*_EXPORTS]
