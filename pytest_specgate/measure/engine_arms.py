"""Build the runners' arm callables from engines (duck-typed on the engine protocol).

Kept apart from the runners so tests drive them with plain functions and the
measurement code never imports an engine backend.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from pytest_specgate.contracts.engine import CACHE_SETTING_KEYS
from pytest_specgate.measure.paired import CacheSettings, PromptRunner, TelemetryReader
from pytest_specgate.measure.samples import Prompt, RequestSample, TokenCountSource
from pytest_specgate.measure.statistics import TelemetryLike


class StreamOutcome(Protocol):
    """The parts of ``contracts.engine.StreamResult`` a sample needs."""

    def __iter__(self) -> Iterator[str]: ...
    @property
    def text(self) -> str: ...
    @property
    def ttft_s(self) -> float | None: ...
    @property
    def completion_tokens(self) -> int | None: ...
    @property
    def token_ids(self) -> tuple[int, ...] | None: ...
    @property
    def prompt_tokens(self) -> int | None: ...


class StreamingEngine(Protocol):
    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamOutcome: ...


def sample_from_stream(
    engine: StreamingEngine,
    prompt: Prompt,
    params: dict[str, object],
    clock: Callable[[], float],
) -> RequestSample:
    """Stream one answer to the end and time it; wall time includes connection and prefill."""
    started = clock()
    outcome = engine.stream(prompt.as_messages(), **params)
    arrivals = [clock() for _ in outcome]
    deltas = len(arrivals)
    wall_s = clock() - started
    token_ids = outcome.token_ids
    count: int
    source: TokenCountSource
    if outcome.completion_tokens is not None:
        count, source = outcome.completion_tokens, "usage"
    elif token_ids is not None:
        count, source = len(token_ids), "token_ids"
    else:
        count, source = deltas, "stream_deltas"
    return RequestSample(
        wall_s=wall_s,
        ttft_s=outcome.ttft_s,
        output_tokens=count,
        text=outcome.text,
        token_ids=token_ids,
        token_count_source=source,
        itl_s=tuple(later - earlier for earlier, later in itertools.pairwise(arrivals)),
        prompt_tokens=outcome.prompt_tokens,
    )


def engine_arm(
    engine: StreamingEngine,
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
    **params: object,
) -> PromptRunner:
    """An arm that streams each prompt from ``engine`` (greedy by default).

    ``max_tokens`` overrides the prompt's own budget; extra ``params`` go to the
    request unchanged (e.g. ``seed``).
    """

    def answer(prompt: Prompt) -> RequestSample:
        request = {
            "temperature": temperature,
            "max_tokens": prompt.max_tokens if max_tokens is None else max_tokens,
            **params,
        }
        return sample_from_stream(engine, prompt, request, clock)

    return answer


class VersionedEngine(Protocol):
    def versions(self) -> dict[str, str]: ...


def arm_caching(engine: VersionedEngine) -> CacheSettings:
    """The caching settings ``engine`` reports (``CACHE_SETTING_KEYS``), None where it does not:
    ``run_paired(..., caching=(arm_caching(baseline), arm_caching(candidate)))``."""
    versions = engine.versions()
    return {key: versions.get(key) for key in CACHE_SETTING_KEYS}


class TelemetrySource(Protocol):
    def telemetry(self) -> TelemetryLike: ...


def engine_telemetry(engine: TelemetrySource) -> TelemetryReader:
    """The candidate engine's telemetry reader, for ``candidate_telemetry=``."""
    return engine.telemetry
