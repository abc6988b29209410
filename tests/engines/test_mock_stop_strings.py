"""A stop string that arrives split across streamed chunks still stops the stream, unseen.

A draft-less mock sends one event per token, so a stop string made of the last
character of one token and the first characters of the next (``"E"`` then
``"ND"``) can only be caught by holding text back across events: the stream
must end before the stop string and never emit any part of it.
"""

from __future__ import annotations

import itertools

from engines_testkit import GREEDY, user

from pytest_specgate.engines.mock import MockEngine

PROMPT = user("tell me a long story about rivers")


def _split_stop(deltas: list[str]) -> tuple[str, int]:
    """A stop string spanning two chunks (last char of one + first two of the next), and where it starts.

    The first such pair whose string does not occur earlier in the text, so the stream
    must stop exactly there.
    """
    text = "".join(deltas)
    end = 0
    for first, second in itertools.pairwise(deltas):
        end += len(first)
        if len(first) >= 1 and len(second) >= 2:
            stop = first[-1] + second[:2]
            if text.find(stop) == end - 1:
                return stop, end - 1
    raise AssertionError(f"no stop string spans two chunks of {deltas!r}")


def test_a_stop_string_split_across_two_chunks_stops_the_stream_and_is_not_emitted(
    baseline_engine: MockEngine,
) -> None:
    free = baseline_engine.stream(PROMPT, max_tokens=40, **GREEDY)
    deltas = list(free)
    full = "".join(deltas)
    stop, start = _split_stop(deltas)
    assert all(stop not in delta for delta in deltas)  # it really spans two chunks

    stopped = baseline_engine.stream(PROMPT, max_tokens=40, stop=[stop], **GREEDY)
    pieces = list(stopped)

    assert "".join(pieces) == full[:start]
    assert stopped.text == full[:start]
    assert stopped.finish_reason == "stop"
    whole = baseline_engine.chat(PROMPT, max_tokens=40, stop=[stop], **GREEDY)
    assert (whole.text, whole.finish_reason) == (full[:start], "stop")
