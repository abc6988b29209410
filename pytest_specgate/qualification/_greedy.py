"""Greedy outputs and their comparison: what "recovered" and "the same on every path" are measured by.

The fault gates and the EOS gate both compare a greedy answer with a reference
one; the comparison names the first differing position and keeps both sequences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["GREEDY_PROMPTS", "GreedyOutput", "Messages", "compare_greedy", "messages_for"]

GREEDY_PROMPTS: Final = (
    "Name three rivers and the cities on their banks.",
    "Describe a quiet garden at dawn in two sentences.",
    "List the planets from the sun outwards.",
    "Explain what a draft model does in speculative decoding.",
)
Messages = list[dict[str, object]]


def messages_for(prompt: str) -> Messages:
    return [{"role": "user", "content": prompt}]


@dataclass(frozen=True)
class GreedyOutput:
    prompt: str
    text: str
    token_ids: tuple[int, ...] | None
    finish_reason: str | None
    completion_tokens: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "prompt": self.prompt,
            "text": self.text,
            "token_ids": list(self.token_ids) if self.token_ids is not None else None,
            "finish_reason": self.finish_reason,
            "completion_tokens": self.completion_tokens,
        }


def compare_greedy(before: GreedyOutput, after: GreedyOutput) -> dict[str, object] | None:
    """None when identical; else the first differing position and both sequences."""
    if before.token_ids is not None and after.token_ids is not None:
        first: Sequence[object] = before.token_ids
        second: Sequence[object] = after.token_ids
        unit = "token"
    else:
        first, second, unit = before.text, after.text, "character"
    if list(first) == list(second):
        return None
    position = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), None)
    return {
        "prompt": before.prompt,
        "unit": unit,
        "first_difference": min(len(first), len(second)) if position is None else position,
        "before": list(first) if unit == "token" else before.text,
        "after": list(second) if unit == "token" else after.text,
    }
