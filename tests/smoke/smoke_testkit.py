"""An in-memory engine that has every capability the smoke floor can check, each one breakable."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import TracebackType

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import ChatResult, StreamResult, Telemetry


@dataclass
class CapableEngine:
    """Answers tools with a tool call, json_schema with JSON, images with text; ``broken`` disables one."""

    broken: frozenset[str] = frozenset()
    backend: str = "fake"
    base_url: str = "http://127.0.0.1:9"
    model_id: str = "capable-model"
    requests: list[dict[str, object]] = field(default_factory=list)

    def chat(self, messages: list[dict[str, object]], **params: object) -> ChatResult:
        self.requests.append({"messages": messages, **params})
        message: dict[str, object] = {"role": "assistant", "content": "Hello there."}
        if "tools" in params and "tool-call" not in self.broken:
            call = {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"type": "function", "function": call}],
            }
        elif "response_format" in params:
            document = {"name": "Ada"} if "structured-output" in self.broken else {"name": "Ada", "age": 36}
            message["content"] = json.dumps(document)
        elif isinstance(messages[0].get("content"), list):
            message["content"] = "" if "vision" in self.broken else "Red."
        words = len(str(messages[0].get("content")).split())
        prompt_tokens = words // 2 if "long-context" in self.broken else words + 5
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        return ChatResult(text, None, "stop", prompt_tokens, 3, {"choices": [{"message": message}]}, 0.0)

    def stream(self, messages: list[dict[str, object]], **params: object) -> StreamResult:
        self.requests.append({"messages": messages, "stream": True, **params})
        events: list[dict[str, object]] = []
        if "reasoning-streaming" not in self.broken:
            events.append({"choices": [{"delta": {"reasoning_content": "17 has no divisors but 1 and 17."}}]})
        if "streaming" not in self.broken:
            events += [{"choices": [{"delta": {"content": piece}}]} for piece in ("one", " two", " three")]
        events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
        return StreamResult(events)

    def telemetry(self) -> Telemetry:
        return Telemetry.unavailable(enabled=False)

    def versions(self) -> dict[str, str]:
        return {"backend": self.backend}

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def close(self) -> None:
        return None

    def __enter__(self) -> CapableEngine:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
