"""The data a measurement works on: prompts in chat form and one sample per request.

Kept free of engine types so every runner works with any callable that answers a
prompt, including the fakes the tests use.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

Arm = Literal["baseline", "candidate"]
TokenCountSource = Literal["usage", "stream_deltas", "token_ids"]
ARMS: tuple[Arm, Arm] = ("baseline", "candidate")


@dataclass(frozen=True)
class ChatMessage:
    """One OpenAI-style chat message."""

    role: str
    content: str

    def to_dict(self) -> dict[str, object]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Prompt:
    """One prompt of a pinned set, with the output budget its set intends."""

    id: str
    messages: tuple[ChatMessage, ...]
    max_tokens: int

    def as_messages(self) -> list[dict[str, object]]:
        """The message list an engine's ``chat``/``stream`` takes."""
        return [message.to_dict() for message in self.messages]

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "messages": self.as_messages(),
            "max_tokens": self.max_tokens,
        }


@dataclass(frozen=True)
class RequestSample:
    """What one request cost and produced.

    ``tokens_per_s`` is end-to-end (output tokens over wall time, time to first
    token included) because that is what a user of the endpoint experiences.
    """

    wall_s: float
    ttft_s: float | None
    output_tokens: int
    text: str
    token_ids: tuple[int, ...] | None = None
    token_count_source: TokenCountSource = "usage"
    itl_s: tuple[float, ...] = ()
    """Gaps between successive streamed deltas (inter-token latency; a delta may hold several
    tokens where the server sends a verified draft at once). Empty for a non-streamed answer."""
    prompt_tokens: int | None = None
    """The prompt's length in tokens as the server counted it (usage), None where it did not say."""

    def __post_init__(self) -> None:
        if not self.wall_s > 0:
            raise ValueError(f"request sample: wall_s must be > 0, found {self.wall_s!r}")
        if self.output_tokens < 0:
            raise ValueError(
                f"request sample: output_tokens must be >= 0, found {self.output_tokens!r}"
            )

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.wall_s

    def to_dict(self) -> dict[str, object]:
        """Timings and a digest of the output; full outputs go to evidence only on mismatch."""
        return {
            "wall_s": self.wall_s,
            "ttft_s": self.ttft_s,
            "output_tokens": self.output_tokens,
            "tokens_per_s": self.tokens_per_s,
            "token_count_source": self.token_count_source,
            "itl_s": list(self.itl_s),
            "prompt_tokens": self.prompt_tokens,
            "text_sha256": hashlib.sha256(self.text.encode("utf-8")).hexdigest(),
            "has_token_ids": self.token_ids is not None,
        }


@dataclass(frozen=True)
class TimedSample:
    """A request sample placed in its run: which arm, which round, when (run-relative)."""

    arm: Arm
    prompt_id: str
    round_index: int
    started_s: float
    finished_s: float
    sample: RequestSample

    def to_dict(self) -> dict[str, object]:
        return {
            "arm": self.arm,
            "prompt_id": self.prompt_id,
            "round_index": self.round_index,
            "started_s": self.started_s,
            "finished_s": self.finished_s,
            **self.sample.to_dict(),
        }


@dataclass(frozen=True)
class SamplePair:
    """The baseline and candidate answers to one prompt in one round, taken back to back."""

    prompt_id: str
    round_index: int
    first_arm: Arm
    baseline: TimedSample
    candidate: TimedSample

    @property
    def speedup(self) -> float:
        """Candidate throughput over baseline throughput for this pair."""
        baseline_tps = self.baseline.sample.tokens_per_s
        if baseline_tps == 0:
            raise ValueError(
                f"prompt {self.prompt_id!r} round {self.round_index}: the baseline produced "
                "no output tokens, so no speedup can be computed"
            )
        return self.candidate.sample.tokens_per_s / baseline_tps

    @property
    def started_s(self) -> float:
        return min(self.baseline.started_s, self.candidate.started_s)

    @property
    def finished_s(self) -> float:
        return max(self.baseline.finished_s, self.candidate.finished_s)

    def to_dict(self) -> dict[str, object]:
        return {
            "prompt_id": self.prompt_id,
            "round_index": self.round_index,
            "first_arm": self.first_arm,
            "speedup": self.speedup,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
        }
