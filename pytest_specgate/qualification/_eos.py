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

from pytest_specgate.qualification._greedy import GreedyOutput, compare_greedy
from pytest_specgate.qualification._recovery import RecoveryNotEvidenced

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine

__all__ = ["EosNotRespected", "EosPath", "eos_gate"]


class EosNotRespected(RecoveryNotEvidenced):
    """A path ran past EOS, reported the wrong finish reason, or disagreed with another path."""


@dataclass(frozen=True)
class EosPath:
    """One way to reach the model: an engine plus request params (e.g. a baseline-forcing one).

    ``speculative=True`` also demands that the engine's draft counter advanced over
    this path's requests, so a "speculative" path that silently ran the baseline fails.
    """

    name: str
    engine: Engine
    params: Mapping[str, object] = field(default_factory=dict)
    speculative: bool = False


def _drafted(engine: Engine) -> int | None:
    telemetry = engine.telemetry()
    return telemetry.drafted if telemetry.available else None


def _run(path: EosPath, messages: list[dict[str, object]], max_tokens: int, streamed: bool) -> GreedyOutput:
    params = {"temperature": 0.0, "max_tokens": max_tokens, **path.params}
    prompt = str(messages[-1].get("content")) if messages else ""
    if streamed:
        stream = path.engine.stream(messages, **params)
        text = stream.text
        return GreedyOutput(prompt, text, stream.token_ids, stream.finish_reason, stream.completion_tokens)
    result = path.engine.chat(messages, **params)
    return GreedyOutput(prompt, result.text, result.token_ids, result.finish_reason, result.completion_tokens)


def _stop_problems(label: str, output: GreedyOutput, max_tokens: int) -> list[str]:
    problems = []
    if output.finish_reason != "stop":
        problems.append(f"{label}: finish_reason {output.finish_reason!r}, expected 'stop' at EOS")
    if output.completion_tokens is not None and output.completion_tokens >= max_tokens:
        problems.append(f"{label}: ran to max_tokens={max_tokens} instead of stopping at EOS")
    return problems


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
        drafted_before = _drafted(path.engine) if path.speculative else None
        for streamed in (False, True):
            label = f"{path.name}/{'streamed' if streamed else 'non-streamed'}"
            try:
                output = _run(path, messages, max_tokens, streamed)
            except Exception as exc:  # the engine failing this request is the finding
                problems.append(f"{label}: request failed: {type(exc).__name__}: {exc}")
                continue
            runs[label] = output.to_dict()
            problems += _stop_problems(label, output, max_tokens)
            first = first or (label, output)
            mismatch = compare_greedy(first[1], output)
            if mismatch is not None:
                runs[label]["mismatch_with"] = {"path": first[0], **mismatch}
                problems.append(
                    f"{label}: output differs from {first[0]} at "
                    f"{mismatch['unit']} {mismatch['first_difference']}"
                )
        if path.speculative:
            drafted_after = _drafted(path.engine)
            if drafted_before is None or drafted_after is None or drafted_after <= drafted_before:
                problems.append(
                    f"{path.name}: declared speculative but its draft counter did not advance "
                    f"({drafted_before} -> {drafted_after})"
                )
    evidence: dict[str, object] = {"max_tokens": max_tokens, "paths": runs, "stopped_at_eos": not problems}
    if problems:
        raise EosNotRespected("eos: " + "; ".join(problems), evidence)
    return evidence
