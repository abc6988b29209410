"""The mock server's mutable state: current models, telemetry window, faults, violations, slots.

One MockState lives per server; the routes read and change it, the exposition
reports it, and nothing else holds server state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.contracts.wire import FaultKind
from pytest_specgate.engines.mock.faults import CRASH_NEEDS_OWN_PROCESS, FaultBoard, LateReplies
from pytest_specgate.engines.mock.generation import GenerationSetup
from pytest_specgate.engines.mock.model import DraftModel, TargetModel, Vocabulary, vocabulary_named
from pytest_specgate.engines.mock.requests import GenerationRequest
from pytest_specgate.engines.mock.settings import MockSettings, check_startup
from pytest_specgate.engines.mock.telemetry import TelemetryWindow

__all__ = ["MockState", "Slots"]


@dataclass
class Slots:
    """Generation slots: active now, freed so far, and how many ended by a client cancel."""

    active: int = 0
    peak: int = 0
    freed: int = 0
    cancelled: int = 0

    def acquire(self) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)

    def release(self, cancelled: bool) -> None:
        self.active -= 1
        self.freed += 1
        if cancelled:
            self.cancelled += 1


class MockState:
    """Mutable server state: current models, telemetry window, faults, violations, slots."""

    def __init__(
        self,
        settings: MockSettings,
        *,
        allow_crash: bool,
        log: Callable[[str], None] | None = None,
    ) -> None:
        check_startup(settings)
        if not allow_crash and any(fault.kind is FaultKind.CRASH for fault in settings.faults):
            raise ValueError(CRASH_NEEDS_OWN_PROCESS)
        self.settings = settings
        self.allow_crash = allow_crash
        self._log = log
        self.vocab: Vocabulary = vocabulary_named(settings.vocab)
        self.target = TargetModel(settings.target, self.vocab, settings.seed, settings.eos_one_in)
        self.draft: DraftModel | None = (
            DraftModel(settings.draft, self.vocab, settings.alpha, settings.seed)
            if settings.draft is not None
            else None
        )
        self.telemetry = TelemetryWindow(settings.roll_period_s)
        self.faults = FaultBoard()
        for fault in settings.faults:
            self.faults.arm(fault)
        self.violations: set[str] = set(settings.violations)
        self.slots = Slots()
        self.late_replies = LateReplies()
        self.created = int(time.time())
        self._next_id = 0
        self._sample_seed = settings.seed
        self.event(
            f"started target={settings.target} draft={settings.draft} gamma={settings.num_draft_tokens} "
            f"alpha={settings.alpha} target_step_ms={settings.target_step_ms} "
            f"draft_step_ms={settings.draft_step_ms} violations={sorted(self.violations)} "
            f"faults={[fault.to_dict() for fault in settings.faults]}"
        )

    def event(self, message: str) -> None:
        """Record an admin action, fault or start-up line in the engine log (never per request)."""
        if self._log is not None:
            self._log(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} mock-engine {message}")

    def next_id(self, prefix: str) -> str:
        self._next_id += 1
        return f"{prefix}-{self._next_id:016x}"

    def response_id(self, request: GenerationRequest) -> str:
        return self.next_id("chatcmpl" if request.chat else "cmpl")

    def drift_fields(self) -> dict[str, object]:
        """The ``disabled-drift`` violation: a draft-less engine leaks a field the build before lacked."""
        if "disabled-drift" in self.violations and self.draft is None and self.settings.speculation_support:
            return {"system_fingerprint": "spec-decode-off"}
        return {}

    def next_sample_seed(self) -> int:
        self._sample_seed += 1
        return self._sample_seed

    def gate_reason(self, request: GenerationRequest) -> str | None:
        """Why a request must take the baseline path (None: it may speculate)."""
        if not request.params.greedy:
            return "temperature"
        for feature in request.features:
            if feature in self.settings.gated_features:
                return feature
        return None

    def generation_setup(self, request: GenerationRequest) -> GenerationSetup:
        """What a generation of ``request`` reads of this state, taken now."""
        gate_reason = self.gate_reason(request)
        return GenerationSetup(
            target=self.target, draft=self.draft, vocab=self.vocab, settings=self.settings,
            corrupt="corrupt-spec" in self.violations, gate_reason=gate_reason,
            speculative=self.speculates(gate_reason), telemetry=self.telemetry,
        )

    def speculates(self, gate_reason: str | None) -> bool:
        if self.draft is None:
            return False
        return gate_reason is None or "gate-disabled" in self.violations

    def swap_target(self, target: str, vocab_name: str | None) -> dict[str, object]:
        vocab = vocabulary_named(vocab_name or self.vocab.name)
        if self.draft is not None and vocab.digest != self.draft.vocab.digest:
            raise EngineStartupRefused(
                "draft_model_tokenizer_mismatch",
                f"swap target {target} vocabulary {vocab.name} differs from draft model "
                f"{self.draft.model_id} vocabulary {self.draft.vocab.name}",
            )
        previous = self.target.model_id
        self.vocab = vocab
        self.target = TargetModel(target, vocab, self.settings.seed, self.settings.eos_one_in)
        self.settings = self.settings.with_target(target)
        self.telemetry.swap(reset="no-reset-on-swap" not in self.violations)
        return {"previous": previous, "target": target, "swaps": self.telemetry.swaps}

    def release_slot(self, cancelled: bool) -> None:
        """Free a request's slot; the ``slot-leak`` violation keeps cancelled ones held."""
        if cancelled and "slot-leak" in self.violations:
            self.slots.cancelled += 1
            return
        self.slots.release(cancelled)

    def reported_accepted(self, accepted: int) -> int:
        """Accepted count as reported, i.e. with the off-by-one violation applied."""
        return accepted + 1 if "telemetry-off-by-one" in self.violations else accepted
