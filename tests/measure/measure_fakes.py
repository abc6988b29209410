"""Fakes for the measurement tests: a manual clock, arms that advance it and a telemetry reading."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_specgate.measure.samples import ChatMessage, Prompt, RequestSample


@dataclass
class FakeClock:
    """A clock that only moves when told to, so timing tests never sleep."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeArm:
    """An arm whose request takes ``wall_for(prompt, call_index)`` fake seconds.

    Every call is appended to the shared ``log`` as ``(arm name, prompt id)``.
    """

    name: str
    clock: FakeClock
    log: list[tuple[str, str]]
    wall_for: Callable[[Prompt, int, float], float]
    tokens: int = 100
    calls: int = field(default=0)

    def __call__(self, prompt: Prompt) -> RequestSample:
        wall = self.wall_for(prompt, self.calls, self.clock.now)
        self.calls += 1
        self.log.append((self.name, prompt.id))
        self.clock.advance(wall)
        return RequestSample(
            wall_s=wall,
            ttft_s=wall / 10,
            output_tokens=self.tokens,
            text=f"answer to {prompt.id}",
            token_ids=tuple(range(self.tokens)),
        )


def make_prompts(count: int) -> tuple[Prompt, ...]:
    return tuple(
        Prompt(f"p{index}", (ChatMessage("user", f"question {index}"),), 32)
        for index in range(count)
    )


@dataclass(frozen=True)
class FakeTelemetry:
    """One reading of an engine's speculative-decoding counters (``TelemetryLike``)."""

    drafted: int | None = 0
    accepted: int | None = 0
    available: bool = True
    window: str = "since_last_roll"
    source: str = "/v1/status"
    drafts: int | None = None
    accepted_per_position: tuple[int, ...] | None = None
