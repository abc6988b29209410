"""SPEC-028 FR-8: speculative-decoding telemetry is complete, typed and counts what happened.

The acceptance rate an operator reads is only worth something if drafted and
accepted match an independent count of the rounds actually run, over the same
window as the request counters, and if a roll starts the window from zero.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from spec028_backends import GREEDY_MAX_TOKENS, BackendProfile, draft_counter, raw_status, roll_window

from pytest_specgate.engines import Engine, Telemetry
from pytest_specgate.evidence import EvidenceRecorder

REQUIREMENT = "FR-8"
PROMPTS: tuple[list[dict[str, object]], ...] = (
    [{"role": "user", "content": "Convert 2023-W52-7 to a calendar date."}],
    [{"role": "user", "content": "Is 2023-13-01 a valid ISO-8601 date? Explain."}],
    [{"role": "system", "content": "You write Python."},
     {"role": "user", "content": "Parse durations like P3Y6M4DT12H30M5S."}],
)
STATUS_FIELDS: dict[str, tuple[type, ...]] = {
    "spec_decode_enabled": (bool,),
    "spec_decode_draft_model_id": (str,),
    "spec_decode_num_draft_tokens": (int,),
    "spec_decode_drafted_tokens_since_last": (int,),
    "spec_decode_accepted_tokens_since_last": (int,),
    "spec_decode_acceptance_rate": (float, type(None)),
}
"""The /v1/status fields FR-8 names, with the types a client may rely on."""


def _greedy_answers(engine: Engine, counter: Callable[..., tuple[int, int]]) -> tuple[int, int]:
    """Send every prompt greedily; returns the independently counted (drafted, accepted)."""
    drafted = accepted = 0
    for messages in PROMPTS:
        result = engine.chat(messages, temperature=0, max_tokens=GREEDY_MAX_TOKENS)
        assert result.token_ids is not None, f"{REQUIREMENT}: the answer carries no token ids"
        counted = counter(engine, messages, GREEDY_MAX_TOKENS, result.token_ids)
        drafted, accepted = drafted + counted[0], accepted + counted[1]
    return drafted, accepted


def _telemetry_with_counters(spec028: BackendProfile, engine: Engine) -> Telemetry:
    telemetry = engine.telemetry()
    spec028.require(spec028.no_counters, "FR-8 telemetry")
    assert telemetry.available, f"{REQUIREMENT}: the {engine.backend} engine has no counters: {telemetry}"
    return telemetry


@pytest.mark.ac("FR-8", spec="SPEC-028", title="spec-decode telemetry: fields, counts, window")
def test_fr8_every_field_present_and_typed(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    spec028.require(spec028.no_counters, "FR-8 telemetry")
    engine = boot_engine(**spec028.speculative)
    engine.chat(PROMPTS[0], temperature=0, max_tokens=GREEDY_MAX_TOKENS)
    telemetry = _telemetry_with_counters(spec028, engine)
    evidence.note("telemetry", telemetry.to_dict())
    evidence.check(telemetry.enabled is True, f"speculation not reported enabled: {telemetry}")
    evidence.check(isinstance(telemetry.draft_model_id, str) and bool(telemetry.draft_model_id),
                   f"draft model id missing: {telemetry}")
    evidence.check(telemetry.num_draft_tokens == spec028.speculative["num_draft_tokens"],
                   f"num_draft_tokens {telemetry.num_draft_tokens} is not the configured "
                   f"{spec028.speculative['num_draft_tokens']}")
    status = raw_status(engine)
    if status is None:
        evidence.note("status_fields", f"{engine.backend} has no raw status body; checked the "
                      "normalized telemetry only")
    else:
        missing = sorted(set(STATUS_FIELDS) - set(status))
        mistyped = sorted(name for name, types in STATUS_FIELDS.items()
                          if name in status and (not isinstance(status[name], types)
                                                 or (isinstance(status[name], bool)
                                                 and bool not in types)))
        evidence.measure("status_fields_missing", len(missing), at_most=0)
        evidence.measure("status_fields_mistyped", len(mistyped), at_most=0)
        evidence.check(not missing, f"/v1/status lacks {missing}")
        evidence.check(not mistyped, f"/v1/status fields of the wrong type: "
                       f"{ {name: status[name] for name in mistyped} }")
    fields = {field.name: getattr(telemetry, field.name) for field in dataclasses.fields(telemetry)}
    evidence.check(isinstance(fields["drafted"], int) and isinstance(fields["accepted"], int),
                   f"counts are not integers: {fields}")


@pytest.mark.ac("FR-8", spec="SPEC-028", title="spec-decode telemetry: fields, counts, window")
def test_fr8_counts_match_an_independent_count(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    counter = draft_counter(spec028)
    engine = boot_engine(**spec028.counted)
    # A fresh engine: its window covers exactly the requests below, so absolute counts
    # are compared (a delta would cancel a constant offset).
    start = _telemetry_with_counters(spec028, engine)
    expected_drafted, expected_accepted = _greedy_answers(engine, counter)
    end = _telemetry_with_counters(spec028, engine)
    assert end.drafted is not None and end.accepted is not None
    drafted, accepted = end.drafted, end.accepted
    evidence.note("independent_count", {"drafted": expected_drafted, "accepted": expected_accepted,
                                        "method": "replay of each answer's tokens through the "
                                                  "draft agreement model"})
    evidence.check((start.drafted, start.accepted) == (0, 0),
                   f"a fresh engine's window is not empty: (drafted, accepted) = "
                   f"({start.drafted}, {start.accepted})")
    evidence.measure("drafted_minus_independent_count", drafted - expected_drafted, "tokens",
                     at_least=0, at_most=0)
    evidence.measure("accepted_minus_independent_count", accepted - expected_accepted, "tokens",
                     at_least=0, at_most=0)
    rate = end.acceptance_rate
    evidence.check(rate is not None and end.drafted > 0
                   and abs(rate - end.accepted / end.drafted) < 1e-12,
                   f"acceptance_rate {rate} is not accepted/drafted = "
                   f"{end.accepted}/{end.drafted}")


@pytest.mark.ac("FR-8", spec="SPEC-028", title="spec-decode telemetry: fields, counts, window")
def test_fr8_window_resets_on_roll(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    counter = draft_counter(spec028)
    engine = boot_engine(**spec028.counted)
    _greedy_answers(engine, counter)
    before_roll = _telemetry_with_counters(spec028, engine)
    roll_window(spec028, engine)
    after_roll = _telemetry_with_counters(spec028, engine)
    messages = PROMPTS[1]
    result = engine.chat(messages, temperature=0, max_tokens=GREEDY_MAX_TOKENS)
    assert result.token_ids is not None
    expected = counter(engine, messages, GREEDY_MAX_TOKENS, result.token_ids)
    one_request = _telemetry_with_counters(spec028, engine)
    evidence.measure("drafted_before_roll", before_roll.drafted or 0, "tokens", at_least=1)
    evidence.measure("drafted_after_roll", after_roll.drafted or 0, "tokens", at_most=0)
    evidence.measure("accepted_after_roll", after_roll.accepted or 0, "tokens", at_most=0)
    evidence.check(after_roll.acceptance_rate is None,
                   f"an empty window reports acceptance rate {after_roll.acceptance_rate}")
    evidence.check((one_request.drafted, one_request.accepted) == expected,
                   f"the window after the roll holds (drafted, accepted) = "
                   f"({one_request.drafted}, {one_request.accepted}), but the one request "
                   f"since then counts {expected}")
