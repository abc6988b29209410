"""The mock's counters: cumulative totals for /metrics and a since-last window for /v1/status.

The window is what an acceptance-rate spec reads: it resets on an admin roll, on
a configurable period, and at a target swap, and every count in it (requests,
tokens, drafted, accepted) covers exactly the same span of time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Counters", "TelemetryWindow"]


@dataclass
class Counters:
    """Mutable tallies; one instance per window plus one for the process lifetime."""

    requests: int = 0
    speculative_requests: int = 0
    baseline_requests: int = 0
    gated_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    drafts: int = 0
    drafted: int = 0
    accepted: int = 0
    draft_failures: int = 0
    accepted_per_position: list[int] = field(default_factory=list)
    gated_by_reason: dict[str, int] = field(default_factory=dict)

    def add_round(self, drafted: int, accepted: int, tokens: int) -> None:
        self.completion_tokens += tokens
        if drafted:
            self.drafts += 1
            self.drafted += drafted
            self.accepted += accepted
            per_position = self.accepted_per_position
            if len(per_position) < accepted:
                per_position.extend([0] * (accepted - len(per_position)))
            for position in range(accepted):
                per_position[position] += 1

    def add_request(self, prompt_tokens: int, speculative: bool, gated_reason: str | None) -> None:
        self.requests += 1
        self.prompt_tokens += prompt_tokens
        if speculative:
            self.speculative_requests += 1
        else:
            self.baseline_requests += 1
        if gated_reason is not None:
            self.gated_requests += 1
            self.gated_by_reason[gated_reason] = self.gated_by_reason.get(gated_reason, 0) + 1


class TelemetryWindow:
    """Since-last counters with roll/swap semantics, plus lifetime totals.

    ``epoch`` increases at every swap: a request admitted under an older epoch
    keeps counting in the totals but no longer in the window, so one window never
    mixes draft populations from before and after a swap.
    """

    def __init__(self, roll_period_s: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.roll_period_s = roll_period_s
        self.totals = Counters()
        self.window = Counters()
        self.window_started = clock()
        self.window_started_unix = time.time()
        self.epoch = 0
        self.rolls = 0
        self.swaps = 0
        self.previous: dict[str, object] | None = None

    def _expire(self) -> None:
        period = self.roll_period_s
        if period and self._clock() - self.window_started >= period:
            self.roll()

    def current(self, epoch: int) -> Counters | None:
        """The window to count into for a request of ``epoch`` (None once swapped out)."""
        self._expire()
        return self.window if epoch == self.epoch else None

    def roll(self) -> dict[str, object]:
        """Close the window and start a new one; returns the closed window's summary."""
        closed = self.summary()
        self.previous = closed
        self.window = Counters()
        self.window_started = self._clock()
        self.window_started_unix = time.time()
        self.rolls += 1
        return closed

    def swap(self, reset: bool) -> None:
        self.swaps += 1
        if reset:
            self.epoch += 1
            self.roll()

    def elapsed_s(self) -> float:
        return self._clock() - self.window_started

    def summary(self) -> dict[str, object]:
        window = self.window
        elapsed = max(self.elapsed_s(), 1e-9)
        return {
            "started_unix": self.window_started_unix,
            "elapsed_s": elapsed,
            "requests": window.requests,
            "speculative_requests": window.speculative_requests,
            "baseline_requests": window.baseline_requests,
            "gated_requests": window.gated_requests,
            "gated_by_reason": dict(window.gated_by_reason),
            "prompt_tokens": window.prompt_tokens,
            "completion_tokens": window.completion_tokens,
            "drafts": window.drafts,
            "drafted": window.drafted,
            "accepted": window.accepted,
            "accepted_per_position": list(window.accepted_per_position),
            "draft_failures": window.draft_failures,
            "requests_per_s": window.requests / elapsed,
            "tokens_per_s": window.completion_tokens / elapsed,
        }

    def status_window(self) -> dict[str, object]:
        self._expire()
        return self.summary()
