"""Engine conformance: what every backend (built in or a package's) must do, in one unchanged file.

Run it against a backend with ``pytest --pyargs pytest_specgate.conformance
--specgate-engine=NAME``. The models are named ``tiny:<role>`` (see
:mod:`pytest_specgate.fetching.tiny_models`): real backends build them locally, the mock
engine and backends that serve no real model treat the names as labels.

Greedy speculative decoding is only correct if it writes exactly what greedy
decoding without a draft writes; the identity spec therefore compares two
engines of the same backend, with and without the draft, and on a difference
reports the first differing position and both outputs.
"""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest

from pytest_specgate.backends import Capabilities, Engine, Telemetry

GAMMA = 3
MAX_TOKENS = 24
PROMPTS: tuple[tuple[dict[str, object], ...], ...] = (
    ({"role": "user", "content": "Tell me about the lighthouse keeper."},),
    ({"role": "user", "content": "What grows in the garden?"},),
    (
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "When does the supply boat arrive?"},
    ),
)

CONFORMANCE_AC = "FR-0"
"""The criterion every test here is evidence for: with ``--specgate-evidence`` the bundle's
FR-0 record names the backend that ran (``tests[].engines``) and whether it conformed."""

pytestmark = [
    pytest.mark.ac(CONFORMANCE_AC, spec="ENGINE-CONFORMANCE",
                   title="the engine conforms to the Engine protocol"),
    pytest.mark.engine(target="tiny:target", draft="tiny:draft", num_draft_tokens=GAMMA),
]


def _messages(prompt: tuple[dict[str, object], ...]) -> list[dict[str, object]]:
    return [dict(message) for message in prompt]


def _first_difference(left: tuple[object, ...] | str, right: tuple[object, ...] | str) -> int:
    """Index of the first differing element (or the shorter length when one is a prefix)."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    return min(len(left), len(right))


def _port_accepts(base_url: str) -> bool:
    parts = urlsplit(base_url)
    assert parts.hostname is not None and parts.port is not None, base_url
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=2.0):
            return True
    except OSError:
        return False


def test_engine_boots_on_loopback_and_reports_versions(engine: Engine) -> None:
    assert isinstance(engine, Engine)
    assert engine.base_url.startswith("http://127.0.0.1:"), engine.base_url
    assert _port_accepts(engine.base_url)
    assert isinstance(engine.model_id, str) and engine.model_id
    versions = engine.versions()
    assert versions, f"{engine.backend} engine reports no versions"
    assert all(isinstance(k, str) and isinstance(v, str) and v for k, v in versions.items())


def test_chat_returns_a_greedy_completion(engine: Engine) -> None:
    result = engine.chat(_messages(PROMPTS[0]), max_tokens=MAX_TOKENS, temperature=0)
    assert result.text, f"empty completion from {engine.backend}: {result.raw}"
    assert result.finish_reason in {"stop", "length"}
    if result.completion_tokens is not None:
        assert 1 <= result.completion_tokens <= MAX_TOKENS
    if result.prompt_tokens is not None:
        assert result.prompt_tokens > 0
    assert "choices" in result.raw
    assert result.wall_s > 0
    again = engine.chat(_messages(PROMPTS[0]), max_tokens=MAX_TOKENS, temperature=0)
    assert again.text == result.text, "greedy decoding is not repeatable"


def test_stream_delivers_the_same_text_as_chat(engine: Engine) -> None:
    whole = engine.chat(_messages(PROMPTS[1]), max_tokens=MAX_TOKENS, temperature=0)
    stream = engine.stream(_messages(PROMPTS[1]), max_tokens=MAX_TOKENS, temperature=0)
    deltas = list(stream)
    assert deltas, f"{engine.backend} streamed no text"
    assert "".join(deltas) == stream.text == whole.text
    assert stream.finish_reason in {"stop", "length"}
    assert stream.ttft_s is not None and stream.ttft_s >= 0
    assert len(stream.inter_token_s) == len(deltas) - 1
    assert all(gap >= 0 for gap in stream.inter_token_s)


def test_greedy_speculative_output_equals_greedy_baseline(
    engine: Engine, boot_engine: Callable[..., Engine]
) -> None:
    baseline = boot_engine(draft=None, num_draft_tokens=None)
    assert baseline.telemetry().enabled is False
    for prompt in PROMPTS:
        speculative = engine.chat(_messages(prompt), max_tokens=MAX_TOKENS, temperature=0)
        reference = baseline.chat(_messages(prompt), max_tokens=MAX_TOKENS, temperature=0)
        if speculative.token_ids is not None and reference.token_ids is not None:
            at = _first_difference(speculative.token_ids, reference.token_ids)
            assert speculative.token_ids == reference.token_ids, (
                f"{engine.backend}: speculative tokens differ from baseline at position {at}: "
                f"speculative {speculative.token_ids}, baseline {reference.token_ids}"
            )
        at = _first_difference(speculative.text, reference.text)
        assert speculative.text == reference.text, (
            f"{engine.backend}: speculative text differs from baseline at character {at}: "
            f"speculative {speculative.text!r}, baseline {reference.text!r}"
        )


def test_telemetry_has_the_normalized_shape(engine: Engine) -> None:
    engine.chat(_messages(PROMPTS[2]), max_tokens=MAX_TOKENS, temperature=0)
    telemetry = engine.telemetry()
    assert isinstance(telemetry, Telemetry)
    assert telemetry.enabled is True
    assert telemetry.num_draft_tokens == GAMMA
    assert telemetry.draft_model_id
    assert telemetry.window and telemetry.source
    counts = (telemetry.drafted, telemetry.accepted, telemetry.acceptance_rate)
    if not telemetry.available:
        assert counts == (None, None, None), "a backend without counters must not invent them"
        assert telemetry.source == "unavailable"
    else:
        drafted, accepted = telemetry.drafted, telemetry.accepted
        assert isinstance(drafted, int) and isinstance(accepted, int)
        assert 0 <= accepted <= drafted
        if drafted == 0:
            assert telemetry.acceptance_rate is None
        else:
            assert telemetry.acceptance_rate == pytest.approx(accepted / drafted)
    as_dict = telemetry.to_dict()
    assert set(as_dict) == {field.name for field in dataclasses.fields(Telemetry)}
    assert json.loads(json.dumps(as_dict)) == as_dict


def test_declared_capabilities_do_what_they_declare(boot_engine: Callable[..., Engine]) -> None:
    """An ability a backend declares must work: a process that runs, a reset that empties the window,
    a status body, a log file. (Faults and swap break an engine; their specs use their own.)"""
    engine = boot_engine()
    capabilities = engine.capabilities()
    assert isinstance(capabilities, Capabilities)
    if capabilities.process is not None:
        assert isinstance(capabilities.process.pid, int) and capabilities.process.pid > 0
        assert capabilities.process.returncode() is None, "a serving engine's process has exited"
    if capabilities.log is not None:
        assert capabilities.log.is_file(), f"{engine.backend} declares log {capabilities.log}, not a file"
    if capabilities.raw_status is not None:
        assert capabilities.raw_status.status(), f"{engine.backend} declares an empty raw status"
    if capabilities.telemetry_reset is not None:
        engine.chat(_messages(PROMPTS[1]), max_tokens=MAX_TOKENS, temperature=0)
        before = engine.telemetry()
        capabilities.telemetry_reset.reset_telemetry()
        after = engine.telemetry()
        if before.available:
            assert before.drafted, f"{engine.backend} counted no drafts for a speculative request"
            assert (after.drafted, after.accepted) == (0, 0), f"reset left {after}"


def test_close_tears_the_engine_down(engine: Engine, boot_engine: Callable[..., Engine]) -> None:
    another = boot_engine()
    assert another.chat(_messages(PROMPTS[0]), max_tokens=4, temperature=0).text
    assert _port_accepts(another.base_url)
    another.close()
    another.close()
    assert not _port_accepts(another.base_url), f"{another.base_url} still accepts connections"
    assert _port_accepts(engine.base_url), "closing one engine must not stop another"
