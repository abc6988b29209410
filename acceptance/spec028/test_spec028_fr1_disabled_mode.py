"""SPEC-028 FR-1: with no draft model configured, answers are byte-identical to the build before.

Operators who never set a draft must see no change at all: same bytes in every
response (apart from the per-response ``id`` and ``created``, and the host's
operating-system release inside ``system_fingerprint``), streamed or not,
greedy or sampled, and telemetry saying speculation is off. A stream is compared
by what it delivers (``stream_as_delivered``), not by where the server cut it into
events: that depends on how fast the client reads, in the build before as well.

"The build before" is the reference outputs in ``fixtures/references/fr1-<backend>.json``,
recorded from a named earlier build with ``--specgate-record-reference=fixtures/references``
and pinned by sha256, never a second server of the build under test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from spec028_backends import GREEDY_MAX_TOKENS, BackendProfile, reference_build
from spec028_checks import stream_as_delivered, without_volatile

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.fetching.references import (
    ReferenceError,
    ReferenceResponse,
    canonical_bytes,
    load_reference,
    write_reference,
)
from pytest_specgate.measure.pinned import project_fixtures_dir

MESSAGES: tuple[list[dict[str, object]], ...] = (
    [{"role": "user", "content": "Parse 2024-02-29T23:59:60Z and say whether it is valid."}],
    [{"role": "system", "content": "Answer briefly."},
     {"role": "user", "content": "What is the ISO week of 2021-01-03?"}],
)
REQUESTS: tuple[dict[str, object], ...] = (
    {"temperature": 0, "max_tokens": GREEDY_MAX_TOKENS},
    {"temperature": 0.7, "seed": 5, "max_tokens": GREEDY_MAX_TOKENS},
)


def _answers(engine: Engine, served_as: str) -> list[ReferenceResponse]:
    """Every FR-1 request, non-streamed and streamed, minus the per-response id and created.

    A ``model`` field naming the engine's local checkpoint directory (mlx-lm answers
    with the path it loaded, which differs per run) is replaced by the model
    reference it was built from, so runs on different cache directories compare.
    """
    def stable(body: dict[str, object]) -> dict[str, object]:
        body = without_volatile(body)
        return {**body, "model": served_as} if body.get("model") == engine.model_id else body

    answers = []
    for index, messages in enumerate(MESSAGES):
        for params in REQUESTS:
            label = f"messages[{index}] temperature={params['temperature']}"
            answers.append(ReferenceResponse(f"{label} chat", stable(engine.chat(messages, **params).raw)))
            events = engine.stream(messages, **params).drain().raw_events
            answers.append(ReferenceResponse(f"{label} stream", [stable(event) for event in events]))
    return answers


def _comparable(body: object) -> object:
    """A non-streamed body as it is; a stream (a list of events) as what it delivers; either
    with the host's operating-system release taken out of ``system_fingerprint`` (mlx-lm writes
    the kernel's platform string there, so a kernel update changed every answer's bytes; a
    fingerprint the build before lacked, or any other change to it, still differs)."""
    if isinstance(body, list):
        return stream_as_delivered([_host_neutral(event) for event in body])
    return _host_neutral(body)


_OS_RELEASE = re.compile(r"(?<=Linux-)\S+?(?=-(?:x86_64|aarch64|arm64)\b)|(?<=macOS-)[0-9.]+")


def _host_neutral(body: object) -> object:
    fingerprint = body.get("system_fingerprint") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(fingerprint, str):
        return body
    return {**body, "system_fingerprint": _OS_RELEASE.sub("<os release>", fingerprint)}


def _first_difference(got: object, want: object, where: str = "") -> str:
    """Where two JSON values first differ, and both sides there (not two whole bodies)."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            if key not in want or key not in got or got[key] != want[key]:
                return _first_difference(got.get(key, "<absent>"), want.get(key, "<absent>"),
                                         f"{where}.{key}")
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for index, (left, right) in enumerate(zip(got, want, strict=True)):
            if left != right:
                return _first_difference(left, right, f"{where}[{index}]")
    return f"at {where or 'the top'}: now {got!r}, before {want!r}"


@pytest.mark.ac("FR-1", spec="SPEC-028", title="disabled mode is byte-identical to the build before")
def test_fr1_no_draft_answers_byte_identically(
    spec028: BackendProfile, shared_engine: Callable[..., Engine],
    boot_engine: Callable[..., Engine], evidence: EvidenceRecorder, record_reference_dir: Path | None,
) -> None:
    name = f"fr1-{spec028.backend}"
    if record_reference_dir is not None:
        before = boot_engine(**spec028.pre_feature_build)
        path = write_reference(record_reference_dir, name, reference_build(spec028, before),
                               _answers(before, str(spec028.pre_feature_build.get("target"))))
        evidence.note("reference_recorded", str(path))
        pytest.skip(f"FR-1 recorded the reference outputs of {spec028.pre_feature_note} to {path}; "
                    "nothing was compared")
    try:
        reference = load_reference(project_fixtures_dir() / "references" / f"{name}.json")
    except ReferenceError as exc:
        pytest.fail(f"FR-1 has no usable reference outputs for the {spec028.backend} backend: {exc}")
    evidence.note("reference", {"name": reference.name, "build": dict(reference.build)})
    disabled_changes = spec028.fr1_disabled or spec028.disabled
    expected_target = str(disabled_changes.get("target"))
    evidence.check(reference.build.get("target") == expected_target,
                  f"the reference was recorded for target {reference.build.get('target')!r}, "
                  f"this run serves {expected_target!r}")
    disabled = shared_engine(**disabled_changes)
    answers = _answers(disabled, expected_target)
    differing = 0
    for answer in answers:
        try:
            want = reference.body_of(answer.key)
        except KeyError:
            want = None
        got, expected = _comparable(answer.body), _comparable(want)
        if canonical_bytes(got) != canonical_bytes(expected):
            differing += 1
            evidence.check(False, f"{answer.key}: differs from the build before "
                           f"({reference.build.get('build')}): {_first_difference(got, expected)}")
    telemetry = disabled.telemetry()
    evidence.check(telemetry.enabled is False,
                  f"an engine without a draft reports speculation enabled: {telemetry}")
    evidence.check(not telemetry.drafted, f"an engine without a draft drafted tokens: {telemetry}")
    evidence.measure("responses_compared", len(answers), at_least=len(MESSAGES) * len(REQUESTS) * 2)
    evidence.measure("responses_differing_from_baseline", differing, at_most=0)
