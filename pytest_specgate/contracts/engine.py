"""The one engine interface every backend (mock, mlx, vllm, endpoint) implements.

Specs are written against :class:`Engine` only, so a spec that passes on the mock
engine runs unchanged on a real one; backends differ in how they boot and where
their telemetry comes from, never in what a spec sees.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, runtime_checkable

from pytest_specgate.contracts.capabilities import Capabilities

__all__ = [
    "CACHE_SETTING_KEYS",
    "ChatResult",
    "Engine",
    "EngineBootError",
    "EngineStartupRefused",
    "StreamResult",
    "Telemetry",
    "acceptance_rate_of",
    "boot_failure_text",
    "declared_version",
    "first_choice",
    "token_ids_of",
]


# What an engine's ``versions()`` says about the caches that make a repeated prompt cheaper: vLLM's
# prefix cache, mlx_lm.server's prompt cache. Two arms of a paired run must agree on them.
CACHE_SETTING_KEYS = ("prefix_caching", "prompt_cache_size")


def acceptance_rate_of(drafted: int | None, accepted: int | None) -> float | None:
    """accepted / drafted, or None when there is nothing to divide (never invent a rate)."""
    if drafted is None or accepted is None or drafted <= 0:
        return None
    return accepted / drafted


@dataclass(frozen=True)
class Telemetry:
    """Speculative-decoding counters normalized across backends.

    ``available`` is False when a backend exposes no counters at all; the count
    fields are then None rather than zero, so a spec cannot mistake "unknown" for
    "nothing accepted".
    """

    available: bool
    enabled: bool
    draft_model_id: str | None
    num_draft_tokens: int | None
    drafted: int | None
    accepted: int | None
    acceptance_rate: float | None
    window: str
    source: str
    drafts: int | None = None
    """Draft rounds (verification steps that drafted), the denominator of per-position rates."""
    accepted_per_position: tuple[int, ...] | None = None
    """Accepted tokens at draft position 1, 2, ... (index 0 is position 1); None where the backend
    does not count them (mlx-lm), never zeros."""

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the per-position counts as a list."""
        fields = dataclasses.asdict(self)
        positions = self.accepted_per_position
        fields["accepted_per_position"] = None if positions is None else list(positions)
        return fields

    @classmethod
    def unavailable(
        cls,
        *,
        enabled: bool,
        draft_model_id: str | None = None,
        num_draft_tokens: int | None = None,
    ) -> Telemetry:
        """Telemetry for a backend that reports no acceptance counters."""
        return cls(
            available=False,
            enabled=enabled,
            draft_model_id=draft_model_id,
            num_draft_tokens=num_draft_tokens,
            drafted=None,
            accepted=None,
            acceptance_rate=None,
            window="none",
            source="unavailable",
        )


@dataclass(frozen=True)
class ChatResult:
    """One non-streamed completion, with the raw JSON body kept for evidence."""

    text: str
    token_ids: tuple[int, ...] | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    raw: dict[str, object]
    wall_s: float


def first_choice(event: Mapping[str, object]) -> Mapping[str, object] | None:
    """``choices[0]`` of a completion body or stream chunk, when there is one."""
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0]
    return None


def _delta_text(choice: Mapping[str, object]) -> str:
    """Text carried by a chat chunk (``delta.content``) or a completions chunk (``text``)."""
    delta = choice.get("delta")
    if isinstance(delta, Mapping):
        content = delta.get("content")
        return content if isinstance(content, str) else ""
    text = choice.get("text")
    return text if isinstance(text, str) else ""


def token_ids_of(choice: Mapping[str, object]) -> list[int] | None:
    """A choice's ``token_ids`` (vLLM ``return_token_ids``), when it is a list of ints."""
    ids = choice.get("token_ids")
    if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
        return list(ids)
    return None


class StreamResult:
    """Iterate for text deltas; after exhaustion the totals and timings are set.

    Reading :attr:`text` (or any total) before the stream is exhausted drains it
    first, so ``engine.stream(msgs).text`` is the whole answer. Times are measured
    from ``started`` (when the request was sent), so ``ttft_s`` includes queueing
    and prefill, as a user would see it.
    """

    def __init__(
        self,
        events: Iterable[Mapping[str, object]],
        *,
        started: float | None = None,
        on_close: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._events = iter(events)
        self._clock = clock
        self._started = clock() if started is None else started
        self._on_close = on_close
        self._closed = False
        self._exhausted = False
        self._parts: list[str] = []
        self._token_ids: list[int] | None = None
        self._arrivals: list[float] = []
        self._finish_reason: str | None = None
        self._completion_tokens: int | None = None
        self._prompt_tokens: int | None = None
        self.raw_events: list[dict[str, object]] = []

    def __iter__(self) -> Iterator[str]:
        try:
            for event in self._events:
                delta = self._record(event)
                if delta:
                    yield delta
            self._exhausted = True
        finally:
            self.close()

    def _record(self, event: Mapping[str, object]) -> str:
        self.raw_events.append(dict(event))
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            completion = usage.get("completion_tokens")
            prompt = usage.get("prompt_tokens")
            self._completion_tokens = completion if isinstance(completion, int) else None
            self._prompt_tokens = prompt if isinstance(prompt, int) else None
        choice = first_choice(event)
        if choice is None:
            return ""
        reason = choice.get("finish_reason")
        if isinstance(reason, str):
            self._finish_reason = reason
        ids = token_ids_of(choice)
        if ids is not None:
            self._token_ids = (self._token_ids or []) + ids
        delta = _delta_text(choice)
        if delta:
            self._arrivals.append(self._clock())
            self._parts.append(delta)
        return delta

    def drain(self) -> StreamResult:
        """Consume whatever is left of the stream; returns self for chaining."""
        if not self._exhausted and not self._closed:
            for _ in self:
                pass
        return self

    def close(self) -> None:
        """Stop reading and release the connection (the server sees a cancel)."""
        if self._closed:
            return
        self._closed = True
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> StreamResult:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def exhausted(self) -> bool:
        return self._exhausted

    @property
    def text(self) -> str:
        self.drain()
        return "".join(self._parts)

    @property
    def deltas(self) -> tuple[str, ...]:
        self.drain()
        return tuple(self._parts)

    @property
    def token_ids(self) -> tuple[int, ...] | None:
        self.drain()
        return None if self._token_ids is None else tuple(self._token_ids)

    @property
    def finish_reason(self) -> str | None:
        self.drain()
        return self._finish_reason

    @property
    def completion_tokens(self) -> int | None:
        self.drain()
        return self._completion_tokens

    @property
    def prompt_tokens(self) -> int | None:
        self.drain()
        return self._prompt_tokens

    @property
    def ttft_s(self) -> float | None:
        """Seconds from sending the request to the first non-empty delta."""
        self.drain()
        return self._arrivals[0] - self._started if self._arrivals else None

    @property
    def inter_token_s(self) -> tuple[float, ...]:
        """Gaps between successive non-empty deltas."""
        self.drain()
        arrivals = self._arrivals
        return tuple(later - earlier for earlier, later in itertools.pairwise(arrivals))


@runtime_checkable
class Engine(Protocol):
    """What a spec may use; every backend returns an object satisfying this."""

    backend: str
    base_url: str
    model_id: str

    def chat(self, messages: list[dict[str, object]], **params: object) -> ChatResult: ...

    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamResult: ...

    def telemetry(self) -> Telemetry: ...

    def versions(self) -> dict[str, str]: ...

    def capabilities(self) -> Capabilities:
        """What this engine can do beyond serving (reset, faults, swap, process, raw status)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Engine: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class EngineStartupRefused(Exception):
    """The engine refused to start by design (fail-closed), e.g. a tokenizer mismatch.

    ``code`` is stable and machine-readable; the message names the models and
    figures so the user sees what was expected and what was found.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class EngineBootError(Exception):
    """The engine did not become healthy (timeout or early exit).

    Boot code attaches the last lines of the engine log with ``add_note``.
    """


def boot_failure_text(where: str, error: BaseException) -> str:
    """What a user reads when a boot failed and nothing caught it: one summary line naming the test,
    then the notes the boot attached (the engine log's last lines); no traceback, since the
    cause is in the engine's log, not in the frames that waited for it."""
    notes = [str(note) for note in getattr(error, "__notes__", ())]
    return "\n".join([f"{where}: engine boot failed: {error}", *notes])


UNKNOWN_VERSIONS = frozenset({"", "unknown", "none"})
ENGINE_VERSION_BOOKKEEPING = frozenset({"backend", "model"})
"""Entries ``ClientEngine.versions()`` adds itself: they name no software."""


def declared_version(versions: Mapping[str, object]) -> tuple[str, str] | None:
    """``(name, version)``: the first entry (by name) of a third-party engine's ``versions()``
    that names software and a known version, the shape docs/backends.md shows
    (``{"specgate-echo": "1.0"}``); None when it names none."""
    for name in sorted(versions):
        value = versions[name]
        if (name not in ENGINE_VERSION_BOOKKEEPING and isinstance(value, str)
                and value.strip().lower() not in UNKNOWN_VERSIONS):
            return name, value
    return None
