"""SPEC-028 FR-1: with no draft model configured, answers are byte-identical to the build before.

Operators who never set a draft must see no change at all: same bytes in every
response (apart from the per-response ``id`` and ``created``), streamed or not,
greedy or sampled, and telemetry saying speculation is off.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from spec028_backends import GREEDY_MAX_TOKENS, BackendProfile
from spec028_checks import without_volatile

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder

MESSAGES: tuple[list[dict[str, object]], ...] = (
    [{"role": "user", "content": "Parse 2024-02-29T23:59:60Z and say whether it is valid."}],
    [{"role": "system", "content": "Answer briefly."},
     {"role": "user", "content": "What is the ISO week of 2021-01-03?"}],
)
REQUESTS: tuple[dict[str, object], ...] = (
    {"temperature": 0, "max_tokens": GREEDY_MAX_TOKENS},
    {"temperature": 0.7, "seed": 5, "max_tokens": GREEDY_MAX_TOKENS},
)


def _canonical(body: dict[str, object]) -> bytes:
    return json.dumps(without_volatile(body), sort_keys=True).encode()


@pytest.mark.ac("FR-1", spec="SPEC-028", title="disabled mode is byte-identical to the build before")
def test_fr1_no_draft_answers_byte_identically(
    spec028: BackendProfile, shared_engine: Callable[..., Engine],
    boot_engine: Callable[..., Engine], evidence: EvidenceRecorder,
) -> None:
    disabled = shared_engine(**spec028.disabled)
    # Always a fresh process: on a backend whose two configurations coincide, a pooled
    # engine would be compared with itself.
    before = boot_engine(**spec028.pre_feature_build)
    evidence.note("baseline", spec028.pre_feature_note)
    compared = differing = 0
    for messages in MESSAGES:
        for params in REQUESTS:
            got = disabled.chat(messages, **params)
            want = before.chat(messages, **params)
            compared += 1
            if _canonical(got.raw) != _canonical(want.raw):
                differing += 1
                evidence.check(False, f"non-streamed answer to {messages[-1]['content']!r} with "
                               f"{params} differs: disabled {without_volatile(got.raw)}, "
                               f"before {without_volatile(want.raw)}")
            got_stream = disabled.stream(messages, **params).drain()
            want_stream = before.stream(messages, **params).drain()
            compared += 1
            got_events = [_canonical(event) for event in got_stream.raw_events]
            want_events = [_canonical(event) for event in want_stream.raw_events]
            if got_events != want_events:
                differing += 1
                evidence.check(False, f"streamed answer to {messages[-1]['content']!r} with {params} "
                               f"differs: disabled {got_stream.raw_events}, "
                               f"before {want_stream.raw_events}")
    telemetry = disabled.telemetry()
    evidence.check(telemetry.enabled is False,
                   f"an engine without a draft reports speculation enabled: {telemetry}")
    evidence.check(not telemetry.drafted, f"an engine without a draft drafted tokens: {telemetry}")
    evidence.measure("responses_compared", compared, at_least=len(MESSAGES) * len(REQUESTS) * 2)
    evidence.measure("responses_differing_from_baseline", differing, at_most=0)
