from __future__ import annotations

import json
from pathlib import Path

import pytest
from measure_fakes import FakeArm, FakeClock, make_prompts

from pytest_specgate.contracts.thresholds import Threshold
from pytest_specgate.measure.samples import Prompt, RequestSample, SamplePair, TimedSample
from pytest_specgate.measure.sustained import (
    SustainedRun,
    SustainedSettings,
    pairs_in_last_window,
    run_sustained,
    throughput_figure,
    throughput_series,
    write_sustained_artifacts,
)


def _pair(index: int, started: float, finished: float, speedup: float) -> SamplePair:
    middle = (started + finished) / 2
    return SamplePair(
        f"p{index}", 0, "baseline",
        TimedSample("baseline", f"p{index}", 0, started, middle,
                    RequestSample(wall_s=1.0, ttft_s=None, output_tokens=10, text="")),
        TimedSample("candidate", f"p{index}", 0, middle, finished,
                    RequestSample(wall_s=1.0 / speedup, ttft_s=None, output_tokens=10, text="")),
    )


def test_last_window_keeps_pairs_overlapping_the_window() -> None:
    pairs = [_pair(0, 0, 10, 2.0), _pair(1, 10, 20, 2.0), _pair(2, 20, 30, 2.0),
             _pair(3, 30, 40, 2.0)]
    assert [p.prompt_id for p in pairs_in_last_window(pairs, 15.0, 40.0)] == ["p2", "p3"]
    assert [p.prompt_id for p in pairs_in_last_window(pairs, 20.0, 40.0)] == ["p2", "p3"]
    assert [p.prompt_id for p in pairs_in_last_window(pairs, 20.5, 40.0)] == ["p1", "p2", "p3"]


def test_a_window_shorter_than_one_pair_still_holds_the_last_pair() -> None:
    pairs = [_pair(0, 0, 10, 2.0), _pair(1, 10, 20, 3.0)]
    assert [p.prompt_id for p in pairs_in_last_window(pairs, 0.5, 20.0)] == ["p1"]


def test_settings_scale_both_durations() -> None:
    settings = SustainedSettings(scale=0.01)
    assert (settings.scaled_duration_s, settings.scaled_last_window_s) == (3.0, 0.6)
    assert SustainedSettings().to_dict()["duration_s"] == 300.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"scale": 0.0}, "duration scale must be > 0"),
     ({"duration_s": -1.0}, "sustained duration must be > 0"),
     ({"duration_s": 30.0, "last_window_s": 60.0}, "last window must be in"),
     ({"last_window_s": 0.0}, "last window must be in")],
)
def test_settings_reject_bad_values(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SustainedSettings(**kwargs)


def _throttled_run(clock: FakeClock) -> SustainedRun:
    """Baseline 2 s per request; the candidate takes 1 s until t = 60 s, then 1.6 s."""
    log: list[tuple[str, str]] = []
    run_start = clock.now + 3.0  # after one warm-up pair (2 s + 1 s)

    def baseline_wall(prompt: Prompt, call: int, now: float) -> float:
        return 2.0

    def candidate_wall(prompt: Prompt, call: int, now: float) -> float:
        return 1.0 if now - run_start < 60.0 else 1.6

    return run_sustained(
        FakeArm("B", clock, log, baseline_wall),
        FakeArm("C", clock, log, candidate_wall),
        make_prompts(4),
        SustainedSettings(duration_s=100.0, last_window_s=20.0),
        warmup=1,
        clock=clock,
    )


def test_sustained_run_reports_whole_run_and_last_window(clock: FakeClock) -> None:
    run = _throttled_run(clock)
    # pairs take 3 s until t=60 (20 pairs), then 3.6 s; the pair starting at 99.6 s is the last,
    # and the pairs finishing after 103.2 - 20 = 83.2 s are the last 6
    assert len(run.pairs) == 32
    assert run.elapsed_s == pytest.approx(103.2)
    assert run.whole_run_speedup == pytest.approx(2.0)   # median of 20 x 2.0 and 12 x 1.25
    assert run.last_window_speedup == pytest.approx(1.25)
    assert len(run.last_window()) == 6
    assert run.window_start_s == pytest.approx(83.2)
    assert run.warmup_pairs_discarded == 1
    assert run.pairs[0].started_s == 0.0


def test_sustained_rounds_cycle_prompts_and_flip_order(clock: FakeClock) -> None:
    run = _throttled_run(clock)
    assert [p.prompt_id for p in run.pairs[:6]] == ["p0", "p1", "p2", "p3", "p0", "p1"]
    assert [p.first_arm for p in run.pairs[3:5]] == ["baseline", "candidate"]
    assert [p.round_index for p in run.pairs[3:5]] == [0, 1]


def test_throughput_series_is_time_ordered_per_arm(clock: FakeClock) -> None:
    run = _throttled_run(clock)
    baseline = throughput_series(run.pairs, "baseline")
    candidate = throughput_series(run.pairs, "candidate")
    assert len(baseline) == len(candidate) == 32
    assert [point.t_s for point in baseline] == sorted(point.t_s for point in baseline)
    assert {point.tokens_per_s for point in baseline} == {50.0}
    assert candidate[0].tokens_per_s == 100.0 and candidate[-1].tokens_per_s == 62.5


def test_at_least_one_pair_runs_even_with_a_tiny_duration(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []

    def wall(prompt: Prompt, call: int, now: float) -> float:
        return 5.0

    run = run_sustained(FakeArm("B", clock, log, wall), FakeArm("C", clock, log, wall),
                        make_prompts(2), SustainedSettings(scale=1e-6), warmup=0, clock=clock)
    assert len(run.pairs) == 1
    assert run.last_window_speedup == 1.0


def test_artifacts_hold_the_data_and_a_png(clock: FakeClock, tmp_path: Path) -> None:
    run = _throttled_run(clock)
    artifacts = write_sustained_artifacts(run, tmp_path / "ac10", stem="ac10-sustained",
                                          title="AC-10")
    data = json.loads(artifacts.data_path.read_text(encoding="utf-8"))
    assert data["schema"] == "specgate.sustained/v1"
    assert data["whole_run_speedup"] == pytest.approx(2.0)
    assert data["last_window_speedup"] == pytest.approx(1.25)
    assert data["identity"]["identical"] is True
    assert len(data["series"]["baseline"]) == len(data["series"]["candidate"]) == 32
    assert data["series"]["candidate"][0] == {"t_s": 3.0, "tokens_per_s": 100.0}

    from PIL import Image

    with Image.open(artifacts.plot_path) as image:
        assert image.format == "PNG"
        assert image.size == (900, 480)
    assert artifacts.to_dict()["plot"] == str(tmp_path / "ac10" / "ac10-sustained.png")


def test_plot_shows_both_arms_with_labels_and_the_shaded_window(clock: FakeClock) -> None:
    from matplotlib.patches import Rectangle

    run = _throttled_run(clock)
    figure = throughput_figure(run, title="AC-10")
    (axes,) = figure.axes
    assert axes.get_xlabel() == "time since start of run (s)"
    assert axes.get_ylabel() == "output tokens/s per request"
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert set(lines) == {"baseline (speculation off)", "candidate (speculation on)"}
    import numpy as np

    candidate_y = np.asarray(lines["candidate (speculation on)"].get_ydata(), dtype=float)
    assert candidate_y[-1] == 62.5
    (shade,) = axes.patches
    assert isinstance(shade, Rectangle)
    assert shade.get_label() == "last 20 s window"
    left, width = shade.get_x(), shade.get_width()
    assert left == pytest.approx(83.2)
    assert left + width == pytest.approx(103.2)
    assert "whole run 2.00x, last window 1.25x" in axes.get_title()


def _verdict(run: SustainedRun) -> str:
    estimate = run.last_window_estimate()
    return Threshold(at_least=1.2).judge(estimate.point, estimate.ci_low, estimate.ci_high).verdict


def _shortened_run(clock: FakeClock, candidate_walls: list[float], max_extra_pairs: int) -> SustainedRun:
    """A CI-scale run (3 s of a 300 s plan, 0.6 s window) with 2 prompts; baseline 2 s a request,
    the candidate's requests take the given times in turn."""
    log: list[tuple[str, str]] = []

    def baseline_wall(prompt: Prompt, call: int, now: float) -> float:
        return 2.0

    def candidate_wall(prompt: Prompt, call: int, now: float) -> float:
        return candidate_walls[call % len(candidate_walls)]

    return run_sustained(FakeArm("B", clock, log, baseline_wall), FakeArm("C", clock, log, candidate_wall),
                         make_prompts(2), SustainedSettings(scale=0.01), warmup=0, clock=clock,
                         until=Threshold(at_least=1.2), max_extra_pairs=max_extra_pairs)


def test_a_shortened_run_sized_in_pairs_runs_until_its_interval_decides(clock: FakeClock) -> None:
    """At scale 0.01 the window holds one pair; sized in pairs, the run goes on in whole rounds
    until the anytime-valid interval clears the bound: 8 pairs all above it."""
    run = _shortened_run(clock, [1.0], max_extra_pairs=40)
    assert run.sequential is not None and run.sequential.decided
    assert len(run.pairs) == 8
    estimate = run.last_window_estimate()
    assert estimate.ci_low is not None and estimate.ci_low >= 1.2
    assert _verdict(run) == "passed"
    assert run.to_dict()["sequential"]["stopped_because"] == "every threshold decided"  # type: ignore[index]


def test_a_run_below_its_bound_decides_failed(clock: FakeClock) -> None:
    run = _shortened_run(clock, [2.0], max_extra_pairs=40)
    assert run.sequential is not None and run.sequential.decided
    assert _verdict(run) == "failed"


def test_a_run_at_its_bound_stops_at_max_extra_pairs_undecided(clock: FakeClock) -> None:
    """Half the pairs above the bound, half below: no honest interval clears it."""
    run = _shortened_run(clock, [1.0, 2.0], max_extra_pairs=12)
    assert run.sequential is not None and not run.sequential.decided
    assert len(run.pairs) == 2 + 12
    assert _verdict(run) == "inconclusive"
    # One pair fits the 3 s; its round is completed, then whole rounds run until the cap is
    # reached at a round's end: 13 extra pairs, past the cap by less than a round.
    assert run.sequential.extra_pairs == 13


def test_the_judged_pairs_only_grow_from_the_planned_window_start(clock: FakeClock) -> None:
    run = _shortened_run(clock, [1.0], max_extra_pairs=40)
    start = run.settings.planned_window_start_s
    assert start == pytest.approx(2.4)
    assert run.judged_pairs() == tuple(pair for pair in run.pairs if pair.finished_s > start)
    assert len(run.judged_pairs()) == len(run.pairs)


def test_until_needs_a_cap_in_pairs(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    with pytest.raises(ValueError, match="max_extra_pairs"):
        run_sustained(FakeArm("B", clock, log, lambda *_: 1.0), FakeArm("C", clock, log, lambda *_: 1.0),
                      make_prompts(2), SustainedSettings(scale=0.01), clock=clock,
                      until=Threshold(at_least=1.2))
