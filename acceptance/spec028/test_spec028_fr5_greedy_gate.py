"""SPEC-028 FR-5: only greedy, featureless requests take the speculative path.

The verifier can only prove a drafted token right under greedy decoding and
plain text output; sampling and features such as logprobs, n > 1, logit_bias,
tools and response_format must stay on the baseline path (nothing drafted) and
answer exactly as a baseline engine does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from spec028_backends import GATED_REQUESTS, GREEDY_MAX_TOKENS, BackendProfile
from spec028_checks import choice_texts, output_difference

from pytest_specgate.engines import Engine, Telemetry
from pytest_specgate.evidence import EvidenceRecorder

MESSAGES: list[dict[str, object]] = [
    {"role": "user", "content": "Write a function that formats a date as ISO-8601 week date."},
]
GREEDY: dict[str, object] = {"temperature": 0, "max_tokens": GREEDY_MAX_TOKENS}


def _counts(telemetry: Telemetry) -> tuple[int, int]:
    assert telemetry.drafted is not None and telemetry.accepted is not None, telemetry
    return telemetry.drafted, telemetry.accepted


def _gated(spec028: BackendProfile, gate: str) -> dict[str, object]:
    request = spec028.gated_requests.get(gate)
    if request is None:
        pytest.skip(f"the {spec028.backend} backend has no {gate} feature to gate (it ignores it)")
    return {"max_tokens": GREEDY_MAX_TOKENS, **request}


@pytest.mark.ac("FR-5", spec="SPEC-028", title="greedy gate: only temperature 0 speculates")
def test_fr5_greedy_request_takes_the_speculative_path(
    spec028: BackendProfile, shared_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    spec028.require(spec028.no_counters, "whether a request was drafted for")
    engine = shared_engine(**spec028.speculative)
    before = _counts(engine.telemetry())
    engine.chat(MESSAGES, **GREEDY)
    after = _counts(engine.telemetry())
    evidence.measure("greedy_request_drafted_tokens", after[0] - before[0], "tokens", at_least=1)


@pytest.mark.ac("FR-5", spec="SPEC-028", title="greedy gate: only temperature 0 speculates")
def test_fr5_greedy_output_equals_baseline(
    spec028: BackendProfile, shared_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    engine = shared_engine(**spec028.speculative)
    baseline = shared_engine(**spec028.disabled)
    got, want = engine.chat(MESSAGES, **GREEDY), baseline.chat(MESSAGES, **GREEDY)
    difference = output_difference("greedy speculative answer", got, want)
    evidence.measure("greedy_outputs_differing_from_baseline", 0 if difference is None else 1,
                     at_most=0)
    evidence.check(difference is None, str(difference))


@pytest.mark.ac("FR-5", spec="SPEC-028", title="greedy gate: only temperature 0 speculates")
@pytest.mark.parametrize("gate", sorted(GATED_REQUESTS))
def test_fr5_gated_request_is_not_drafted(
    gate: str, spec028: BackendProfile, shared_engine: Callable[..., Engine],
    evidence: EvidenceRecorder,
) -> None:
    request = _gated(spec028, gate)
    spec028.require(spec028.no_counters, f"whether a request with {gate} was drafted for")
    engine = shared_engine(**spec028.speculative)
    before = _counts(engine.telemetry())
    engine.chat(MESSAGES, **request)
    after = _counts(engine.telemetry())
    evidence.measure(f"{gate}_request_drafted_tokens", after[0] - before[0], "tokens", at_most=0)
    evidence.measure(f"{gate}_request_accepted_tokens", after[1] - before[1], "tokens", at_most=0)


@pytest.mark.ac("FR-5", spec="SPEC-028", title="greedy gate: only temperature 0 speculates")
@pytest.mark.parametrize("gate", sorted(GATED_REQUESTS))
def test_fr5_gated_request_answers_as_baseline(
    gate: str, spec028: BackendProfile, shared_engine: Callable[..., Engine],
    evidence: EvidenceRecorder,
) -> None:
    request = _gated(spec028, gate)
    if request.get("temperature") != 0 and not spec028.seeded_sampling:
        pytest.skip(f"sampled output of the {spec028.backend} backend is not reproducible from "
                    "a seed, so it cannot be compared with a baseline")
    engine = shared_engine(**spec028.speculative)
    baseline = shared_engine(**spec028.disabled)
    got, want = engine.chat(MESSAGES, **request), baseline.chat(MESSAGES, **request)
    got_texts, want_texts = choice_texts(got), choice_texts(want)
    differing = sum(a != b for a, b in zip(got_texts, want_texts, strict=False))
    differing += abs(len(got_texts) - len(want_texts))
    evidence.measure(f"{gate}_choices_differing_from_baseline", differing, at_most=0)
    evidence.check(differing == 0, f"request with {gate}: answers {got_texts} differ "
                   f"from the baseline's {want_texts}")
