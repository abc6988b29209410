"""SPEC-028 AC-11: on an 8 GB M1 Air the pinned pair serves short_chat and streaming_check.

Greedy, with the draft on: every request completes, no Metal out-of-memory
appears in the engine log, the engine process is still alive and answering
afterwards, and its peak resident memory is recorded (or recorded as unknown).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from spec028_backends import (
    BackendProfile,
    ac11_plan,
    engine_exit_code,
    engine_log,
    engine_pid,
    fetch_pinned_pair,
)
from spec028_checks import out_of_memory_lines, sampling_peak_memory

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.measure import load_named_prompt_set, model_pair

FINISHED = ("stop", "length")


@pytest.mark.ac("AC-11", spec="SPEC-028", title="8 GB M1 Air load canary")
@pytest.mark.hardware("m1-8gb-air", env="SPEC028_RUN_SMALL_AIR_CANARY", max_memory_gb=12)
def test_ac11_short_chat_and_streaming_check_complete(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder,
    diagnostic_run: bool,
) -> None:
    pair = model_pair("AC-11")
    short_chat, streaming = (load_named_prompt_set(name) for name in pair.prompt_sets)
    evidence.note("model_pair", pair.to_dict())
    evidence.note("prompt_fixtures", [short_chat.to_dict(), streaming.to_dict()])
    choice = fetch_pinned_pair(spec028, pair, diagnostic=diagnostic_run)
    evidence.note("weights", choice.to_record())
    engine = boot_engine(**ac11_plan(spec028, pair, choice).candidate)
    pid, what = engine_pid(engine)
    problems: list[str] = []
    with sampling_peak_memory(pid) as peak:
        for prompt in short_chat.prompts:
            result = engine.chat(prompt.as_messages(), temperature=0, max_tokens=prompt.max_tokens)
            if result.finish_reason not in FINISHED or not result.text:
                problems.append(f"short_chat {prompt.id}: finish_reason {result.finish_reason!r}, "
                                f"text {result.text!r}")
        for prompt in streaming.prompts:
            stream = engine.stream(prompt.as_messages(), temperature=0,
                                   max_tokens=prompt.max_tokens).drain()
            if stream.finish_reason not in FINISHED or len(stream.deltas) < 2:
                problems.append(f"streaming_check {prompt.id}: finish_reason "
                                f"{stream.finish_reason!r} after {len(stream.deltas)} chunks")
    healthy = engine.chat([{"role": "user", "content": "Still there?"}], temperature=0,
                          max_tokens=4)
    exit_code = engine_exit_code(engine)
    oom = out_of_memory_lines(engine_log(engine))
    evidence.note("peak_memory", {**peak.to_dict(), "process": what})
    evidence.note("engine_log_scanned", oom is not None)
    evidence.measure("requests_failed", len(problems), at_most=0)
    for problem in problems:
        evidence.check(False, problem)
    evidence.measure("requests_completed", len(short_chat.prompts) + len(streaming.prompts),
                     at_least=len(short_chat.prompts) + len(streaming.prompts))
    evidence.check(exit_code is None, f"the engine process exited with code {exit_code}")
    evidence.check(bool(healthy.text), "the engine no longer answers after the canary")
    if oom is None:
        evidence.note("metal_oom", "unknown: the engine has no log file to scan")
    else:
        evidence.measure("out_of_memory_log_lines", len(oom), at_most=0)
        evidence.check(not oom, f"the engine log reports running out of memory: {oom[:3]}")
    if peak.peak_bytes is None:
        evidence.note("peak_rss", "unknown: no way to read the engine process's memory")
    else:
        evidence.measure("peak_rss", peak.peak_bytes / 2**30, "GiB")
