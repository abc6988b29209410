"""The mock's model in isolation: determinism, identity by construction, the corrupt verifier."""

from __future__ import annotations

import pytest
from engines_testkit import chat_prompt_text, expected_counts

from pytest_specgate.engines.mock.model import (
    DecodeParams,
    DraftModel,
    TargetModel,
    baseline_rounds,
    speculative_rounds,
    vocabulary_named,
)

VOCAB = vocabulary_named("words-v1")
TARGET = TargetModel("t", VOCAB, seed=3)
PROMPTS = ("hello world", "the quick brown fox", "one", "a b c d e f g h")


def tokens_of(rounds: object) -> list[int]:
    return [token for round_ in rounds for token in round_.tokens]  # type: ignore[attr-defined]


def baseline(prompt: str, max_tokens: int, target: TargetModel = TARGET, **params: object) -> list[int]:
    decode = DecodeParams(max_tokens=max_tokens, **params)  # type: ignore[arg-type]
    return tokens_of(baseline_rounds(target, VOCAB.encode(prompt), decode, 0.0))


def speculative(
    prompt: str, max_tokens: int, *, alpha: float, gamma: int, corrupt: bool = False, **params: object
) -> list[int]:
    decode = DecodeParams(max_tokens=max_tokens, **params)  # type: ignore[arg-type]
    draft = DraftModel("d", VOCAB, alpha, seed=3)
    rounds = speculative_rounds(
        TARGET,
        draft,
        VOCAB.encode(prompt),
        decode,
        gamma=gamma,
        target_step_s=0.0,
        draft_step_s=0.0,
        corrupt=corrupt,
    )
    return tokens_of(rounds)


def test_greedy_output_is_a_pure_function_of_model_seed_and_context() -> None:
    first = baseline("hello world", 40)
    assert first == baseline("hello world", 40)
    assert first != baseline("hello world", 40, TargetModel("t", VOCAB, seed=4))
    assert first != baseline("hello world", 40, TargetModel("other", VOCAB, seed=3))
    assert first != baseline("hello there", 40)


def test_text_is_readable_words_from_the_fixed_vocabulary() -> None:
    text = "".join(VOCAB.piece(t) for t in baseline("hello world", 30))
    words = text.split()
    assert words and all(f" {word}" in VOCAB.tokens for word in words)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.7, 0.95, 1.0])
@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_greedy_speculative_equals_greedy_baseline(alpha: float, gamma: int) -> None:
    for prompt in PROMPTS:
        for max_tokens in (1, 2, 7, 33):
            assert speculative(prompt, max_tokens, alpha=alpha, gamma=gamma) == baseline(prompt, max_tokens)


def test_seeded_sampling_is_reproducible_and_identical_under_speculation() -> None:
    sampled = baseline("hello", 30, temperature=0.9, sample_seed=11)
    assert sampled == baseline("hello", 30, temperature=0.9, sample_seed=11)
    assert sampled != baseline("hello", 30, temperature=0.9, sample_seed=12)
    assert sampled == speculative("hello", 30, alpha=0.6, gamma=3, temperature=0.9, sample_seed=11)


def test_corrupt_verifier_breaks_identity_when_the_draft_disagrees() -> None:
    differing = [
        p for p in PROMPTS if speculative(p, 33, alpha=0.5, gamma=4, corrupt=True) != baseline(p, 33)
    ]
    assert differing == list(PROMPTS)


def test_eos_ends_generation_and_max_tokens_caps_it() -> None:
    target = TargetModel("t", VOCAB, seed=3, eos_one_in=3)
    rounds = list(baseline_rounds(target, VOCAB.encode("x"), DecodeParams(max_tokens=500), 0.0))
    assert rounds[-1].finished == "stop" and len(rounds) < 500
    capped = list(baseline_rounds(TARGET, VOCAB.encode("x"), DecodeParams(max_tokens=5), 0.0))
    assert capped[-1].finished == "length" and len(tokens_of(capped)) == 5


def test_independent_count_matches_the_verifier_round_by_round() -> None:
    draft = DraftModel("specgate-mock-draft", VOCAB, 0.7)
    target = TargetModel("specgate-mock-target", VOCAB)
    prompt_ids = VOCAB.encode(chat_prompt_text("count me"))
    rounds = list(
        speculative_rounds(
            target,
            draft,
            prompt_ids,
            DecodeParams(max_tokens=40),
            gamma=4,
            target_step_s=0.0,
            draft_step_s=0.0,
        )
    )
    expected = expected_counts("count me", 40, gamma=4, alpha=0.7)
    assert sum(r.drafted for r in rounds) == expected.drafted
    assert sum(r.accepted for r in rounds) == expected.accepted
    assert sum(1 for r in rounds if r.drafted) == expected.drafts
    assert tuple(tokens_of(rounds)) == expected.tokens


def test_alpha_bounds_accept_everything_or_nothing() -> None:
    for alpha, expected_rate in ((1.0, 1.0), (0.0, 0.0)):
        counts = expected_counts("bounds", 30, gamma=3, alpha=alpha, eos_one_in=0)
        assert counts.accepted == expected_rate * counts.drafted


def test_vocabularies_differ_by_digest() -> None:
    assert vocabulary_named("words-v1").digest != vocabulary_named("words-v2").digest
    with pytest.raises(ValueError, match="unknown mock vocabulary 'nope'"):
        vocabulary_named("nope")
