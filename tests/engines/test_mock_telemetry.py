"""Telemetry window arithmetic against an independent count; resets on roll, period and swap."""

from __future__ import annotations

import time

import httpx
import pytest
from engines_testkit import GREEDY, BootMock, expected_counts, user

from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.engines.prometheus import metric_totals
from pytest_specgate.engines.spec_decode_metrics import SpecDecodeTelemetry

PROMPTS = ("count the drafts", "and the accepted ones", "then divide", "x")
MAX_TOKENS = 40


def _run(engine: MockEngine, prompts: tuple[str, ...] = PROMPTS, stream: bool = False) -> None:
    for prompt in prompts:
        if stream:
            engine.stream(user(prompt), max_tokens=MAX_TOKENS, **GREEDY).drain()
        else:
            engine.chat(user(prompt), max_tokens=MAX_TOKENS, **GREEDY)


def _expected(alpha: float, gamma: int) -> tuple[int, int, int, list[int]]:
    counts = [expected_counts(p, MAX_TOKENS, gamma=gamma, alpha=alpha) for p in PROMPTS]
    per_position = [sum(c.accepted_per_position[i] for c in counts) for i in range(gamma)]
    return (
        sum(c.drafts for c in counts),
        sum(c.drafted for c in counts),
        sum(c.accepted for c in counts),
        per_position,
    )


def test_window_counts_match_an_independent_count(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, num_draft_tokens=3)
    _run(engine)
    _run(engine, stream=True)
    drafts, drafted, accepted, _ = _expected(0.6, 3)
    status = engine.status()
    assert status["spec_decode_drafted_tokens_since_last"] == 2 * drafted
    assert status["spec_decode_accepted_tokens_since_last"] == 2 * accepted
    assert status["spec_decode_num_drafts_since_last"] == 2 * drafts
    assert status["spec_decode_acceptance_rate"] == accepted / drafted
    telemetry = engine.telemetry()
    assert (telemetry.drafted, telemetry.accepted) == (2 * drafted, 2 * accepted)
    assert telemetry.acceptance_rate == accepted / drafted
    assert telemetry.num_draft_tokens == 3 and telemetry.window == "since_last_roll"


def test_request_and_token_counters_cover_the_same_window(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6)
    results = [engine.chat(user(p), max_tokens=MAX_TOKENS, **GREEDY) for p in PROMPTS]
    window = engine.status()["window"]
    assert isinstance(window, dict)
    assert window["requests"] == len(PROMPTS)
    assert window["completion_tokens"] == sum(r.completion_tokens or 0 for r in results)
    elapsed = float(str(window["elapsed_s"]))
    assert window["tokens_per_s"] == pytest.approx(float(str(window["completion_tokens"])) / elapsed)
    assert window["requests_per_s"] == pytest.approx(len(PROMPTS) / elapsed)


def test_metrics_use_vllm_names_and_match_the_independent_count(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, num_draft_tokens=3)
    _run(engine)
    drafts, drafted, accepted, per_position = _expected(0.6, 3)
    text = engine.metrics_text()
    totals = metric_totals(text)
    assert totals["vllm:spec_decode_num_drafts_total"] == drafts
    assert totals["vllm:spec_decode_num_draft_tokens_total"] == drafted
    assert totals["vllm:spec_decode_num_accepted_tokens_total"] == accepted
    for position, count in enumerate(per_position):
        assert f'position="{position}"}} {count}' in text
    assert "# TYPE vllm:spec_decode_num_draft_tokens_total counter" in text


def test_metrics_window_reads_deltas_not_totals(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, num_draft_tokens=3)
    _run(engine)
    window = SpecDecodeTelemetry(
        engine.metrics_text, enabled=True, draft_model_id=engine.settings.draft, num_draft_tokens=3
    )
    _run(engine, PROMPTS[:1])
    expected = expected_counts(PROMPTS[0], MAX_TOKENS, gamma=3, alpha=0.6)
    telemetry = window.telemetry()
    assert (telemetry.drafted, telemetry.accepted) == (expected.drafted, expected.accepted)
    assert telemetry.source == "/metrics" and telemetry.window == "delta:/metrics"


def test_roll_closes_the_window_and_starts_from_zero(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, num_draft_tokens=3)
    _run(engine)
    _, drafted, accepted, _ = _expected(0.6, 3)
    closed = engine.roll()["closed"]
    assert isinstance(closed, dict)
    assert (closed["drafted"], closed["accepted"], closed["requests"]) == (drafted, accepted, len(PROMPTS))
    telemetry = engine.telemetry()
    assert (telemetry.drafted, telemetry.accepted, telemetry.acceptance_rate) == (0, 0, None)
    previous = engine.status()["previous_window"]
    assert isinstance(previous, dict) and previous["drafted"] == drafted
    _run(engine, PROMPTS[:1])
    expected = expected_counts(PROMPTS[0], MAX_TOKENS, gamma=3, alpha=0.6)
    assert engine.telemetry().drafted == expected.drafted
    assert metric_totals(engine.metrics_text())["vllm:spec_decode_num_draft_tokens_total"] == (
        drafted + expected.drafted
    )


def test_reset_telemetry_is_a_roll(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6)
    _run(engine, PROMPTS[:1])
    engine.reset_telemetry()
    assert engine.telemetry().drafted == 0 and engine.status()["rolls"] == 1


def test_window_rolls_on_its_configured_period(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, roll_period_s=0.2)
    _run(engine, PROMPTS[:1])
    time.sleep(0.25)
    status = engine.status()
    assert status["spec_decode_drafted_tokens_since_last"] == 0
    assert int(str(status["rolls"])) >= 1
    previous = status["previous_window"]
    assert isinstance(previous, dict) and int(str(previous["drafted"])) > 0


def test_swap_resets_since_last_counters(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6)
    _run(engine)
    before = engine.chat(user("after swap"), max_tokens=MAX_TOKENS, **GREEDY).text
    answer = engine.swap("specgate-mock-target-v2")
    assert answer["previous"] == "specgate-mock-target"
    telemetry = engine.telemetry()
    assert (telemetry.drafted, telemetry.accepted) == (0, 0)
    assert engine.status()["model"] == "specgate-mock-target-v2"
    after = engine.chat(user("after swap"), max_tokens=MAX_TOKENS, **GREEDY)
    assert after.raw["model"] == "specgate-mock-target-v2" and after.text != before
    expected = expected_counts("after swap", MAX_TOKENS, gamma=4, alpha=0.6, target="specgate-mock-target-v2")
    assert engine.telemetry().drafted == expected.drafted
    assert engine.telemetry().accepted == expected.accepted


def test_no_reset_on_swap_violation_mixes_populations(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, faults=("no-reset-on-swap",))
    _run(engine, PROMPTS[:1])
    drafted = engine.telemetry().drafted
    engine.swap("specgate-mock-target-v2")
    assert engine.telemetry().drafted == drafted != 0


def test_telemetry_off_by_one_violation_is_visible_against_the_count(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.6, num_draft_tokens=3, faults=("telemetry-off-by-one",))
    _run(engine)
    _, drafted, accepted, _ = _expected(0.6, 3)
    telemetry = engine.telemetry()
    assert telemetry.drafted == drafted and telemetry.accepted == accepted + 1
    assert (
        metric_totals(engine.metrics_text())["vllm:spec_decode_num_accepted_tokens_total"] == accepted + 1
    )


def test_swap_to_a_target_with_another_vocabulary_is_refused(boot_mock: BootMock) -> None:
    engine = boot_mock()
    response = httpx.post(f"{engine.base_url}/admin/swap", json={"target": "x", "vocab": "words-v2"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "draft_model_tokenizer_mismatch"
    assert engine.status()["model"] == "specgate-mock-target"
