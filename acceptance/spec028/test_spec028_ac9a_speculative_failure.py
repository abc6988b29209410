"""SPEC-028 AC-9a: a speculative failure never costs correctness, and it is visible.

When the draft fails mid-request, or the target is warm-swapped while requests
are in flight, every greedy answer must still be exactly the baseline's answer
for the target that served it, and telemetry must show that something happened.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from spec028_backends import (
    GREEDY_MAX_TOKENS,
    BackendProfile,
    draft_failures,
    in_flight,
    inject_draft_failure,
    swaps_done,
    warm_swap,
)
from spec028_checks import output_difference, wait_until

from pytest_specgate.engines import ChatResult, Engine
from pytest_specgate.evidence import EvidenceRecorder

PROMPTS: tuple[list[dict[str, object]], ...] = (
    [{"role": "user", "content": "Write a parser for ISO-8601 ordinal dates like 2024-060."}],
    [{"role": "user", "content": "Explain the difference between 24:00 and 00:00 in ISO-8601."}],
    [{"role": "user", "content": "Format a timedelta as an ISO-8601 duration."}],
)
GREEDY: dict[str, object] = {"temperature": 0, "max_tokens": GREEDY_MAX_TOKENS}


@pytest.mark.ac("AC-9a", spec="SPEC-028", title="speculative failure keeps greedy output correct")
def test_ac9a_draft_failure_mid_request_keeps_output_correct(
    spec028: BackendProfile, boot_engine: Callable[..., Engine],
    shared_engine: Callable[..., Engine], evidence: EvidenceRecorder,
) -> None:
    spec028.require(spec028.no_fault_injection, "AC-9a draft failure mid-request")
    engine = boot_engine(**spec028.speculative)
    baseline = shared_engine(**spec028.disabled)
    failures_before = draft_failures(engine)
    inject_draft_failure(spec028, engine)
    got = engine.chat(PROMPTS[0], **GREEDY)
    want = baseline.chat(PROMPTS[0], **GREEDY)
    difference = output_difference("answer after a draft failure", got, want)
    evidence.measure("outputs_differing_after_draft_failure", 0 if difference is None else 1,
                     at_most=0)
    evidence.check(difference is None, str(difference))
    evidence.measure("draft_failures_in_telemetry", draft_failures(engine) - failures_before,
                     at_least=1)


def _stream_all(engine: Engine, answers: dict[int, ChatResult | BaseException],
                offset: int) -> list[threading.Thread]:
    def answer(index: int) -> None:
        try:
            answers[offset + index] = engine.chat(PROMPTS[index], **GREEDY)
        except BaseException as exc:  # a failed request is a finding, reported below
            answers[offset + index] = exc

    threads = [threading.Thread(target=answer, args=(index,), name=f"ac9a-{offset + index}")
               for index in range(len(PROMPTS))]
    for thread in threads:
        thread.start()
    return threads


@pytest.mark.ac("AC-9a", spec="SPEC-028", title="speculative failure keeps greedy output correct")
def test_ac9a_warm_swap_under_traffic_keeps_output_correct(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    spec028.require(spec028.no_warm_swap, "AC-9a warm swap under traffic")
    assert spec028.swap_target is not None
    engine = boot_engine(**spec028.timed)
    old_baseline = boot_engine(**{**spec028.timed, "draft": None, "num_draft_tokens": None})
    new_baseline = boot_engine(**{**spec028.timed, "draft": None, "num_draft_tokens": None,
                                  "target": spec028.swap_target})
    swaps_before = swaps_done(engine)
    answers: dict[int, ChatResult | BaseException] = {}
    in_flight_threads = _stream_all(engine, answers, 0)
    wait_until(lambda: in_flight(engine) == len(PROMPTS), 10.0, "every request to be in flight")
    warm_swap(spec028, engine, spec028.swap_target)
    for thread in in_flight_threads:
        thread.join(30.0)
    for thread in _stream_all(engine, answers, len(PROMPTS)):
        thread.join(30.0)
    problems: list[str] = []
    for index in range(2 * len(PROMPTS)):
        reference = old_baseline if index < len(PROMPTS) else new_baseline
        got = answers.get(index)
        if not isinstance(got, ChatResult):
            problems.append(f"request {index} failed: {got!r}")
            continue
        want = reference.chat(PROMPTS[index % len(PROMPTS)], **GREEDY)
        side = "in flight at the swap" if index < len(PROMPTS) else "after the swap"
        difference = output_difference(f"request {index} ({side})", got, want)
        if difference is not None:
            problems.append(difference)
    evidence.measure("requests_wrong_or_failed_across_swap", len(problems), at_most=0)
    for problem in problems:
        evidence.check(False, problem)
    evidence.measure("swaps_in_telemetry", swaps_done(engine) - swaps_before, at_least=1,
                     at_most=1)
