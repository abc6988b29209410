"""The capability smoke floor: the least every engine+model must show before deeper specs run.

Plain chat and streaming are always smoked. Every other capability is smoked
only when the model's config *positively declares* it, because a smoke that
fails on a model that never claimed the capability proves nothing, and one
silently skipped proves less: a capability that was not smoked is recorded as
``unsmoked`` and the whole result is then ``partial``.

How a model declares capabilities: its config mapping (e.g. a model pair
fixture entry, or ``config.json`` plus specgate keys) carries
``"capabilities": [...]`` naming any of :data:`DECLARABLE`. ``long-context``
also needs ``"context_tokens": <int>``, the context length to exercise.
Nothing is inferred from model names or chat templates.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol

from pytest_specgate.contracts.validation import is_count

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine

__all__ = [
    "ALWAYS",
    "CAPABILITIES",
    "DECLARABLE",
    "CapabilityResult",
    "SmokeResult",
    "declared_capabilities",
    "smoke",
]

ALWAYS: Final = ("chat", "streaming")
DECLARABLE: Final = ("tool-call", "structured-output", "reasoning-streaming", "vision", "long-context")
CAPABILITIES: Final = (*ALWAYS, *DECLARABLE)
SMOKE_MAX_TOKENS: Final = 32
LONG_CONTEXT_FILL: Final = 0.5
"""Fraction of ``context_tokens`` the long-context prompt fills, in words, leaving room for tokenizers
that split a word into several tokens."""

Status = Literal["passed", "failed", "unsmoked"]

_WEATHER_TOOL: Final = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
_PERSON_SCHEMA: Final = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


class NoteTaker(Protocol):
    def note(self, key: str, value: object) -> None: ...


@dataclass(frozen=True)
class CapabilityResult:
    name: str
    status: Status
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class SmokeResult:
    model: str
    backend: str
    results: tuple[CapabilityResult, ...]

    @property
    def partial(self) -> bool:
        return any(result.status == "unsmoked" for result in self.results)

    @property
    def failed(self) -> tuple[CapabilityResult, ...]:
        return tuple(result for result in self.results if result.status == "failed")

    def status_of(self, capability: str) -> Status:
        for result in self.results:
            if result.name == capability:
                return result.status
        raise KeyError(f"{capability!r} is not a smoke capability; capabilities: {list(CAPABILITIES)}")

    def summary(self) -> str:
        return ", ".join(f"{result.name}: {result.status}" for result in self.results) + (
            f"; partial: {str(self.partial).lower()}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "backend": self.backend,
            "partial": self.partial,
            "capabilities": {result.name: result.status for result in self.results},
            "details": [result.to_dict() for result in self.results],
        }


def declared_capabilities(model_config: Mapping[str, object]) -> frozenset[str]:
    """The capabilities the config positively declares; unknown names are an error, not a guess."""
    declared = model_config.get("capabilities", ())
    if isinstance(declared, str) or not isinstance(declared, list | tuple | frozenset | set):
        raise ValueError(f"model config 'capabilities' must be a list of names, found {declared!r}")
    names = frozenset(str(name) for name in declared)
    unknown = sorted(names - set(CAPABILITIES))
    if unknown:
        raise ValueError(f"model config declares unknown capabilities {unknown}; known: {list(CAPABILITIES)}")
    if "long-context" in names:
        tokens = model_config.get("context_tokens")
        if not is_count(tokens, 2):
            raise ValueError(
                f"'long-context' is declared but 'context_tokens' is not a token count: {tokens!r}"
            )
    return names


def _user(content: object) -> list[dict[str, object]]:
    return [{"role": "user", "content": content}]


def _message(raw: Mapping[str, object]) -> Mapping[str, object]:
    choices = raw.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        if isinstance(message, Mapping):
            return message
    return {}


def _smoke_chat(engine: Engine, config: Mapping[str, object]) -> str:
    result = engine.chat(
        _user("Say hello in one short sentence."), temperature=0.0, max_tokens=SMOKE_MAX_TOKENS
    )
    if not result.text.strip():
        raise AssertionError(f"empty answer (finish_reason {result.finish_reason!r})")
    if result.finish_reason not in {"stop", "length"}:
        raise AssertionError(f"finish_reason {result.finish_reason!r}, expected 'stop' or 'length'")
    return f"{len(result.text)} chars, finish_reason {result.finish_reason}"


def _smoke_streaming(engine: Engine, config: Mapping[str, object]) -> str:
    stream = engine.stream(_user("Count from one to five."), temperature=0.0, max_tokens=SMOKE_MAX_TOKENS)
    deltas = stream.deltas
    if not deltas:
        raise AssertionError(f"the stream carried no text deltas (finish_reason {stream.finish_reason!r})")
    if stream.finish_reason is None:
        raise AssertionError(f"the stream ended without a finish_reason after {len(deltas)} deltas")
    return f"{len(deltas)} deltas, finish_reason {stream.finish_reason}"


def _smoke_tool_call(engine: Engine, config: Mapping[str, object]) -> str:
    result = engine.chat(
        _user("What is the weather in Paris? Use the tool."),
        tools=[_WEATHER_TOOL],
        tool_choice="required",
        temperature=0.0,
        max_tokens=128,
    )
    calls = _message(result.raw).get("tool_calls")
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], Mapping):
        raise AssertionError(f"no tool_calls in the answer (finish_reason {result.finish_reason!r})")
    function = calls[0].get("function")
    if not isinstance(function, Mapping) or function.get("name") != "get_weather":
        raise AssertionError(f"tool call does not name get_weather: {calls[0]!r}")
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except json.JSONDecodeError as exc:
        raise AssertionError(f"tool call arguments are not JSON: {arguments!r} ({exc})") from exc
    if not isinstance(parsed, dict) or not isinstance(parsed.get("city"), str):
        raise AssertionError(f"tool call arguments lack a string 'city': {arguments!r}")
    return f"get_weather({arguments})"


def _smoke_structured_output(engine: Engine, config: Mapping[str, object]) -> str:
    import jsonschema

    result = engine.chat(
        _user("Invent a person. Answer as JSON with name and age."),
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": _PERSON_SCHEMA, "strict": True},
        },
        temperature=0.0,
        max_tokens=128,
    )
    try:
        document = json.loads(result.text)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"answer is not JSON: {result.text[:200]!r} ({exc})") from exc
    try:
        jsonschema.validate(document, _PERSON_SCHEMA)
    except jsonschema.ValidationError as exc:
        raise AssertionError(f"answer does not match the schema: {exc.message}") from exc
    return f"schema-valid JSON: {result.text[:80]}"


def _reasoning_chars(events: list[dict[str, object]]) -> int:
    total = 0
    for event in events:
        choices = event.get("choices")
        if not isinstance(choices, list):
            continue
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            if isinstance(delta, Mapping):
                for key in ("reasoning_content", "reasoning"):
                    value = delta.get(key)
                    total += len(value) if isinstance(value, str) else 0
    return total


def _smoke_reasoning_streaming(engine: Engine, config: Mapping[str, object]) -> str:
    stream = engine.stream(
        _user("Is 17 prime? Think, then answer yes or no."), temperature=0.0, max_tokens=256
    )
    stream.drain()
    reasoning = _reasoning_chars(stream.raw_events)
    if reasoning == 0:
        raise AssertionError("no reasoning_content/reasoning deltas in the stream")
    if stream.finish_reason is None:
        raise AssertionError("the reasoning stream ended without a finish_reason")
    return f"{reasoning} reasoning chars, {len(stream.text)} answer chars"


def _png_data_url() -> str:
    """An 8x8 solid red PNG built here, so the vision smoke needs no image file."""
    width = height = 8
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _smoke_vision(engine: Engine, config: Mapping[str, object]) -> str:
    content = [
        {"type": "text", "text": "What colour is this image? One word."},
        {"type": "image_url", "image_url": {"url": _png_data_url()}},
    ]
    result = engine.chat(_user(content), temperature=0.0, max_tokens=SMOKE_MAX_TOKENS)
    if not result.text.strip():
        raise AssertionError(f"empty answer to an image prompt (finish_reason {result.finish_reason!r})")
    return f"answered {result.text.strip()[:40]!r}"


def _smoke_long_context(engine: Engine, config: Mapping[str, object]) -> str:
    context = config["context_tokens"]
    assert isinstance(context, int)
    words = max(1, int(context * LONG_CONTEXT_FILL))
    filler = " ".join(("river", "stone", "light", "cloud")[i % 4] for i in range(words))
    result = engine.chat(
        _user(f"{filler}\nHow many words came before this line?"), temperature=0.0, max_tokens=8
    )
    if result.prompt_tokens is not None and result.prompt_tokens < words:
        raise AssertionError(f"prompt_tokens {result.prompt_tokens} < {words} words sent: the prompt was cut")
    if result.finish_reason is None:
        raise AssertionError("no finish_reason for the long-context request")
    return f"{words} words, prompt_tokens {result.prompt_tokens}, finish_reason {result.finish_reason}"


_CHECKS: Final[dict[str, Callable[[Engine, Mapping[str, object]], str]]] = {
    "chat": _smoke_chat,
    "streaming": _smoke_streaming,
    "tool-call": _smoke_tool_call,
    "structured-output": _smoke_structured_output,
    "reasoning-streaming": _smoke_reasoning_streaming,
    "vision": _smoke_vision,
    "long-context": _smoke_long_context,
}


def _check(name: str, engine: Engine, config: Mapping[str, object]) -> CapabilityResult:
    try:
        return CapabilityResult(name, "passed", _CHECKS[name](engine, config))
    except Exception as exc:  # any error a backend raises (third-party ones too) fails this capability only
        return CapabilityResult(name, "failed", f"{type(exc).__name__}: {exc}")


def smoke(
    engine: Engine, model_config: Mapping[str, object], *, evidence: NoteTaker | None = None
) -> SmokeResult:
    """Smoke every capability the floor requires or the model declares; note the result in ``evidence``."""
    declared = declared_capabilities(model_config)
    results = tuple(
        _check(name, engine, model_config)
        if name in ALWAYS or name in declared
        else CapabilityResult(name, "unsmoked", "not declared in the model config's 'capabilities'")
        for name in CAPABILITIES
    )
    result = SmokeResult(model=engine.model_id, backend=engine.backend, results=results)
    if evidence is not None:
        evidence.note("smoke", result.to_dict())
    return result
