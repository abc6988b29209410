"""The one in-memory engine of the test kits: every capability the smoke floor checks, and the
counters and greedy answers the qualification gates read, each breakable on purpose.

Greedy output is a hash of the prompt, so a request repeated answers the same, unless
``drift`` changes it; ``dead`` refuses every request; ``counting`` False freezes the request
counter; ``broken`` names the capabilities that misbehave (``tool-call``, ``structured-output``,
``vision``, ``long-context``, ``reasoning-streaming``, ``streaming``). Every request is kept
in ``requests``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from types import TracebackType

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import ChatResult, StreamResult, Telemetry


def _prompt_of(messages: list[dict[str, object]]) -> str:
    return " ".join(str(message.get("content")) for message in messages)


@dataclass
class FakeEngine:
    """An engine of the ``Engine`` protocol, answering from memory (see the module docstring)."""

    backend: str = "fake"
    base_url: str = "http://127.0.0.1:9"
    model_id: str = "fake-model"
    broken: frozenset[str] = frozenset()
    requests_total: int = 0
    slots_active: int = 0
    cancelled_total: int = 0
    counting: bool = True
    drift: bool = False
    dead: bool = False
    finish_reason: str = "stop"
    stream_finish_reason: str = "stop"
    requests: list[dict[str, object]] = field(default_factory=list)

    def _tokens(self, prompt: str, max_tokens: int) -> tuple[int, ...]:
        digest = hashlib.sha256(("drift:" if self.drift else "").encode() + prompt.encode()).digest()
        return tuple(digest[: min(max_tokens, 8)])

    def _admit(self, messages: list[dict[str, object]], params: dict[str, object]) -> tuple[int, ...]:
        if self.dead:
            raise ConnectionError("fake engine is dead")
        self.requests.append({"messages": messages, **params})
        if self.counting:
            self.requests_total += 1
        max_tokens = params.get("max_tokens", 16)
        assert isinstance(max_tokens, int)
        return self._tokens(_prompt_of(messages), max_tokens)

    def _message(self, messages: list[dict[str, object]], params: dict[str, object],
                 tokens: tuple[int, ...]) -> dict[str, object]:
        """The assistant message: a tool call, JSON, an image's answer, else the greedy tokens."""
        if "tools" in params and "tool-call" not in self.broken:
            call = {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"type": "function", "function": call}]}
        if "response_format" in params:
            document = {"name": "Ada"} if "structured-output" in self.broken else {"name": "Ada", "age": 36}
            return {"role": "assistant", "content": json.dumps(document)}
        if isinstance(messages[0].get("content"), list):
            return {"role": "assistant", "content": "" if "vision" in self.broken else "Red."}
        return {"role": "assistant", "content": " ".join(f"t{token}" for token in tokens)}

    def chat(self, messages: list[dict[str, object]], **params: object) -> ChatResult:
        tokens = self._admit(messages, dict(params))
        message = self._message(messages, dict(params), tokens)
        words = len(_prompt_of(messages).split())
        prompt_tokens = words // 2 if "long-context" in self.broken else words + 5
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        token_ids = tokens if text == " ".join(f"t{token}" for token in tokens) else None
        return ChatResult(text, token_ids, self.finish_reason, prompt_tokens, len(tokens),
                          {"choices": [{"message": message}]}, 0.0)

    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamResult:
        tokens = self._admit(messages, {**params, "stream": True})
        events: list[dict[str, object]] = []
        if "reasoning-streaming" not in self.broken:
            events.append({"choices": [{"delta": {"reasoning_content": "17 has no divisors but 1 and 17."}}]})
        if "streaming" not in self.broken:
            events += [
                {"choices": [{"delta": {"content": f"{' ' if i else ''}t{token}"}, "token_ids": [token]}]}
                for i, token in enumerate(tokens)
            ]
        events.append({"choices": [{"delta": {}, "finish_reason": self.stream_finish_reason}]})
        events.append({"choices": [], "usage": {"completion_tokens": len(tokens), "prompt_tokens": 3}})
        return StreamResult(events)

    def telemetry(self) -> Telemetry:
        return Telemetry.unavailable(enabled=False)

    def versions(self) -> dict[str, str]:
        return {"backend": self.backend}

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def close(self) -> None:
        return None

    def __enter__(self) -> FakeEngine:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
