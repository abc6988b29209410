"""Fault gates: provoke a fault, then prove recovery by evidence, not by a 200.

Each gate provokes one fault through a :class:`FaultInjector` (the mock's
fault-injection admin API, or client-side faults any engine can take), then
demands evidence that the engine recovered: a later greedy request succeeds and
matches its pre-fault reference token for token, the engine's request counter
advanced, the slot the fault held was freed, and - where the engine counts them -
the cancel was seen as a cancel. ``greedy_restore`` closes the series with the
"greedy N/N identical" check over every fixed prompt.

The injectors live in ``_injectors``, the counters in ``_recovery``, greedy
outputs in ``_greedy``; their names stay importable from here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from pytest_specgate.qualification._budget import GateSpec
from pytest_specgate.qualification._greedy import (
    GREEDY_PROMPTS,
    GreedyOutput,
    Messages,
    compare_greedy,
    messages_for,
)
from pytest_specgate.qualification._injectors import (
    ClientFaultInjector,
    FaultInjector,
    MockFaultInjector,
    injector_for,
)
from pytest_specgate.qualification._recovery import (
    CounterProbe,
    CounterReading,
    FaultObservation,
    HttpCounterProbe,
    RecoveryNotEvidenced,
    counter_problems,
)

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine

__all__ = [
    "FAULT_GATES",
    "GREEDY_PROMPTS",
    "ClientFaultInjector",
    "CounterProbe",
    "CounterReading",
    "FaultGates",
    "FaultInjector",
    "FaultObservation",
    "GreedyOutput",
    "HttpCounterProbe",
    "MockFaultInjector",
    "RecoveryNotEvidenced",
    "compare_greedy",
    "fault_gate_specs",
    "injector_for",
]

FAULT_GATES: Final = (
    "cancel_stream",
    "connection_reset",
    "reconnect",
    "client_timeout",
    "late_reply_after_cancel",
)

def fault_gate_specs(estimated_s: float = 10.0) -> tuple[GateSpec, ...]:
    """GateSpecs for the reference, the five fault gates and the restore check, in order."""
    return (
        GateSpec("greedy_reference", estimated_s, kind="greedy"),
        *(GateSpec(name, estimated_s, kind="fault") for name in FAULT_GATES),
        GateSpec("greedy_restore", estimated_s, kind="greedy"),
    )


class FaultGates:
    """The fault gates for one engine; call :meth:`greedy_reference` before any fault."""

    def __init__(
        self,
        engine: Engine,
        *,
        injector: FaultInjector | None = None,
        probe: CounterProbe | None = None,
        prompts: Sequence[str] = GREEDY_PROMPTS,
        max_tokens: int = 16,
        settle_s: float = 5.0,
        require_counters: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if len(prompts) < 2:
            raise ValueError(f"fault gates need at least 2 fixed prompts, found {len(prompts)}")
        self.engine = engine
        self.injector = injector if injector is not None else injector_for(engine)
        self.probe = probe if probe is not None else HttpCounterProbe(engine.base_url)
        self.prompts = tuple(prompts)
        self.max_tokens = max_tokens
        self.settle_s = settle_s
        self.require_counters = require_counters
        self._clock = clock
        self._sleep = sleep
        self._reference: tuple[GreedyOutput, ...] | None = None
        self._faults_run = 0

    def _greedy(self, prompt: str) -> GreedyOutput:
        result = self.engine.chat(messages_for(prompt), temperature=0.0, max_tokens=self.max_tokens)
        return GreedyOutput(
            prompt, result.text, result.token_ids, result.finish_reason, result.completion_tokens
        )

    def greedy_reference(self) -> dict[str, object]:
        """Greedy outputs on every fixed prompt before any fault: what recovery is compared to."""
        outputs = tuple(self._greedy(prompt) for prompt in self.prompts)
        empty = [o.prompt for o in outputs if not o.text and not o.token_ids]
        evidence = {"prompts": len(outputs), "outputs": [o.to_dict() for o in outputs]}
        if empty:
            raise RecoveryNotEvidenced(f"greedy_reference: empty output for {empty}", evidence)
        self._reference = outputs
        return evidence

    def _reference_or_fail(self, gate: str) -> tuple[GreedyOutput, ...]:
        if self._reference is None:
            raise RecoveryNotEvidenced(
                f"{gate}: no greedy reference; run the greedy_reference gate before any fault gate", {}
            )
        return self._reference

    def _settled(self, before: CounterReading) -> tuple[CounterReading, float]:
        started = self._clock()
        reading = self.probe.read()
        while (
            before.slots_active is not None
            and reading.slots_active is not None
            and reading.slots_active > before.slots_active
            and self._clock() - started < self.settle_s
        ):
            self._sleep(0.05)
            reading = self.probe.read()
        return reading, self._clock() - started

    def _fault_gate(
        self, gate: str, provoke: Callable[[Engine, Messages], FaultObservation]
    ) -> dict[str, object]:
        reference = self._reference_or_fail(gate)
        before = self.probe.read()
        problems: list[str] = []
        if self.require_counters and (before.requests_total is None or before.slots_active is None):
            problems.append(
                f"the engine exposes no request/slot counters ({before.source}); recovery cannot be "
                "evidenced (pass require_counters=False to accept that)"
            )
        observation = provoke(self.engine, messages_for(self.prompts[0]))
        if not observation.provoked:
            problems.append(f"the fault was not provoked: {observation.detail}")
        after_fault = self.probe.read()
        later_index = 1 + self._faults_run % (len(self.prompts) - 1)
        self._faults_run += 1
        evidence: dict[str, object] = {
            "gate": gate,
            "injector": self.injector.name,
            "fault": observation.detail,
            "provoked": observation.provoked,
            "counters_before": before.to_dict(),
            "counters_after_fault": after_fault.to_dict(),
        }
        try:
            later = self._greedy(self.prompts[later_index])
        except Exception as exc:  # the engine failing this request is the finding, not a crash of the gate
            problems.append(f"the request after the fault failed: {type(exc).__name__}: {exc}")
        else:
            evidence["later_request"] = later.to_dict()
            mismatch = compare_greedy(reference[later_index], later)
            if mismatch is not None:
                evidence["greedy_mismatch"] = mismatch
                problems.append(
                    f"greedy output after the fault differs from before it at {mismatch['unit']} "
                    f"{mismatch['first_difference']} (prompt {later.prompt!r})"
                )
        after, waited = self._settled(before)
        evidence["counters_after"] = after.to_dict()
        evidence["settle_waited_s"] = round(waited, 3)
        problems += counter_problems(before, after_fault, after, observation, self.settle_s)
        evidence["recovered"] = not problems
        if problems:
            raise RecoveryNotEvidenced(f"{gate}: " + "; ".join(problems), evidence)
        return evidence

    def cancel_stream(self) -> dict[str, object]:
        return self._fault_gate("cancel_stream", self.injector.cancel_stream)

    def connection_reset(self) -> dict[str, object]:
        return self._fault_gate("connection_reset", self.injector.connection_reset)

    def reconnect(self) -> dict[str, object]:
        return self._fault_gate("reconnect", self.injector.reconnect)

    def client_timeout(self) -> dict[str, object]:
        return self._fault_gate("client_timeout", self.injector.client_timeout)

    def late_reply_after_cancel(self) -> dict[str, object]:
        return self._fault_gate("late_reply_after_cancel", self.injector.late_reply_after_cancel)

    def greedy_restore(self) -> dict[str, object]:
        """Greedy N/N identical: every fixed prompt gives its pre-fault output again."""
        reference = self._reference_or_fail("greedy_restore")
        mismatches: list[dict[str, object]] = []
        failures: list[str] = []
        for before in reference:
            try:
                after = self._greedy(before.prompt)
            except Exception as exc:  # the engine failing this request is the finding
                failures.append(f"{before.prompt!r}: {type(exc).__name__}: {exc}")
                continue
            mismatch = compare_greedy(before, after)
            if mismatch is not None:
                mismatches.append(mismatch)
        identical = len(reference) - len(mismatches) - len(failures)
        summary = f"greedy {identical}/{len(reference)} identical"
        evidence: dict[str, object] = {
            "summary": summary,
            "identical": identical,
            "prompts": len(reference),
            "mismatches": mismatches,
            "failures": failures,
        }
        if identical != len(reference):
            first = mismatches[0] if mismatches else None
            where = (
                f"; first mismatch on {first['prompt']!r} at {first['unit']} {first['first_difference']}"
                if first is not None
                else f"; {failures[0]}"
            )
            raise RecoveryNotEvidenced(f"greedy_restore: {summary}{where}", evidence)
        return evidence
