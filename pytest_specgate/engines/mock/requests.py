"""Validation of OpenAI-style request bodies into typed generation requests.

Every rejection is an :class:`ApiError` carrying the OpenAI error shape and a 4xx
status, so bad input can never surface as a 500 or a hang.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_specgate.contracts.validation import is_real, is_whole
from pytest_specgate.engines.mock.model import DecodeParams, Vocabulary

__all__ = ["ApiError", "GenerationRequest", "error_body", "parse_generation_request"]

_MAX_STOP_SEQUENCES = 4
_MAX_N = 16


class ApiError(Exception):
    """An OpenAI-style error response: status, message, type, param, code."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.error_type = error_type

    def body(self) -> dict[str, object]:
        return error_body(self.message, self.error_type, self.param, self.code)


def error_body(message: str, error_type: str, param: str | None, code: str | int | None) -> dict[str, object]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


@dataclass(frozen=True)
class GenerationRequest:
    """A validated chat or completions request, with the gateable features it uses."""

    kind: str
    model: str
    prompt_ids: tuple[int, ...]
    params: DecodeParams
    n: int
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    return_token_ids: bool
    logprobs: bool
    top_logprobs: int
    features: tuple[str, ...]

    @property
    def chat(self) -> bool:
        return self.kind == "chat"


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, message, param=param)


def _optional_int(body: Mapping[str, object], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not is_whole(value):
        raise _bad(f"{name} must be an integer, got {value!r}", name)
    return value


def _optional_number(body: Mapping[str, object], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if not is_real(value):
        raise _bad(f"{name} must be a number, got {value!r}", name)
    return float(value)


def _flag(body: Mapping[str, object], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _bad(f"{name} must be a boolean, got {value!r}", name)
    return value


def _message_text(index: int, message: object) -> str:
    if not isinstance(message, Mapping):
        raise _bad(f"messages[{index}] must be an object with role and content", "messages")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise _bad(f"messages[{index}].role must be a non-empty string", "messages")
    content = message.get("content")
    if content is None:
        return role
    if isinstance(content, str):
        return f"{role} {content}"
    if isinstance(content, list):
        parts = [
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text", ""), str)
        ]
        return f"{role} {' '.join(str(p) for p in parts)}"
    raise _bad(f"messages[{index}].content must be a string or a list of parts", "messages")


def _chat_prompt(body: Mapping[str, object]) -> str:
    if "messages" not in body:
        raise _bad("missing required parameter: 'messages'", "messages")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty list", "messages")
    return " ".join(_message_text(i, m) for i, m in enumerate(messages))


def _completion_prompt(body: Mapping[str, object], vocab: Vocabulary) -> tuple[int, ...]:
    if "prompt" not in body:
        raise _bad("missing required parameter: 'prompt'", "prompt")
    prompt = body["prompt"]
    if isinstance(prompt, str):
        return vocab.encode(prompt)
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return vocab.encode(prompt[0])
    if (
        isinstance(prompt, list)
        and prompt
        and all(is_whole(t) for t in prompt)
    ):
        if any(not 0 <= t < vocab.size for t in prompt):
            raise _bad(f"prompt token ids must be within [0, {vocab.size})", "prompt")
        return tuple(prompt)
    raise _bad("'prompt' must be a string, a one-string list or a list of token ids", "prompt")


def _stop(body: Mapping[str, object]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    if (
        isinstance(stop, list)
        and len(stop) <= _MAX_STOP_SEQUENCES
        and all(isinstance(s, str) and s for s in stop)
    ):
        return tuple(stop)
    raise _bad(
        f"'stop' must be a string or a list of at most {_MAX_STOP_SEQUENCES} non-empty strings",
        "stop",
    )


def _logit_bias(body: Mapping[str, object]) -> tuple[tuple[int, float], ...]:
    bias = body.get("logit_bias")
    if bias is None:
        return ()
    if not isinstance(bias, Mapping):
        raise _bad("'logit_bias' must be an object mapping token ids to numbers", "logit_bias")
    pairs: list[tuple[int, float]] = []
    for key, value in bias.items():
        try:
            token = int(key)
        except (TypeError, ValueError) as exc:
            raise _bad(f"logit_bias key {key!r} is not a token id", "logit_bias") from exc
        if not is_real(value) or abs(value) > 100:
            raise _bad(f"logit_bias[{key}] must be a number in [-100, 100]", "logit_bias")
        pairs.append((token, float(value)))
    return tuple(sorted(pairs))


def _logprobs(body: Mapping[str, object], chat: bool) -> tuple[bool, int]:
    if chat:
        wanted = _flag(body, "logprobs")
        top = _optional_int(body, "top_logprobs") or 0
        if not 0 <= top <= 20:
            raise _bad("top_logprobs must be within [0, 20]", "top_logprobs")
        return wanted, top
    count = _optional_int(body, "logprobs")
    if count is None:
        return False, 0
    if not 0 <= count <= 5:
        raise _bad("logprobs must be within [0, 5]", "logprobs")
    return True, count


def _features(
    body: Mapping[str, object], n: int, logprobs: bool, bias: tuple[tuple[int, float], ...]
) -> tuple[str, ...]:
    used: list[str] = []
    if logprobs:
        used.append("logprobs")
    if n > 1:
        used.append("n")
    if bias:
        used.append("logit_bias")
    if body.get("tools") or body.get("functions"):
        used.append("tools")
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") not in (None, "text"):
        used.append("response_format")
    return tuple(used)


def _max_tokens(body: Mapping[str, object], default: int) -> int:
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    value = _optional_int(body, name)
    if value is None:
        return default
    if value < 1:
        raise _bad(f"{name} must be at least 1, got {value}", name)
    return value


def parse_generation_request(
    body: object,
    *,
    kind: str,
    served_model: str,
    vocab: Vocabulary,
    default_max_tokens: int,
    max_model_len: int,
    default_sample_seed: int,
) -> GenerationRequest:
    """Validate a request body; raises ApiError (400, or 404 for an unknown model)."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "request body must be a JSON object")
    model = body.get("model", served_model)
    if model is None:
        model = served_model
    if not isinstance(model, str):
        raise _bad("'model' must be a string", "model")
    if model != served_model:
        raise ApiError(
            404,
            f"The model `{model}` does not exist; this server serves `{served_model}`",
            param="model",
            code="model_not_found",
        )
    chat = kind == "chat"
    prompt_ids = vocab.encode(_chat_prompt(body)) if chat else _completion_prompt(body, vocab)
    max_tokens = _max_tokens(body, default_max_tokens)
    if len(prompt_ids) + max_tokens > max_model_len:
        raise _bad(
            f"prompt ({len(prompt_ids)} tokens) + max_tokens ({max_tokens}) exceeds the "
            f"model's context length {max_model_len}",
            "max_tokens",
        )
    temperature = _optional_number(body, "temperature")
    temperature = 1.0 if temperature is None else temperature
    if not 0.0 <= temperature <= 2.0:
        raise _bad(f"temperature must be within [0, 2], got {temperature}", "temperature")
    top_p = _optional_number(body, "top_p")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise _bad(f"top_p must be within (0, 1], got {top_p}", "top_p")
    n = _optional_int(body, "n")
    n = 1 if n is None else n
    if not 1 <= n <= _MAX_N:
        raise _bad(f"n must be within [1, {_MAX_N}], got {n}", "n")
    seed = _optional_int(body, "seed")
    stream = _flag(body, "stream")
    stream_options = body.get("stream_options")
    if stream_options is not None and not isinstance(stream_options, Mapping):
        raise _bad("'stream_options' must be an object", "stream_options")
    include_usage = bool(stream_options and stream_options.get("include_usage") is True)
    logprobs, top_logprobs = _logprobs(body, chat)
    bias = _logit_bias(body)
    return GenerationRequest(
        kind=kind,
        model=model,
        prompt_ids=prompt_ids,
        params=DecodeParams(
            max_tokens=max_tokens,
            temperature=temperature,
            sample_seed=default_sample_seed if seed is None else seed,
            logit_bias=bias,
        ),
        n=n,
        stop=_stop(body),
        stream=stream,
        include_usage=include_usage,
        return_token_ids=_flag(body, "return_token_ids"),
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        features=_features(body, n, logprobs, bias),
    )
