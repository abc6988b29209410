"""Helpers for the engine tests, including an independent count of speculative decoding.

``expected_counts`` re-derives drafted/accepted/drafts from the mock model's
published primitives (greedy token, context fold, draft agreement) with its own
loop, so the server's telemetry is checked against arithmetic it did not do.
"""

from __future__ import annotations

import base64
import hashlib
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from openai.types.chat import ChatCompletionUserMessageParam

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.mock import DEFAULT_DRAFT, DEFAULT_TARGET, MockEngine
from pytest_specgate.engines.mock.model import DraftModel, TargetModel, vocabulary_named

GREEDY: dict[str, object] = {"temperature": 0}
BootMock = Callable[..., MockEngine]


def mock_config(
    *, draft: str | None = DEFAULT_DRAFT, num_draft_tokens: int | None = 4, **options: object
) -> EngineConfig:
    return EngineConfig(
        backend="mock",
        draft=draft,
        num_draft_tokens=num_draft_tokens if draft is not None else None,
        options=tuple(sorted(options.items())),
    )


def user(text: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": text}]


def oai_user(text: str) -> list[ChatCompletionUserMessageParam]:
    """``user(text)`` typed for the `openai` package."""
    return [{"role": "user", "content": text}]


def chat_prompt_text(text: str) -> str:
    """How the mock flattens ``user(text)`` into prompt words."""
    return f"user {text}"


@dataclass(frozen=True)
class ExpectedCounts:
    drafts: int
    drafted: int
    accepted: int
    tokens: tuple[int, ...]
    accepted_per_position: tuple[int, ...]


def expected_counts(
    prompt: str,
    max_tokens: int,
    *,
    gamma: int,
    alpha: float,
    target: str = DEFAULT_TARGET,
    draft: str = DEFAULT_DRAFT,
    seed: int = 0,
    eos_one_in: int = 64,
) -> ExpectedCounts:
    """Simulate draft-then-verify for one greedy chat request, counting as vLLM does."""
    vocab = vocabulary_named("words-v1")
    target_model = TargetModel(target, vocab, seed, eos_one_in)
    draft_model = DraftModel(draft, vocab, alpha, seed)
    state = target_model.initial_state(vocab.encode(chat_prompt_text(prompt)))
    out: list[int] = []
    drafts = drafted = accepted = 0
    per_position = [0] * gamma
    while len(out) < max_tokens:
        budget = min(gamma, max_tokens - len(out) - 1)
        if budget == 0:
            token = target_model.greedy(state)
            if token == vocab.eos_id:
                break
            out.append(token)
            break
        drafts += 1
        drafted += budget
        ended = False
        position = 0
        while position < budget:
            token = target_model.greedy(state)
            if not draft_model.agrees(state):
                break
            accepted += 1
            per_position[position] += 1
            position += 1
            if token == vocab.eos_id:
                ended = True
                break
            out.append(token)
            state = target_model.advance(state, token)
        if ended:
            break
        token = target_model.greedy(state)
        if token == vocab.eos_id:
            break
        out.append(token)
        state = target_model.advance(state, token)
    return ExpectedCounts(drafts, drafted, accepted, tuple(out), tuple(per_position))


def wait_until(condition: Callable[[], bool], deadline_s: float = 10.0) -> bool:
    """Poll ``condition`` until it holds (True) or ``deadline_s`` passes (False)."""
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(directory: Path, name: str, version: str, files: Mapping[str, bytes],
                entry_points: Mapping[str, Mapping[str, str]]) -> Path:
    """A real pure-Python wheel of ``files`` declaring ``entry_points`` (group -> name -> value),
    built without setuptools or network, so pip can install it with ``--no-index``."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    groups = "".join(f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
                     for group, entries in entry_points.items())
    content = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": groups.encode(),
    }
    record = "\n".join([*(_record_line(path, data) for path, data in content.items()), f"{info}/RECORD,,"])
    wheel = directory / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in {**content, f"{info}/RECORD": (record + "\n").encode()}.items():
            archive.writestr(path, data)
    return wheel
