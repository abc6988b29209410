from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from measure_fakes import FakeClock, FakeTelemetry, make_prompts

from pytest_specgate.contracts.engine import StreamResult
from pytest_specgate.measure.engine_arms import engine_arm, engine_telemetry
from pytest_specgate.measure.paired import run_paired


def _events(words: list[str], *, usage: int | None, ids: bool) -> Iterator[dict[str, object]]:
    for index, word in enumerate(words):
        choice: dict[str, object] = {"index": 0, "delta": {"content": word}}
        if ids:
            choice["token_ids"] = [index + 10]
        yield {"choices": [choice]}
    final: dict[str, object] = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    if usage is not None:
        final["usage"] = {"prompt_tokens": 3, "completion_tokens": usage}
    yield final


@dataclass
class FakeStreamingEngine:
    """Streams canned words; each delta costs ``step_s`` on the fake clock."""

    clock: FakeClock
    words: list[str]
    usage: int | None = None
    ids: bool = False
    step_s: float = 0.5
    requests: list[tuple[list[dict[str, object]], dict[str, object]]] = field(
        default_factory=list)

    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamResult:
        self.requests.append((messages, params))
        started = self.clock()

        def timed() -> Iterator[dict[str, object]]:
            for event in _events(self.words, usage=self.usage, ids=self.ids):
                self.clock.advance(self.step_s)
                yield event

        return StreamResult(timed(), started=started, clock=self.clock)


def test_arm_streams_greedy_with_the_prompt_budget(clock: FakeClock) -> None:
    engine = FakeStreamingEngine(clock, ["a", "b", "c"], usage=3)
    prompt = make_prompts(1)[0]
    sample = engine_arm(engine, clock=clock)(prompt)
    messages, params = engine.requests[0]
    assert messages == [{"role": "user", "content": "question 0"}]
    assert params == {"temperature": 0.0, "max_tokens": 32}
    assert sample.text == "abc"
    assert (sample.output_tokens, sample.token_count_source) == (3, "usage")
    assert sample.wall_s == pytest.approx(2.0)   # 4 events x 0.5 s
    assert sample.ttft_s == pytest.approx(0.5)
    assert sample.tokens_per_s == pytest.approx(1.5)


def test_arm_passes_overrides_and_extra_params(clock: FakeClock) -> None:
    engine = FakeStreamingEngine(clock, ["a"], usage=1)
    engine_arm(engine, max_tokens=7, clock=clock, seed=3)(make_prompts(1)[0])
    assert engine.requests[0][1] == {"temperature": 0.0, "max_tokens": 7, "seed": 3}


def test_token_count_falls_back_to_ids_then_deltas(clock: FakeClock) -> None:
    with_ids = engine_arm(FakeStreamingEngine(clock, ["x", "y"], ids=True), clock=clock)
    sample = with_ids(make_prompts(1)[0])
    assert (sample.output_tokens, sample.token_count_source) == (2, "token_ids")
    assert sample.token_ids == (10, 11)
    bare = engine_arm(FakeStreamingEngine(clock, ["x", "y", "z"]), clock=clock)
    sample = bare(make_prompts(1)[0])
    assert (sample.output_tokens, sample.token_count_source) == (3, "stream_deltas")
    assert sample.token_ids is None


def test_engine_arms_drive_a_paired_run(clock: FakeClock) -> None:
    baseline = FakeStreamingEngine(clock, ["w"] * 4, usage=4, step_s=0.4)
    candidate = FakeStreamingEngine(clock, ["w"] * 4, usage=4, step_s=0.2)

    @dataclass
    class CandidateWithTelemetry:
        engine: FakeStreamingEngine

        def telemetry(self) -> FakeTelemetry:
            return FakeTelemetry(drafted=8 * len(self.engine.requests),
                                 accepted=6 * len(self.engine.requests))

    run = run_paired(engine_arm(baseline, clock=clock), engine_arm(candidate, clock=clock),
                     make_prompts(2), rounds=1, warmup=1,
                     candidate_telemetry=engine_telemetry(CandidateWithTelemetry(candidate)),
                     clock=clock)
    assert run.speedup().median == pytest.approx(2.0)
    assert run.identity().identical
    assert run.acceptance is not None and run.acceptance.acceptance_rate == pytest.approx(0.75)
