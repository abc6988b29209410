"""The EOS gate: a prompt that leads to EOS must stop there, the same way, on every path.

Speculative decoding has its own way to hit EOS (inside an accepted draft run),
and streaming has its own way to report it, so each combination is checked:
non-streamed and streamed, speculative and baseline. All must end with
``finish_reason == "stop"`` before ``max_tokens`` and produce the same output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_specgate.qualification._faults import GreedyOutput, RecoveryNotEvidenced, compare_greedy

if TYPE_CHECKING:
    from pytest_specgate.engines.protocol import Engine

__all__ = ["EosNotRespected", "EosPath", "eos_gate"]


class EosNotRespected(RecoveryNotEvidenced):
    """A path ran past EOS, reported the wrong finish reason, or disagreed with another path."""


@dataclass(frozen=True)
class EosPath:
    """One way to reach the model: an engine plus request params (e.g. a baseline-forcing one)."""

    name: str
    engine: Engine
    params: Mapping[str, object] = field(default_factory=dict)


def _run(
    path: EosPath, messages: list[dict[str, object]], max_tokens: int, streamed: bool
) -> dict[str, object]:
    params = {"temperature": 0.0, "max_tokens": max_tokens, **path.params}
    if streamed:
        stream = path.engine.stream(messages, **params)
        text = stream.text
        output = GreedyOutput("", text, stream.token_ids, stream.finish_reason)
        completion_tokens = stream.completion_tokens
    else:
        result = path.engine.chat(messages, **params)
        output = GreedyOutput("", result.text, result.token_ids, result.finish_reason)
        completion_tokens = result.completion_tokens
    return {"output": output, "completion_tokens": completion_tokens}


def eos_gate(
    paths: Sequence[EosPath], messages: list[dict[str, object]], *, max_tokens: int = 256
) -> dict[str, object]:
    """Check every path non-streamed and streamed; raises :class:`EosNotRespected` with the evidence."""
    if not paths:
        raise ValueError("eos_gate needs at least one path (e.g. speculative and baseline)")
    problems: list[str] = []
    runs: dict[str, dict[str, object]] = {}
    first: tuple[str, GreedyOutput] | None = None
    for path in paths:
        for streamed in (False, True):
            label = f"{path.name}/{'streamed' if streamed else 'non-streamed'}"
            try:
                run = _run(path, messages, max_tokens, streamed)
            except Exception as exc:
                problems.append(f"{label}: request failed: {type(exc).__name__}: {exc}")
                continue
            output = run["output"]
            assert isinstance(output, GreedyOutput)
            tokens = run["completion_tokens"]
            runs[label] = {**output.to_dict(), "completion_tokens": tokens}
            if output.finish_reason != "stop":
                problems.append(f"{label}: finish_reason {output.finish_reason!r}, expected 'stop' at EOS")
            if isinstance(tokens, int) and tokens >= max_tokens:
                problems.append(f"{label}: ran to max_tokens={max_tokens} instead of stopping at EOS")
            if first is None:
                first = (label, output)
                continue
            mismatch = compare_greedy(first[1], output)
            if mismatch is not None:
                runs[label]["mismatch_with"] = {"path": first[0], **mismatch}
                problems.append(
                    f"{label}: output differs from {first[0]} at "
                    f"{mismatch['unit']} {mismatch['first_difference']}"
                )
    evidence: dict[str, object] = {"max_tokens": max_tokens, "paths": runs, "stopped_at_eos": not problems}
    if problems:
        raise EosNotRespected("eos: " + "; ".join(problems), evidence)
    return evidence
