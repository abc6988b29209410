"""The mock's language models: a deterministic target, a draft of known agreement, a verifier.

Every token is a pure function of (model id, seed, context), folded into a 64-bit
context state, so greedy output is reproducible across runs, processes and
machines. The draft agrees with the target at a position exactly when a hash of
(draft id, seed, context) falls below alpha, so a test can count drafted and
accepted tokens independently of the server. Verification keeps the longest
agreeing prefix and then the target's own token, which makes greedy speculative
output identical to greedy baseline output by construction.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache

__all__ = [
    "VOCABULARIES",
    "DecodeParams",
    "DraftModel",
    "Round",
    "TargetModel",
    "Vocabulary",
    "baseline_rounds",
    "speculative_rounds",
    "vocabulary_named",
]

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_SALT_NEXT = 0x51ED270B27A3C1F5
_SALT_EOS = 0x2545F4914F6CDD1D
_SALT_LOGIT = 0x6A09E667F3BCC909
_SALT_AGREE = 0x3C6EF372FE94F82B
_SALT_WRONG = 0xA54FF53A5F1D36F1
_TOP_LOGIT = 4.0
_OTHER_LOGIT_SPAN = 3.0


def mix64(value: int) -> int:
    """splitmix64 finalizer: a cheap, well-distributed 64-bit hash step."""
    value = (value + _GOLDEN) & _MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
    return value ^ (value >> 31)


@lru_cache(maxsize=65536)
def seed_state(*parts: object) -> int:
    """A 64-bit state from readable parts (model id, seed), stable across processes.

    Memoised: prompts repeat their words and every draft round asks for its salt.
    """
    joined = "\x00".join(str(part) for part in parts).encode()
    return int.from_bytes(hashlib.sha256(joined).digest()[:8], "big")


def unit_interval(value: int) -> float:
    """Map a 64-bit hash to [0, 1)."""
    return (value >> 11) / float(1 << 53)


_WORDS_V1 = (
    "the", "a", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and",
    "river", "stone", "light", "green", "model", "token", "draft", "target", "fast", "slow",
    "north", "south", "east", "west", "cloud", "rain", "sun", "moon", "star", "tree",
    "bird", "song", "road", "city", "bridge", "tower", "garden", "window", "paper", "ink",
    "blue", "red", "small", "large", "early", "late", "quiet", "bright",
)  # fmt: skip
_WORDS_V2 = (*_WORDS_V1[:-8], "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta")


@dataclass(frozen=True)
class Vocabulary:
    """Word-like tokens (each with a leading space) so generated text stays readable."""

    name: str
    tokens: tuple[str, ...]

    @property
    def eos_id(self) -> int:
        return len(self.tokens)

    @property
    def size(self) -> int:
        """Number of token ids including EOS."""
        return len(self.tokens) + 1

    @property
    def digest(self) -> str:
        return hashlib.sha256("\x00".join(self.tokens).encode()).hexdigest()[:16]

    def encode(self, text: str) -> tuple[int, ...]:
        """Whitespace words mapped onto token ids; unknown words hash onto the vocabulary."""
        index = self._index
        words = text.split()
        return tuple(index.get(word, seed_state(self.name, word) % len(self.tokens)) for word in words) or (
            0,
        )

    @cached_property
    def _index(self) -> dict[str, int]:
        return {token.strip(): i for i, token in enumerate(self.tokens)}

    def piece(self, token_id: int) -> str:
        return "" if token_id == self.eos_id else self.tokens[token_id]


VOCABULARIES: dict[str, Vocabulary] = {
    "words-v1": Vocabulary("words-v1", tuple(f" {word}" for word in _WORDS_V1)),
    "words-v2": Vocabulary("words-v2", tuple(f" {word}" for word in _WORDS_V2)),
}


def vocabulary_named(name: str) -> Vocabulary:
    vocab = VOCABULARIES.get(name)
    if vocab is None:
        raise ValueError(f"unknown mock vocabulary {name!r}; known: {sorted(VOCABULARIES)}")
    return vocab


@dataclass(frozen=True)
class TargetModel:
    """The deterministic target: state -> greedy token, plus a seeded sampling distribution.

    ``eos_one_in`` makes EOS the greedy token at roughly one position in N
    (0 disables EOS), so natural stops happen without being the common case.
    """

    model_id: str
    vocab: Vocabulary
    seed: int = 0
    eos_one_in: int = 64

    def initial_state(self, prompt_ids: tuple[int, ...]) -> int:
        state = seed_state(self.model_id, self.seed)
        for token in prompt_ids:
            state = self.advance(state, token)
        return state

    @staticmethod
    def advance(state: int, token: int) -> int:
        """Fold one token into the context state."""
        return mix64(state ^ ((token + 1) * _GOLDEN & _MASK))

    def greedy(self, state: int) -> int:
        if self.eos_one_in and mix64(state ^ _SALT_EOS) % self.eos_one_in == 0:
            return self.vocab.eos_id
        return mix64(state ^ _SALT_NEXT) % len(self.vocab.tokens)

    def logits(self, state: int) -> list[float]:
        """Logits whose argmax is :meth:`greedy`, the rest spread below it."""
        top = self.greedy(state)
        return [
            _TOP_LOGIT
            if token == top
            else unit_interval(mix64(state ^ _SALT_LOGIT ^ (token * _GOLDEN & _MASK))) * _OTHER_LOGIT_SPAN
            for token in range(self.vocab.size)
        ]

    def choose(self, state: int, params: DecodeParams, rng: random.Random | None) -> int:
        """The target's token at this context under the request's decoding parameters."""
        if rng is None and not params.logit_bias:
            return self.greedy(state)
        logits = self.logits(state)
        for token, bias in params.logit_bias:
            if 0 <= token < len(logits):
                logits[token] += bias
        if rng is None:
            return max(range(len(logits)), key=logits.__getitem__)
        return _sample(logits, params.temperature, rng)

    def logprob(self, state: int, token: int) -> float:
        """Log-probability of ``token`` at temperature 1 (for the ``logprobs`` feature)."""
        logits = self.logits(state)
        peak = max(logits)
        total = sum(math.exp(value - peak) for value in logits)
        return logits[token] - peak - math.log(total)


def _sample(logits: list[float], temperature: float, rng: random.Random) -> int:
    peak = max(logits)
    weights = [math.exp((value - peak) / temperature) for value in logits]
    threshold = rng.random() * sum(weights)
    running = 0.0
    for token, weight in enumerate(weights):
        running += weight
        if running > threshold:
            return token
    return len(weights) - 1


@dataclass(frozen=True)
class DraftModel:
    """A draft that agrees with the target at a context with probability ``alpha``.

    Agreement is a pure function of (draft id, seed, context state), so it is
    deterministic per position and countable from outside the server.
    """

    model_id: str
    vocab: Vocabulary
    alpha: float
    seed: int = 0

    @cached_property
    def salt(self) -> int:
        return seed_state("draft", self.model_id, self.seed)

    def agrees(self, state: int) -> bool:
        return unit_interval(mix64(state ^ self.salt ^ _SALT_AGREE)) < self.alpha

    def propose(self, state: int, target_token: int) -> int:
        """The draft's token: the target's when it agrees, a different valid id otherwise."""
        if self.agrees(state):
            return target_token
        offset = 1 + mix64(state ^ self.salt ^ _SALT_WRONG) % (self.vocab.size - 1)
        return (target_token + offset) % self.vocab.size


@dataclass(frozen=True)
class DecodeParams:
    max_tokens: int
    temperature: float = 0.0
    sample_seed: int | None = None
    logit_bias: tuple[tuple[int, float], ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class Round:
    """One step of decoding: the tokens it emitted and what the verifier counted.

    ``accepted`` is the longest agreeing draft prefix; ``drafted == 0`` marks a
    plain target step. ``finished`` is "stop" at EOS, "length" at max_tokens.
    """

    tokens: tuple[int, ...]
    drafted: int
    accepted: int
    cost_s: float
    finished: str | None
    draft_failed: bool = False


def _rng_for(params: DecodeParams) -> random.Random | None:
    if params.greedy:
        return None
    return random.Random(params.sample_seed)


def baseline_rounds(
    target: TargetModel, prompt_ids: tuple[int, ...], params: DecodeParams, step_s: float
) -> Iterator[Round]:
    """Target-only decoding: one token per step."""
    state = target.initial_state(prompt_ids)
    yield from _target_steps(target, state, params, step_s, params.max_tokens, _rng_for(params))


def _target_steps(
    target: TargetModel,
    state: int,
    params: DecodeParams,
    step_s: float,
    remaining: int,
    rng: random.Random | None,
) -> Iterator[Round]:
    eos = target.vocab.eos_id
    while remaining > 0:
        token = target.choose(state, params, rng)
        if token == eos:
            yield Round((), 0, 0, step_s, "stop")
            return
        remaining -= 1
        state = target.advance(state, token)
        yield Round((token,), 0, 0, step_s, None if remaining else "length")


def speculative_rounds(
    target: TargetModel,
    draft: DraftModel,
    prompt_ids: tuple[int, ...],
    params: DecodeParams,
    *,
    gamma: int,
    target_step_s: float,
    draft_step_s: float,
    corrupt: bool = False,
    fail_draft_after_rounds: int | None = None,
) -> Iterator[Round]:
    """Draft ``k = min(gamma, remaining - 1)`` tokens, verify, emit prefix + target token.

    A round with one token left is a plain target step (nothing to draft). With
    ``corrupt`` the verifier skips the comparison and keeps every draft token, the
    classic bug the identity spec must catch. ``fail_draft_after_rounds`` makes
    the draft fail after that many verification rounds; decoding then falls back
    to target-only steps.
    """
    rng = _rng_for(params)
    eos = target.vocab.eos_id
    state = target.initial_state(prompt_ids)
    remaining = params.max_tokens
    rounds_done = 0
    while remaining > 0:
        if fail_draft_after_rounds is not None and rounds_done >= fail_draft_after_rounds:
            yield Round((), 0, 0, 0.0, None, draft_failed=True)
            yield from _target_steps(target, state, params, target_step_s, remaining, rng)
            return
        k = min(gamma, remaining - 1)
        if k == 0:
            yield from _target_steps(target, state, params, target_step_s, remaining, rng)
            return
        emitted: list[int] = []
        accepted = 0
        finished: str | None = None
        correction: int | None = None
        for _ in range(k):
            target_token = target.choose(state, params, rng)
            proposal = draft.propose(state, target_token)
            if proposal != target_token and not corrupt:
                correction = target_token
                break
            accepted += 1
            if proposal == eos:
                finished = "stop"
                break
            emitted.append(proposal)
            state = target.advance(state, proposal)
        else:
            correction = target.choose(state, params, rng)
        if correction == eos:
            finished = "stop"
        elif correction is not None:
            emitted.append(correction)
            state = target.advance(state, correction)
        remaining -= len(emitted)
        if finished is None and remaining == 0:
            finished = "length"
        rounds_done += 1
        yield Round(tuple(emitted), k, accepted, k * draft_step_s + target_step_s, finished)
        if finished is not None:
            return
