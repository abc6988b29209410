"""SPEC-028 FR-9.5: a warm target swap restarts the since-last counters at zero.

An acceptance rate that blends drafts verified by the old target with drafts
verified by the new one describes neither; the window must start afresh at the
swap boundary and then count only the new target's rounds.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from spec028_backends import GREEDY_MAX_TOKENS, BackendProfile, draft_counter, warm_swap

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder

MESSAGES: list[dict[str, object]] = [
    {"role": "user", "content": "Normalize 2024-03-10T02:30:00-05:00 to UTC."},
]


@pytest.mark.ac("FR-9.5", spec="SPEC-028", title="warm swap resets the since-last counters")
def test_fr9_5_counters_reset_at_the_swap_boundary(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    spec028.require(spec028.no_warm_swap, "FR-9.5 warm-swap counter reset")
    counter = draft_counter(spec028)
    engine = boot_engine(**spec028.counted)
    engine.chat(MESSAGES, temperature=0, max_tokens=GREEDY_MAX_TOKENS)
    before_swap = engine.telemetry()
    assert spec028.swap_target is not None
    warm_swap(spec028, engine, spec028.swap_target)
    at_swap = engine.telemetry()
    result = engine.chat(MESSAGES, temperature=0, max_tokens=GREEDY_MAX_TOKENS)
    assert result.token_ids is not None
    expected = counter(engine, MESSAGES, GREEDY_MAX_TOKENS, result.token_ids)
    after = engine.telemetry()
    evidence.note("swap", {"to": spec028.swap_target, "before": before_swap.to_dict(),
                           "at_swap": at_swap.to_dict(), "after_one_request": after.to_dict()})
    evidence.measure("drafted_before_swap", before_swap.drafted or 0, "tokens", at_least=1)
    evidence.measure("drafted_at_swap", at_swap.drafted or 0, "tokens", at_most=0)
    evidence.measure("accepted_at_swap", at_swap.accepted or 0, "tokens", at_most=0)
    evidence.check((after.drafted, after.accepted) == expected,
                   f"after the swap the window holds (drafted, accepted) = ({after.drafted}, "
                   f"{after.accepted}); the one request to the new target counts {expected}")
