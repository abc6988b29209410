"""pytest-specgate: executable acceptance criteria for LLM-serving features.

Everything a spec needs is importable from here (``from pytest_specgate import run_paired``);
docs/spec-authors.md is the guide. What only a backend package needs is in
``pytest_specgate.backends`` (docs/backends.md). Names resolve on first use, so importing the package (which
pytest does to load the plugin) stays cheap: engines, numpy and matplotlib load only when a
spec asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_specgate._lazy import lazy_getattr
from pytest_specgate._version import __version__

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import ChatResult as ChatResult
    from pytest_specgate.contracts.engine import Engine as Engine
    from pytest_specgate.contracts.engine import EngineBootError as EngineBootError
    from pytest_specgate.contracts.engine import EngineStartupRefused as EngineStartupRefused
    from pytest_specgate.contracts.engine import StreamResult as StreamResult
    from pytest_specgate.contracts.engine import Telemetry as Telemetry
    from pytest_specgate.contracts.engine import acceptance_rate_of as acceptance_rate_of
    from pytest_specgate.contracts.engine_config import EngineConfig as EngineConfig
    from pytest_specgate.evidence._recorder import EvidenceRecorder as EvidenceRecorder
    from pytest_specgate.evidence._recorder import Measurement as Measurement
    from pytest_specgate.examples import host_example_names as host_example_names
    from pytest_specgate.examples import host_examples_dir as host_examples_dir
    from pytest_specgate.fetching.tiny_models import TinyModelPair as TinyModelPair
    from pytest_specgate.fetching.tiny_models import TinyModelSpec as TinyModelSpec
    from pytest_specgate.fetching.tiny_models import tiny_model_pair as tiny_model_pair
    from pytest_specgate.measure import AcceptanceMeasurement as AcceptanceMeasurement
    from pytest_specgate.measure import ChatMessage as ChatMessage
    from pytest_specgate.measure import IdentityReport as IdentityReport
    from pytest_specgate.measure import MeasuredVsExpected as MeasuredVsExpected
    from pytest_specgate.measure import PairedRun as PairedRun
    from pytest_specgate.measure import ProgressReporter as ProgressReporter
    from pytest_specgate.measure import Prompt as Prompt
    from pytest_specgate.measure import PromptSet as PromptSet
    from pytest_specgate.measure import SpeedupEstimate as SpeedupEstimate
    from pytest_specgate.measure import SustainedArtifacts as SustainedArtifacts
    from pytest_specgate.measure import SustainedRun as SustainedRun
    from pytest_specgate.measure import SustainedSettings as SustainedSettings
    from pytest_specgate.measure import compare_to_expected as compare_to_expected
    from pytest_specgate.measure import engine_arm as engine_arm
    from pytest_specgate.measure import engine_telemetry as engine_telemetry
    from pytest_specgate.measure import expected_speedup as expected_speedup
    from pytest_specgate.measure import load_prompt_set as load_prompt_set
    from pytest_specgate.measure import run_paired as run_paired
    from pytest_specgate.measure import run_sustained as run_sustained
    from pytest_specgate.measure import write_sustained_artifacts as write_sustained_artifacts
    from pytest_specgate.plugin.options import duration_scale_of as duration_scale_of

_EXPORTS: dict[str, str] = {
    # engines: what the `engine`, `boot_engine` and `shared_engine` fixtures hand out
    "ChatResult": "contracts.engine",
    "Engine": "contracts.engine",
    "EngineBootError": "contracts.engine",
    "EngineConfig": "contracts.engine_config",
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
    "duration_scale_of": "plugin.options",
    "TinyModelPair": "fetching.tiny_models",
    "TinyModelSpec": "fetching.tiny_models",
    "tiny_model_pair": "fetching.tiny_models",
    "host_example_names": "examples",
    "host_examples_dir": "examples",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


# Type checkers read the names above (``X as X`` marks each as re-exported); at run time
# this table is the one list of public names.
__all__ = ["__version__", *_EXPORTS]
