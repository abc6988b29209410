"""Mock engine settings: parsed once from an EngineConfig, checked fail-closed before serving.

The start-up checks run before any socket is opened, in the parent process too
for subprocess mode, so a refused configuration never leaves a server behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.contracts.engine_options import MOCK_OPTIONS
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import is_fraction, is_real, is_whole
from pytest_specgate.contracts.wire import FaultKind

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine_config import EngineConfig

__all__ = [
    "DEFAULT_DRAFT",
    "DEFAULT_GATED_FEATURES",
    "DEFAULT_TARGET",
    "FAULT_KINDS",
    "GATEABLE_FEATURES",
    "VIOLATIONS",
    "FaultSpec",
    "MockSettings",
    "check_startup",
    "fault_kind",
    "parse_fault_spec",
    "settings_from_config",
]

DEFAULT_TARGET = "specgate-mock-target"
DEFAULT_DRAFT = "specgate-mock-draft"
GATEABLE_FEATURES = ("logprobs", "n", "logit_bias", "tools", "response_format")
DEFAULT_GATED_FEATURES = GATEABLE_FEATURES
VIOLATIONS = (
    "corrupt-spec",
    "telemetry-off-by-one",
    "no-reset-on-swap",
    "gate-disabled",
    "disabled-drift",
    "slot-leak",
)
FAULT_KINDS = tuple(kind.value for kind in FaultKind)
ISOLATIONS = ("thread", "subprocess")



def fault_kind(name: str) -> FaultKind:
    """The FaultKind called ``name``; ValueError lists the kinds there are."""
    if name not in FAULT_KINDS:
        raise ValueError(f"unknown mock fault {name!r}; faults: {list(FAULT_KINDS)}")
    return FaultKind(name)


@dataclass(frozen=True)
class FaultSpec:
    """A transient fault armed for the next ``count`` generation requests."""

    kind: FaultKind
    count: int = 1
    seconds: float | None = None
    after_chunks: int = 2

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "count": self.count,
            "seconds": self.seconds,
            "after_chunks": self.after_chunks,
        }


@dataclass(frozen=True)
class MockSettings:
    """Everything the mock server needs, each field settable as an engine option.

    alpha: per-position draft agreement (the acceptance *rate* is lower: it counts
    only the agreeing prefix); num_draft_tokens: gamma; target_step_ms: simulated
    cost of one target forward pass (a verification round or a baseline token);
    draft_step_ms: cost per drafted token; vocab/draft_vocab: vocabulary names
    (different -> draft_model_tokenizer_mismatch); memory_budget_gb with
    target_size_gb + draft_size_gb + kv_cache_gb (short -> capacity refusal);
    gated_features: request features that force the baseline path; faults: a
    mix of violations (persistent) and transient faults ``kind[:count[:seconds]]``;
    roll_period_s: telemetry window period; speculation_support=False models a
    build without speculative decoding; isolation: "thread" or "subprocess".
    """

    target: str = DEFAULT_TARGET
    draft: str | None = None
    num_draft_tokens: int = 4
    alpha: float = 0.8
    target_step_ms: float = 0.0
    draft_step_ms: float = 0.0
    vocab: str = "words-v1"
    draft_vocab: str | None = None
    seed: int = 0
    eos_one_in: int = 64
    memory_budget_gb: float | None = None
    target_size_gb: float = 1.0
    draft_size_gb: float = 0.25
    kv_cache_gb: float = 0.5
    gated_features: tuple[str, ...] = DEFAULT_GATED_FEATURES
    faults: tuple[FaultSpec, ...] = ()
    violations: frozenset[str] = field(default_factory=frozenset)
    roll_period_s: float | None = None
    default_max_tokens: int = 64
    max_model_len: int = 4096
    speculation_support: bool = True
    isolation: str = "thread"
    boot_timeout_s: float = 30.0
    request_timeout_s: float = 60.0

    @property
    def speculative(self) -> bool:
        return self.draft is not None

    @property
    def effective_draft_vocab(self) -> str:
        return self.draft_vocab or self.vocab

    def with_target(self, target: str) -> MockSettings:
        return replace(self, target=target)

    def to_cli_options(self) -> list[str]:
        """``--option key=json`` arguments reproducing these settings in a subprocess."""
        import json

        values = {
            name: getattr(self, name)
            for name in sorted(MOCK_OPTIONS)
            if name not in {"faults", "violations", "gated_features", "isolation"}
        }
        values["gated_features"] = list(self.gated_features)
        argv: list[str] = ["--target", self.target]
        if self.draft is not None:
            argv += ["--draft", self.draft, "--num-draft-tokens", str(self.num_draft_tokens)]
        for name, value in values.items():
            argv += ["--option", f"{name}={json.dumps(value)}"]
        for fault in self.faults:
            argv += ["--fault", _fault_text(fault)]
        for violation in sorted(self.violations):
            argv += ["--fault", violation]
        return argv


def _fault_text(fault: FaultSpec) -> str:
    text = f"{fault.kind}:{fault.count}"
    if fault.seconds is not None:
        text += f":{fault.seconds}"
    return text


def parse_fault_spec(text: str) -> FaultSpec:
    """``kind[:count[:seconds]]``, e.g. ``reset``, ``error-500:3``, ``stall:1:5``."""
    kind, _, rest = text.partition(":")
    if kind not in FAULT_KINDS:
        raise ValueError(
            f"unknown mock fault {kind!r}; faults: {list(FAULT_KINDS)}, violations: {list(VIOLATIONS)}"
        )
    count_text, _, seconds_text = rest.partition(":")
    try:
        count = int(count_text) if count_text else 1
        seconds = float(seconds_text) if seconds_text else None
    except ValueError as exc:
        raise ValueError(f"bad mock fault {text!r}: expected kind[:count[:seconds]]") from exc
    if count < 1:
        raise ValueError(f"bad mock fault {text!r}: count must be >= 1")
    return FaultSpec(kind=FaultKind(kind), count=count, seconds=seconds)


def split_faults(names: Iterable[object]) -> tuple[tuple[FaultSpec, ...], frozenset[str]]:
    """Separate persistent violations from transient faults in one ``--fault`` list."""
    faults: list[FaultSpec] = []
    violations: set[str] = set()
    for name in names:
        if isinstance(name, FaultSpec):
            faults.append(name)
        elif isinstance(name, str) and name in VIOLATIONS:
            violations.add(name)
        elif isinstance(name, str):
            faults.append(parse_fault_spec(name))
        else:
            raise ValueError(f"mock fault must be a string like 'reset:2', got {name!r}")
    return tuple(faults), frozenset(violations)


def _names(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, Iterable) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"mock option {what} must be a name or a list of names, got {value!r}")


MAX_STEP_MS = 60_000.0
"""The longest simulated step: a request of 64 tokens then takes an hour at most, and a value
like ``1e308`` (which would make every request wait forever) is refused as out of range."""


def _number(options: Mapping[str, object], name: str, default: float) -> float:
    value = options.get(name, default)
    if not is_real(value):
        raise ValueError(f"mock option {name} must be a number, got {value!r}")
    return float(value)


def _integer(options: Mapping[str, object], name: str, default: int) -> int:
    value = options.get(name, default)
    if not is_whole(value):
        raise ValueError(f"mock option {name} must be an integer, got {value!r}")
    return value


def _optional_number(options: Mapping[str, object], name: str) -> float | None:
    return None if options.get(name) is None else _number(options, name, 0.0)


def settings_from_options(
    target: str | None,
    draft: str | None,
    num_draft_tokens: int | None,
    options: Mapping[str, object],
) -> MockSettings:
    """Validate option names, types and ranges; ValueError names the bad option."""
    unknown = sorted(set(options) - MOCK_OPTIONS.keys())
    if unknown:
        raise ValueError(f"unknown mock engine option(s) {unknown}; known: {sorted(MOCK_OPTIONS)}")
    gated = _names(options.get("gated_features", DEFAULT_GATED_FEATURES), "gated_features")
    bad_features = sorted(set(gated) - set(GATEABLE_FEATURES))
    if bad_features:
        raise ValueError(f"unknown gated feature(s) {bad_features}; known: {list(GATEABLE_FEATURES)}")
    faults, violations = split_faults(_names(options.get("faults", ()), "faults"))
    extra_violations = _names(options.get("violations", ()), "violations")
    bad_violations = sorted(set(extra_violations) - set(VIOLATIONS))
    if bad_violations:
        raise ValueError(f"unknown violation(s) {bad_violations}; known: {list(VIOLATIONS)}")
    alpha = _number(options, "alpha", 0.8)
    if not is_fraction(alpha):
        raise ValueError(f"mock option alpha must be within [0, 1], got {alpha}")
    gamma = 4 if num_draft_tokens is None else num_draft_tokens
    if gamma < 1:
        raise ValueError(f"num_draft_tokens must be >= 1, got {gamma}")
    isolation = options.get("isolation", "thread")
    if isolation not in ISOLATIONS:
        raise ValueError(f"mock option isolation must be one of {list(ISOLATIONS)}, got {isolation!r}")
    speculation_support = options.get("speculation_support", True)
    if not isinstance(speculation_support, bool):
        raise ValueError(f"mock option speculation_support must be a bool, got {speculation_support!r}")
    vocab = options.get("vocab", "words-v1")
    draft_vocab = options.get("draft_vocab")
    if not isinstance(vocab, str) or not (draft_vocab is None or isinstance(draft_vocab, str)):
        raise ValueError("mock options vocab and draft_vocab must be vocabulary names")
    settings = MockSettings(
        target=target or DEFAULT_TARGET,
        draft=draft,
        num_draft_tokens=gamma,
        alpha=alpha,
        target_step_ms=_number(options, "target_step_ms", 0.0),
        draft_step_ms=_number(options, "draft_step_ms", 0.0),
        vocab=vocab,
        draft_vocab=draft_vocab,
        seed=_integer(options, "seed", 0),
        eos_one_in=_integer(options, "eos_one_in", 64),
        memory_budget_gb=_optional_number(options, "memory_budget_gb"),
        target_size_gb=_number(options, "target_size_gb", 1.0),
        draft_size_gb=_number(options, "draft_size_gb", 0.25),
        kv_cache_gb=_number(options, "kv_cache_gb", 0.5),
        gated_features=gated,
        faults=faults,
        violations=violations | frozenset(extra_violations),
        roll_period_s=_optional_number(options, "roll_period_s"),
        default_max_tokens=_integer(options, "default_max_tokens", 64),
        max_model_len=_integer(options, "max_model_len", 4096),
        speculation_support=speculation_support,
        isolation=str(isolation),
        boot_timeout_s=_number(options, "boot_timeout_s", 30.0),
        request_timeout_s=_number(options, "request_timeout_s", 60.0),
    )
    for name in ("target_step_ms", "draft_step_ms", "eos_one_in"):
        if getattr(settings, name) < 0:
            raise ValueError(f"mock option {name} must be >= 0, got {getattr(settings, name)}")
    for name in ("target_step_ms", "draft_step_ms"):
        value = getattr(settings, name)
        if not value <= MAX_STEP_MS:
            raise ValueError(
                f"mock option {name} must be within [0, {MAX_STEP_MS:g}] ms (a minute per step), "
                f"got {value:g}"
            )
    return settings


def settings_from_config(config: EngineConfig) -> MockSettings:
    """MockSettings for an EngineConfig; a bad option is a SpecgateInputError naming the engine."""
    where = f"mock engine ({config.describe()})"
    try:
        settings = settings_from_options(
            config.target, config.draft, config.num_draft_tokens, dict(config.options)
        )
    except ValueError as exc:
        raise SpecgateInputError(f"{where}: {exc}", where=where) from exc
    if settings.isolation == "thread" and any(fault.kind is FaultKind.CRASH for fault in settings.faults):
        raise SpecgateInputError(
            f"{where}: the crash fault would end this pytest process; add isolation='subprocess'",
            where=where, expected="isolation='subprocess' with the crash fault", found="isolation='thread'",
        )
    return settings


def check_startup(settings: MockSettings) -> None:
    """Fail closed, as a real engine must, before serving anything.

    Raises EngineStartupRefused with ``draft_model_tokenizer_mismatch`` when the
    draft's vocabulary differs from the target's, ``draft_model_capacity_shortfall``
    when target + draft + KV cache exceed the memory budget, and
    ``speculation_unsupported`` when a build without speculation is given a draft.
    """
    from pytest_specgate.engines.mock.model import vocabulary_named

    target_vocab = vocabulary_named(settings.vocab)
    if settings.draft is not None and not settings.speculation_support:
        raise EngineStartupRefused(
            "speculation_unsupported",
            f"draft model {settings.draft} given to a mock build without speculative decoding",
        )
    if settings.draft is not None:
        draft_vocab = vocabulary_named(settings.effective_draft_vocab)
        if draft_vocab.digest != target_vocab.digest:
            raise EngineStartupRefused(
                "draft_model_tokenizer_mismatch",
                f"draft model {settings.draft} vocabulary {draft_vocab.name} "
                f"({draft_vocab.size} tokens, digest {draft_vocab.digest}) differs from target "
                f"model {settings.target} vocabulary {target_vocab.name} "
                f"({target_vocab.size} tokens, digest {target_vocab.digest})",
            )
    if settings.memory_budget_gb is None:
        return
    draft_gb = settings.draft_size_gb if settings.draft is not None else 0.0
    needed = settings.target_size_gb + draft_gb + settings.kv_cache_gb
    if settings.memory_budget_gb < needed:
        code = "draft_model_capacity_shortfall" if settings.draft is not None else "model_capacity_shortfall"
        draft_part = f" + draft {settings.draft} {draft_gb:.2f} GB" if settings.draft is not None else ""
        raise EngineStartupRefused(
            code,
            f"memory budget {settings.memory_budget_gb:.2f} GB is below what is needed: "
            f"target {settings.target} {settings.target_size_gb:.2f} GB{draft_part} "
            f"+ KV cache {settings.kv_cache_gb:.2f} GB = {needed:.2f} GB",
        )
