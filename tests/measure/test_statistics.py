from __future__ import annotations

import json

import pytest
from measure_fakes import FakeTelemetry

from pytest_specgate.measure.samples import RequestSample, SamplePair, TimedSample
from pytest_specgate.measure.statistics import (
    acceptance_from_telemetry,
    first_difference,
    identity_check,
    identity_report,
    median_speedup,
    per_prompt_speedups,
    pooled_speedup,
)


def _sample(wall_s: float, tokens: int = 100, ids: tuple[int, ...] | None = None,
            text: str = "x") -> RequestSample:
    return RequestSample(wall_s=wall_s, ttft_s=None, output_tokens=tokens, text=text,
                         token_ids=ids)


def _pair(prompt_id: str, round_index: int, baseline_wall: float, candidate_wall: float,
          ) -> SamplePair:
    return SamplePair(
        prompt_id,
        round_index,
        "baseline",
        TimedSample("baseline", prompt_id, round_index, 0.0, 1.0, _sample(baseline_wall)),
        TimedSample("candidate", prompt_id, round_index, 1.0, 2.0, _sample(candidate_wall)),
    )


def test_per_prompt_speedup_is_median_over_rounds() -> None:
    pairs = [
        _pair("a", 0, 2.0, 1.0),   # 2.0
        _pair("b", 0, 3.0, 2.0),   # 1.5
        _pair("a", 1, 3.0, 1.0),   # 3.0
        _pair("b", 1, 1.0, 1.0),   # 1.0
        _pair("a", 2, 1.0, 1.0),   # 1.0
    ]
    speedups = per_prompt_speedups(pairs)
    assert [entry.prompt_id for entry in speedups] == ["a", "b"]
    assert speedups[0].pair_speedups == (2.0, 3.0, 1.0)
    assert speedups[0].speedup == 2.0
    assert speedups[1].speedup == pytest.approx(1.25)


def test_speedup_uses_tokens_per_second_not_wall_time() -> None:
    pair = SamplePair(
        "a", 0, "baseline",
        TimedSample("baseline", "a", 0, 0.0, 1.0, _sample(2.0, tokens=100)),   # 50 tok/s
        TimedSample("candidate", "a", 0, 1.0, 2.0, _sample(2.0, tokens=150)),  # 75 tok/s
    )
    assert pair.speedup == pytest.approx(1.5)


def test_zero_token_baseline_is_a_named_error() -> None:
    pair = SamplePair(
        "p7", 3, "baseline",
        TimedSample("baseline", "p7", 3, 0.0, 1.0, _sample(1.0, tokens=0)),
        TimedSample("candidate", "p7", 3, 1.0, 2.0, _sample(1.0)),
    )
    with pytest.raises(ValueError, match="prompt 'p7' round 3: the baseline produced no"):
        _ = pair.speedup


def test_median_speedup_hand_computed() -> None:
    assert median_speedup([1.2, 1.8, 1.5]).median == 1.5
    assert median_speedup([1.0, 2.0, 1.5, 1.7]).median == pytest.approx(1.6)


def test_bootstrap_interval_is_seeded_and_deterministic() -> None:
    values = [1.31, 1.52, 1.44, 1.61, 1.38, 1.49, 1.57, 1.42, 1.66, 1.35]
    first = median_speedup(values, seed=7, n_resamples=2000)
    second = median_speedup(values, seed=7, n_resamples=2000)
    assert first == second
    assert first.ci_low is not None and first.ci_high is not None
    assert min(values) <= first.ci_low <= first.median <= first.ci_high <= max(values)
    assert first.to_dict()["method"] == "BCa"
    assert first.to_dict()["seed"] == 7


def test_single_value_has_no_interval() -> None:
    estimate = median_speedup([1.4])
    assert (estimate.median, estimate.ci_low, estimate.ci_high, estimate.n) == (1.4, None, None, 1)


def test_equal_values_give_a_point_interval() -> None:
    estimate = median_speedup([1.5, 1.5, 1.5])
    assert (estimate.ci_low, estimate.ci_high) == (1.5, 1.5)
    assert estimate.method.startswith("degenerate")


def test_no_speedups_is_an_error() -> None:
    with pytest.raises(ValueError, match="no speedups"):
        median_speedup([])


def test_acceptance_is_the_delta_of_two_readings() -> None:
    measured = acceptance_from_telemetry(
        FakeTelemetry(drafted=10, accepted=8), FakeTelemetry(drafted=30, accepted=20)
    )
    assert (measured.drafted, measured.accepted) == (20, 12)
    assert measured.acceptance_rate == pytest.approx(0.6)
    assert (measured.basis, measured.complete) == ("delta", True)


def test_acceptance_without_before_uses_the_window() -> None:
    measured = acceptance_from_telemetry(None, FakeTelemetry(drafted=40, accepted=10))
    assert measured.acceptance_rate == pytest.approx(0.25)
    assert measured.basis == "window"
    assert measured.complete


def test_counter_going_down_marks_a_reset_and_incomplete() -> None:
    measured = acceptance_from_telemetry(
        FakeTelemetry(drafted=50, accepted=30), FakeTelemetry(drafted=12, accepted=6)
    )
    assert measured.basis == "reset_during_window"
    assert not measured.complete
    assert (measured.drafted, measured.accepted) == (12, 6)
    assert "drafted 50 -> 12" in measured.reason


def test_unavailable_telemetry_gives_no_numbers() -> None:
    measured = acceptance_from_telemetry(
        None, FakeTelemetry(available=False, drafted=None, accepted=None, source="unavailable")
    )
    assert (measured.drafted, measured.accepted, measured.acceptance_rate) == (None, None, None)
    assert measured.basis == "unavailable" and not measured.complete
    assert json.dumps(measured.to_dict())


def test_nothing_drafted_has_no_rate() -> None:
    measured = acceptance_from_telemetry(
        FakeTelemetry(drafted=5, accepted=5), FakeTelemetry(drafted=5, accepted=5)
    )
    assert measured.acceptance_rate is None
    assert not measured.complete
    assert "nothing was drafted" in measured.reason


def test_accepted_above_drafted_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"accepted \(9\) exceeds drafted \(4\)"):
        acceptance_from_telemetry(None, FakeTelemetry(drafted=4, accepted=9))


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ((1, 2, 3), (1, 2, 3), None),
        ((1, 2, 3), (1, 9, 3), 1),
        ((1, 2, 3), (1, 2), 2),
        ((), (5,), 0),
        ("abc", "abd", 2),
    ],
)
def test_first_difference(left: tuple[int, ...] | str, right: tuple[int, ...] | str,
                          expected: int | None) -> None:
    assert first_difference(left, right) == expected


def test_identity_mismatch_reports_position_and_both_sequences() -> None:
    check = identity_check("p3", 1, _sample(1.0, ids=(5, 6, 7, 8)),
                           _sample(1.0, ids=(5, 6, 9, 8)))
    assert not check.identical
    assert (check.compared, check.first_difference) == ("token_ids", 2)
    data = check.to_dict()
    assert data["baseline_sequence"] == [5, 6, 7, 8]
    assert data["candidate_sequence"] == [5, 6, 9, 8]
    assert data["prompt_id"] == "p3"


def test_identity_falls_back_to_text_when_ids_are_missing() -> None:
    check = identity_check("p", 0, _sample(1.0, text="hello world"),
                           _sample(1.0, ids=(1,), text="hello word"))
    assert (check.compared, check.first_difference) == ("text", 9)
    assert (check.baseline_sequence, check.candidate_sequence) == ("hello world", "hello word")


def test_identical_outputs_keep_no_sequences() -> None:
    check = identity_check("p", 0, _sample(1.0, ids=(1, 2)), _sample(2.0, ids=(1, 2)))
    assert check.identical and check.first_difference is None
    assert check.baseline_sequence is None and check.candidate_sequence is None


def test_identity_report_lists_only_mismatches() -> None:
    same = _pair("a", 0, 1.0, 1.0)
    different = SamplePair(
        "b", 0, "baseline",
        TimedSample("baseline", "b", 0, 0.0, 1.0, _sample(1.0, ids=(1, 2, 3))),
        TimedSample("candidate", "b", 0, 1.0, 2.0, _sample(1.0, ids=(1, 2, 4))),
    )
    report = identity_report([same, different])
    assert not report.identical
    data = report.to_dict()
    assert (data["checked"], data["mismatched"]) == (2, 1)
    mismatches = data["mismatches"]
    assert isinstance(mismatches, list)
    assert [mismatch["prompt_id"] for mismatch in mismatches] == ["b"]


def test_pooled_speedup_weighs_tokens_not_prompts() -> None:
    pairs = [_pair("a", 0, 2.0, 1.0), _pair("b", 0, 4.0, 3.0)]
    # baseline 200 tokens / 6 s, candidate 200 tokens / 4 s; per-pair 2.0 and 4/3
    assert pooled_speedup(pairs) == pytest.approx(1.5)
    assert median_speedup([pair.speedup for pair in pairs]).median == pytest.approx(5 / 3)


def test_pooled_speedup_needs_pairs() -> None:
    with pytest.raises(ValueError, match="no pairs were measured"):
        pooled_speedup([])
