"""Measurement toolkit: paired A/B runs, statistics, sustained window, analytic expectation.

Every runner takes plain callables, so it works with any engine (see
:mod:`pytest_specgate.measure.engine_arms`) and with test fakes. numpy, scipy and
matplotlib are imported only by the functions that need them.
"""

from __future__ import annotations

from pytest_specgate.contracts.thresholds import Threshold
from pytest_specgate.measure.cost_model import (
    CostModelError,
    CostParameters,
    SpeedupExplanation,
    explain_speedup,
    write_attribution_plot,
)
from pytest_specgate.measure.engine_arms import arm_caching, engine_arm, engine_telemetry
from pytest_specgate.measure.expected import (
    FiniteHorizon,
    MeasuredVsExpected,
    SpeedupExpectation,
    alpha_from_acceptance_rate,
    compare_to_expected,
    expectation,
    expectation_for_acceptance_rate,
    expected_acceptance_rate,
    expected_speedup,
    expected_tokens_per_round,
    finite_horizon,
)
from pytest_specgate.measure.latency import LatencySummary, RatioEstimate, latency_summary, ttft_samples
from pytest_specgate.measure.paired import (
    CacheSettings,
    PairedRun,
    PromptRunner,
    TelemetryReader,
    UnfairArms,
    arm_order,
    paired_schedule,
    run_paired,
)
from pytest_specgate.measure.pinned import (
    FixtureFileError,
    ModelPair,
    PinnedModel,
    PromptSet,
    load_model_pairs,
    load_named_prompt_set,
    load_prompt_set,
    model_pair,
    project_fixtures_dir,
)
from pytest_specgate.measure.positions import (
    PositionAcceptance,
    position_acceptance,
    write_position_plot,
)
from pytest_specgate.measure.progress import ProgressReporter, ProgressSink, TextSink
from pytest_specgate.measure.samples import (
    ChatMessage,
    Prompt,
    RequestSample,
    SamplePair,
    TimedSample,
)
from pytest_specgate.measure.sequential import (
    SequentialEstimate,
    SequentialStop,
    median_confidence_sequence,
)
from pytest_specgate.measure.statistics import (
    AcceptanceMeasurement,
    IdentityCheck,
    IdentityReport,
    PromptSpeedup,
    SpeedupEstimate,
    acceptance_from_telemetry,
    first_difference,
    identity_check,
    identity_report,
    median_speedup,
    per_prompt_speedups,
    pooled_speedup,
)
from pytest_specgate.measure.sustained import (
    SustainedArtifacts,
    SustainedRun,
    SustainedSettings,
    pairs_in_last_window,
    run_sustained,
    throughput_series,
    write_sustained_artifacts,
)

__all__ = [
    "AcceptanceMeasurement",
    "CacheSettings",
    "ChatMessage",
    "CostModelError",
    "CostParameters",
    "FiniteHorizon",
    "FixtureFileError",
    "IdentityCheck",
    "IdentityReport",
    "LatencySummary",
    "MeasuredVsExpected",
    "ModelPair",
    "PairedRun",
    "PinnedModel",
    "PositionAcceptance",
    "ProgressReporter",
    "ProgressSink",
    "Prompt",
    "PromptRunner",
    "PromptSet",
    "PromptSpeedup",
    "RatioEstimate",
    "RequestSample",
    "SamplePair",
    "SequentialEstimate",
    "SequentialStop",
    "SpeedupEstimate",
    "SpeedupExpectation",
    "SpeedupExplanation",
    "SustainedArtifacts",
    "SustainedRun",
    "SustainedSettings",
    "TelemetryReader",
    "TextSink",
    "Threshold",
    "TimedSample",
    "UnfairArms",
    "acceptance_from_telemetry",
    "alpha_from_acceptance_rate",
    "arm_caching",
    "arm_order",
    "compare_to_expected",
    "engine_arm",
    "engine_telemetry",
    "expectation",
    "expectation_for_acceptance_rate",
    "expected_acceptance_rate",
    "expected_speedup",
    "expected_tokens_per_round",
    "explain_speedup",
    "finite_horizon",
    "first_difference",
    "identity_check",
    "identity_report",
    "latency_summary",
    "load_model_pairs",
    "load_named_prompt_set",
    "load_prompt_set",
    "median_confidence_sequence",
    "median_speedup",
    "model_pair",
    "paired_schedule",
    "pairs_in_last_window",
    "per_prompt_speedups",
    "pooled_speedup",
    "position_acceptance",
    "project_fixtures_dir",
    "run_paired",
    "run_sustained",
    "throughput_series",
    "ttft_samples",
    "write_attribution_plot",
    "write_position_plot",
    "write_sustained_artifacts",
]
