"""One request's generation: rounds of the mock models turned into text, telemetry and outcomes.

The streamed and the non-streamed routes both drive a :class:`Generation`, and
both assemble text through one :class:`TextAssembler`, so stop strings and
finish reasons agree between the two.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from pytest_specgate.engines.mock.envelopes import ChoiceOutcome
from pytest_specgate.engines.mock.faults import FaultBehaviour
from pytest_specgate.engines.mock.model import (
    DraftModel,
    Round,
    TargetModel,
    Vocabulary,
    baseline_rounds,
    speculative_rounds,
)
from pytest_specgate.engines.mock.requests import GenerationRequest
from pytest_specgate.engines.mock.settings import MockSettings
from pytest_specgate.engines.mock.telemetry import Counters, TelemetryWindow

__all__ = ["Generation", "GenerationSetup", "TextAssembler"]


@dataclass(frozen=True)
class GenerationSetup:
    """What one generation reads of the server's state, taken when its request arrives
    (``MockState.generation_setup``): the models, the settings, the greedy gate's decision
    and the telemetry window it counts into."""

    target: TargetModel
    draft: DraftModel | None
    vocab: Vocabulary
    settings: MockSettings
    corrupt: bool
    gate_reason: str | None
    speculative: bool
    telemetry: TelemetryWindow


class TextAssembler:
    """Turns tokens into text deltas, honouring stop strings without emitting past them.

    The last ``len(longest stop) - 1`` characters are held back until it is clear
    they do not begin a stop string, so streamed and non-streamed text agree.
    """

    def __init__(self, vocab: Vocabulary, stop: tuple[str, ...]) -> None:
        self._vocab = vocab
        self._stop = stop
        self._longest = max((len(s) for s in stop), default=0)
        self._holdback = max(self._longest - 1, 0)
        self.text = ""
        self.emitted = 0
        self.token_ids: list[int] = []
        self.stopped = False

    def push(self, token: int) -> str:
        before = len(self.text)
        self.token_ids.append(token)
        self.text += self._vocab.piece(token)
        if self._stop:
            start = max(0, before - self._longest + 1)
            hits = [i for i in (self.text.find(s, start) for s in self._stop) if i >= 0]
            if hits:
                self.text = self.text[: min(hits)]
                self.stopped = True
                return self.flush()
        safe = len(self.text) - self._holdback
        if safe <= self.emitted:
            return ""
        delta = self.text[self.emitted : safe]
        self.emitted = safe
        return delta

    def flush(self) -> str:
        delta = self.text[self.emitted :]
        self.emitted = len(self.text)
        return delta


class Generation:
    """Drives the rounds for one request and records them in the telemetry."""

    def __init__(self, setup: GenerationSetup, request: GenerationRequest, fault_behaviour: FaultBehaviour):
        self.setup = setup
        self.request = request
        self.fault_behaviour = fault_behaviour
        self.gate_reason = setup.gate_reason
        self.speculative = setup.speculative
        self.epoch = setup.telemetry.epoch
        self.target = setup.target
        self.draft = setup.draft
        for counters in self._counters():
            counters.add_request(len(request.prompt_ids), self.speculative, self.gate_reason)

    def _counters(self) -> Iterator[Counters]:
        yield self.setup.telemetry.totals
        window = self.setup.telemetry.current(self.epoch)
        if window is not None:
            yield window

    def rounds(self, choice: int) -> Iterator[Round]:
        request = self.request
        params = request.params
        if choice:
            params = dataclasses.replace(params, sample_seed=(params.sample_seed or 0) + choice)
        settings = self.setup.settings
        if not self.speculative or self.draft is None:
            return baseline_rounds(self.target, request.prompt_ids, params, settings.target_step_ms / 1000)
        return speculative_rounds(
            self.target,
            self.draft,
            request.prompt_ids,
            params,
            gamma=settings.num_draft_tokens,
            target_step_s=settings.target_step_ms / 1000,
            draft_step_s=settings.draft_step_ms / 1000,
            corrupt=self.setup.corrupt,
            fail_draft_after_rounds=self.fault_behaviour.draft_fails_after_rounds,
        )

    def record(self, round_: Round, tokens_kept: int) -> None:
        for counters in self._counters():
            counters.add_round(round_.drafted, round_.accepted, tokens_kept)
            if round_.draft_failed:
                counters.draft_failures += 1

    def feed(self, assembler: TextAssembler, round_: Round) -> list[tuple[str, int]]:
        """Push a round's tokens; returns (delta, token) pairs and records the round."""
        pieces: list[tuple[str, int]] = []
        for token in round_.tokens:
            pieces.append((assembler.push(token), token))
            if assembler.stopped:
                break
        self.record(round_, len(pieces))
        return pieces

    def finish_reason(self, assembler: TextAssembler, round_: Round | None) -> str:
        if assembler.stopped:
            return "stop"
        return round_.finished if round_ is not None and round_.finished else "length"

    def run_sync(self, choice: int) -> ChoiceOutcome:
        assembler = TextAssembler(self.setup.vocab, self.request.stop)
        last: Round | None = None
        for round_ in self.rounds(choice):
            last = round_
            self.feed(assembler, round_)
            if assembler.stopped or round_.finished:
                break
        assembler.flush()
        return ChoiceOutcome(assembler.text, assembler.token_ids, self.finish_reason(assembler, last))

    async def run_async(self, choice: int) -> ChoiceOutcome:
        assembler = TextAssembler(self.setup.vocab, self.request.stop)
        last: Round | None = None
        for round_ in self.rounds(choice):
            if round_.cost_s > 0:
                await asyncio.sleep(round_.cost_s)
            last = round_
            self.feed(assembler, round_)
            if assembler.stopped or round_.finished:
                break
        assembler.flush()
        return ChoiceOutcome(assembler.text, assembler.token_ids, self.finish_reason(assembler, last))

    def logprobs_for(self, token_ids: list[int]) -> list[dict[str, object]]:
        state = self.target.initial_state(self.request.prompt_ids)
        entries: list[dict[str, object]] = []
        for token in token_ids:
            piece = self.setup.vocab.piece(token)
            entries.append(
                {
                    "token": piece,
                    "logprob": self.target.logprob(state, token),
                    "bytes": list(piece.encode()),
                    "top_logprobs": [],
                }
            )
            state = self.target.advance(state, token)
        return entries

