from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import pytest
from measure_fakes import FakeArm, FakeClock, FakeTelemetry, make_prompts

from pytest_specgate.measure.paired import arm_order, paired_schedule, run_paired
from pytest_specgate.measure.samples import Prompt


def _constant(seconds: float):  # type: ignore[no-untyped-def]
    def wall(prompt: Prompt, call: int, now: float) -> float:
        return seconds

    return wall


def test_arm_order_alternates_per_round() -> None:
    assert arm_order(0) == ("baseline", "candidate")
    assert arm_order(1) == ("candidate", "baseline")
    assert arm_order(2) == ("baseline", "candidate")


def test_schedule_puts_warmup_first_and_covers_every_prompt_each_round() -> None:
    schedule = paired_schedule(make_prompts(3), rounds=2, warmup=4)
    warm = [(s.prompt.id, s.first_arm) for s in schedule if s.warmup]
    assert warm == [("p0", "baseline"), ("p1", "candidate"), ("p2", "baseline"),
                    ("p0", "candidate")]
    measured = [(s.prompt.id, s.round_index, s.first_arm) for s in schedule if not s.warmup]
    assert measured == [
        ("p0", 0, "baseline"), ("p1", 0, "baseline"), ("p2", 0, "baseline"),
        ("p0", 1, "candidate"), ("p1", 1, "candidate"), ("p2", 1, "candidate"),
    ]


@pytest.mark.parametrize(
    ("prompts", "rounds", "warmup", "message"),
    [(0, 1, 0, "prompt set is empty"), (2, 0, 0, "rounds must be >= 1"),
     (2, 1, -1, "warmup must be >= 0")],
)
def test_schedule_rejects_bad_plans(prompts: int, rounds: int, warmup: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_schedule(make_prompts(prompts), rounds, warmup)


def test_run_interleaves_abab_and_flips_each_round(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    baseline = FakeArm("B", clock, log, _constant(2.0))
    candidate = FakeArm("C", clock, log, _constant(1.0))
    run_paired(baseline, candidate, make_prompts(2), rounds=2, warmup=1, clock=clock)
    assert log == [
        ("B", "p0"), ("C", "p0"),                          # warm-up, discarded
        ("B", "p0"), ("C", "p0"), ("B", "p1"), ("C", "p1"),  # round 0
        ("C", "p0"), ("B", "p0"), ("C", "p1"), ("B", "p1"),  # round 1
    ]


def test_warmup_samples_are_discarded(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []

    def slow_first_call(prompt: Prompt, call: int, now: float) -> float:
        return 50.0 if call == 0 else 2.0

    baseline = FakeArm("B", clock, log, slow_first_call)
    candidate = FakeArm("C", clock, log, _constant(1.0))
    run = run_paired(baseline, candidate, make_prompts(3), rounds=2, warmup=2, clock=clock)
    assert len(run.pairs) == 6
    assert all(pair.round_index >= 0 for pair in run.pairs)
    assert all(pair.baseline.sample.wall_s == 2.0 for pair in run.pairs)
    assert run.warmup_pairs_discarded == 2
    assert run.speedup().median == 2.0


def test_samples_carry_run_relative_times(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    baseline = FakeArm("B", clock, log, _constant(3.0))
    candidate = FakeArm("C", clock, log, _constant(1.0))
    run = run_paired(baseline, candidate, make_prompts(1), rounds=2, warmup=0, clock=clock)
    first, second = run.pairs
    assert (first.baseline.started_s, first.baseline.finished_s) == (0.0, 3.0)
    assert (first.candidate.started_s, first.candidate.finished_s) == (3.0, 4.0)
    assert (second.candidate.started_s, second.baseline.started_s) == (4.0, 5.0)
    assert run.elapsed_s == 8.0


def counting_telemetry(arm: FakeArm) -> FakeTelemetry:
    """4 drafted / 3 accepted per candidate request so far, like an engine would count."""
    return FakeTelemetry(4 * arm.calls, 3 * arm.calls)


def test_acceptance_covers_only_measured_candidate_runs(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    baseline = FakeArm("B", clock, log, _constant(2.0))
    candidate = FakeArm("C", clock, log, _constant(1.0))
    reads: list[tuple[int | None, int | None]] = []

    def read() -> FakeTelemetry:
        telemetry = counting_telemetry(candidate)
        reads.append((telemetry.drafted, telemetry.accepted))
        return telemetry

    run = run_paired(baseline, candidate, make_prompts(2), rounds=3, warmup=2,
                     candidate_telemetry=read, clock=clock)
    assert reads == [(8, 6), (32, 24)]
    assert run.acceptance is not None
    assert (run.acceptance.drafted, run.acceptance.accepted) == (24, 18)
    assert run.acceptance.acceptance_rate == pytest.approx(0.75)


def test_window_counting_uses_the_final_reading_alone(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    baseline = FakeArm("B", clock, log, _constant(2.0))
    candidate = FakeArm("C", clock, log, _constant(1.0))
    run = run_paired(baseline, candidate, make_prompts(1), rounds=1, warmup=1,
                     candidate_telemetry=lambda: counting_telemetry(candidate),
                     telemetry_counting="window", clock=clock)
    assert run.acceptance is not None
    assert (run.acceptance.drafted, run.acceptance.basis) == (8, "window")


@dataclass
class RecordingProgress:
    updates: list[tuple[int, float | None]]
    finished: list[tuple[int, float | None]]

    def update(self, requests_done: int, current_speedup: float | None) -> None:
        self.updates.append((requests_done, current_speedup))

    def finish(self, requests_done: int, current_speedup: float | None) -> None:
        self.finished.append((requests_done, current_speedup))


def test_progress_gets_requests_done_and_running_speedup(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []

    def baseline_wall(prompt: Prompt, call: int, now: float) -> float:
        return [9.0, 2.0, 4.0][call]

    baseline = FakeArm("B", clock, log, baseline_wall)
    candidate = FakeArm("C", clock, log, _constant(1.0))
    progress = RecordingProgress([], [])
    run_paired(baseline, candidate, make_prompts(2), rounds=1, warmup=1,
               progress=progress, clock=clock)
    assert progress.updates == [(2, None), (4, 2.0), (6, 3.0)]
    assert progress.finished == [(6, 3.0)]


def test_paired_run_to_dict_is_json(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    run = run_paired(FakeArm("B", clock, log, _constant(2.0)),
                     FakeArm("C", clock, log, _constant(1.0)),
                     make_prompts(3), rounds=2, warmup=1, clock=clock)
    data = json.loads(json.dumps(run.to_dict(), allow_nan=False))
    assert data["speedup"]["median"] == 2.0
    assert data["pooled_speedup"] == 2.0
    assert data["identity"] == {"identical": True, "checked": 6, "mismatched": 0,
                                "mismatches": []}
    assert len(data["pairs"]) == 6
    assert data["acceptance"] is None


def test_sample_records_digest_not_output(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    run = run_paired(
        FakeArm("B", clock, log, _constant(2.0)),
        FakeArm("C", clock, log, _constant(1.0)),
        make_prompts(1),
        rounds=1,
        warmup=0,
        clock=clock,
    )
    baseline = run.pairs[0].to_dict()["baseline"]
    assert isinstance(baseline, dict)
    assert "text" not in baseline and "token_ids" not in baseline
    assert baseline["text_sha256"] == hashlib.sha256(b"answer to p0").hexdigest()
    assert baseline["has_token_ids"] is True
    assert (baseline["arm"], baseline["tokens_per_s"]) == ("baseline", 50.0)
