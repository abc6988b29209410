"""pytest-specgate: executable acceptance criteria for LLM-serving features.

Everything a spec needs is importable from here (``from pytest_specgate import run_paired``);
docs/spec-authors.md is the guide. Names resolve on first use, so importing the package (which
pytest does to load the plugin) stays cheap: engines, numpy and matplotlib load only when a
spec asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_specgate._lazy import lazy_getattr
from pytest_specgate._version import __version__

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
    from pytest_specgate.contracts.engine_backend import BootFunction, EngineBackend
    from pytest_specgate.contracts.engine_config import EngineConfig
    from pytest_specgate.contracts.engine_options import EngineOption, OptionType
    from pytest_specgate.engines.boot import ServerProcess, start_server
    from pytest_specgate.engines.client import (
        ClientEngine,
        EngineHTTPError,
        OpenAIClient,
        telemetry_from_status,
    )
    from pytest_specgate.evidence._recorder import EvidenceRecorder, Measurement
    from pytest_specgate.examples import host_example_names, host_examples_dir
    from pytest_specgate.fetching.tiny_models import TinyModelPair, TinyModelSpec, tiny_model_pair
    from pytest_specgate.measure import (
        AcceptanceMeasurement,
        ChatMessage,
        IdentityReport,
        MeasuredVsExpected,
        PairedRun,
        ProgressReporter,
        Prompt,
        PromptSet,
        SpeedupEstimate,
        SustainedArtifacts,
        SustainedRun,
        SustainedSettings,
        compare_to_expected,
        engine_arm,
        engine_telemetry,
        expected_speedup,
        load_prompt_set,
        run_paired,
        run_sustained,
        write_sustained_artifacts,
    )
    from pytest_specgate.plugin import duration_scale_of

_EXPORTS: dict[str, str] = {
    # engines: what the `engine`, `boot_engine` and `shared_engine` fixtures hand out
    "ChatResult": "contracts.engine",
    "Engine": "contracts.engine",
    "EngineBootError": "contracts.engine",
    "EngineConfig": "contracts.engine_config",
    # backend kit: what a backend package implements, returns and starts its server with
    **dict.fromkeys(("Capabilities", "EngineProcess", "FaultInjection", "MissingCapability", "RawStatus",
                     "TelemetryReset", "WarmSwap"), "contracts.capabilities"),
    **dict.fromkeys(("BootFunction", "EngineBackend"), "contracts.engine_backend"),
    **dict.fromkeys(("EngineOption", "OptionType"), "contracts.engine_options"),
    **dict.fromkeys(("ServerProcess", "start_server"), "engines.boot"),
    **dict.fromkeys(("ClientEngine", "EngineHTTPError", "OpenAIClient", "telemetry_from_status"),
                    "engines.client"),
    "EngineStartupRefused": "contracts.engine",
    "StreamResult": "contracts.engine",
    "Telemetry": "contracts.engine",
    "acceptance_rate_of": "contracts.engine",
    # evidence: what the `evidence` fixture hands out
    "EvidenceRecorder": "evidence._recorder",
    "Measurement": "evidence._recorder",
    # measurement toolkit
    "AcceptanceMeasurement": "measure",
    "ChatMessage": "measure",
    "IdentityReport": "measure",
    "MeasuredVsExpected": "measure",
    "PairedRun": "measure",
    "ProgressReporter": "measure",
    "Prompt": "measure",
    "PromptSet": "measure",
    "SpeedupEstimate": "measure",
    "SustainedArtifacts": "measure",
    "SustainedRun": "measure",
    "SustainedSettings": "measure",
    "compare_to_expected": "measure",
    "engine_arm": "measure",
    "engine_telemetry": "measure",
    "expected_speedup": "measure",
    "load_prompt_set": "measure",
    "run_paired": "measure",
    "run_sustained": "measure",
    "write_sustained_artifacts": "measure",
    # run settings, tiny local models, shipped examples
    "duration_scale_of": "plugin",
    "TinyModelPair": "fetching.tiny_models",
    "TinyModelSpec": "fetching.tiny_models",
    "tiny_model_pair": "fetching.tiny_models",
    "host_example_names": "examples",
    "host_examples_dir": "examples",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


__all__ = [
    "AcceptanceMeasurement",
    "BootFunction",
    "Capabilities",
    "ChatMessage",
    "ChatResult",
    "ClientEngine",
    "Engine",
    "EngineBackend",
    "EngineBootError",
    "EngineConfig",
    "EngineHTTPError",
    "EngineOption",
    "EngineProcess",
    "EngineStartupRefused",
    "EvidenceRecorder",
    "FaultInjection",
    "IdentityReport",
    "MeasuredVsExpected",
    "Measurement",
    "MissingCapability",
    "OpenAIClient",
    "OptionType",
    "PairedRun",
    "ProgressReporter",
    "Prompt",
    "PromptSet",
    "RawStatus",
    "ServerProcess",
    "SpeedupEstimate",
    "StreamResult",
    "SustainedArtifacts",
    "SustainedRun",
    "SustainedSettings",
    "Telemetry",
    "TelemetryReset",
    "TinyModelPair",
    "TinyModelSpec",
    "WarmSwap",
    "__version__",
    "acceptance_rate_of",
    "compare_to_expected",
    "duration_scale_of",
    "engine_arm",
    "engine_telemetry",
    "expected_speedup",
    "host_example_names",
    "host_examples_dir",
    "load_prompt_set",
    "run_paired",
    "run_sustained",
    "start_server",
    "telemetry_from_status",
    "tiny_model_pair",
    "write_sustained_artifacts",
]
