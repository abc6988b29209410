"""Latency percentiles with paired ratios, and acceptance per draft position beside alpha^k."""

from __future__ import annotations

from pathlib import Path

import pytest
from measure_fakes import FakeClock, FakeTelemetry, make_prompts
from test_engine_arms import FakeStreamingEngine

from pytest_specgate.engines.client import telemetry_from_status
from pytest_specgate.engines.spec_decode_metrics import positions_from_zero
from pytest_specgate.measure.engine_arms import engine_arm
from pytest_specgate.measure.latency import latency_summary
from pytest_specgate.measure.positions import position_acceptance, write_position_plot
from pytest_specgate.measure.samples import RequestSample, SamplePair, TimedSample
from pytest_specgate.measure.statistics import acceptance_from_telemetry


def test_streamed_arm_records_the_gaps_between_deltas(clock: FakeClock) -> None:
    sample = engine_arm(FakeStreamingEngine(clock, ["a", "b", "c"], usage=3, step_s=0.25),
                        clock=clock)(make_prompts(1)[0])
    assert sample.itl_s == pytest.approx((0.25, 0.25))  # three text deltas, two gaps


Gaps = tuple[float, ...]


def _pair(index: int, ttft: tuple[float, float], itl: tuple[Gaps, Gaps]) -> SamplePair:
    def timed(arm: str, first: float, gaps: tuple[float, ...]) -> TimedSample:
        sample = RequestSample(wall_s=1.0, ttft_s=first, output_tokens=10, text="x", itl_s=gaps)
        return TimedSample(arm, f"p{index}", 0, 0.0, 1.0, sample)  # type: ignore[arg-type]

    return SamplePair(f"p{index}", 0, "baseline", timed("baseline", ttft[0], itl[0]),
                      timed("candidate", ttft[1], itl[1]))


def test_percentiles_per_arm_and_ratios_with_intervals() -> None:
    pairs = [_pair(i, (0.010 * (i + 1), 0.020 * (i + 1)), ((0.004, 0.004), (0.002, 0.006)))
             for i in range(10)]
    summary = latency_summary(pairs, n_resamples=200)
    assert summary.percentiles_ms["baseline"]["ttft_ms_p50"] == pytest.approx(55.0)
    assert summary.percentiles_ms["candidate"]["ttft_ms_p50"] == pytest.approx(110.0)
    assert summary.percentiles_ms["baseline"]["itl_ms_p99"] == pytest.approx(4.0)
    ratio = summary.ratios["ttft_p99_ratio"]
    assert ratio.point == pytest.approx(2.0)
    assert ratio.ci_low == pytest.approx(2.0) and ratio.ci_high == pytest.approx(2.0)
    itl = summary.ratios["itl_p50_ratio"]
    assert itl.point == pytest.approx(1.0) and itl.confidence_level == 0.95 and itl.n == 10


def test_latency_without_inter_token_gaps_is_refused() -> None:
    with pytest.raises(ValueError, match="no request streamed two deltas"):
        latency_summary([_pair(0, (0.01, 0.01), ((), ()))])


def test_per_position_counts_are_deltas_over_the_window() -> None:
    measured = acceptance_from_telemetry(
        FakeTelemetry(40, 20, drafts=10, accepted_per_position=(8, 6, 4, 2)),
        FakeTelemetry(440, 216, drafts=110, accepted_per_position=(88, 66, 40, 22)))
    assert (measured.drafts, measured.accepted_per_position) == (100, (80, 60, 36, 20))
    assert measured.per_position_rates() == pytest.approx((0.8, 0.6, 0.36, 0.2))


def test_an_engine_without_position_counts_says_so() -> None:
    measured = acceptance_from_telemetry(FakeTelemetry(0, 0), FakeTelemetry(40, 20))
    assert measured.per_position_rates() is None
    assert measured.positions_reason == "/v1/status reports no per-position acceptance counts"
    assert position_acceptance(measured, 4) is None


def test_positions_beside_alpha_to_the_k_and_their_plot(tmp_path: Path) -> None:
    measured = acceptance_from_telemetry(
        None, FakeTelemetry(400, 236, drafts=100, accepted_per_position=(80, 64, 51, 41)))
    positions = position_acceptance(measured, 4)
    assert positions is not None
    assert positions.measured == pytest.approx((0.8, 0.64, 0.51, 0.41))
    assert positions.expected == pytest.approx(tuple(positions.alpha**k for k in range(1, 5)))
    assert positions.alpha == pytest.approx(0.8, abs=0.01)
    plot = write_position_plot(positions, tmp_path / "positions.png", title="t")
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_mock_status_and_vllm_labels_give_positions_from_one() -> None:
    telemetry = telemetry_from_status({
        "spec_decode_enabled": True, "spec_decode_drafted_tokens_since_last": 8,
        "spec_decode_accepted_tokens_since_last": 5, "spec_decode_num_drafts_since_last": 2,
        "spec_decode_accepted_per_position_since_last": [2, 2, 1, 0],
    })
    assert (telemetry.drafts, telemetry.accepted_per_position) == (2, (2, 2, 1, 0))
    assert positions_from_zero(((0, 7), (2, 3))) == (7, 0, 3)
    assert positions_from_zero(()) is None
