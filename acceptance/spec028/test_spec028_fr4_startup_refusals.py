"""SPEC-028 FR-4.4 / FR-4.6: a misconfigured draft refuses start-up; nothing is ever served.

A provider with a draft whose tokenizer differs from the target's would serve
corrupt text, and one whose target plus draft do not fit would die mid-request:
both must refuse to start with a stable code, before a port listens or a
process stays behind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest
from spec028_backends import BackendProfile
from spec028_checks import ServingSnapshot, serving_snapshot

from pytest_specgate.engines import Engine, EngineStartupRefused
from pytest_specgate.evidence import EvidenceRecorder


def _assert_refused(code: str, changes: Mapping[str, object],
                    boot_engine: Callable[..., Engine], evidence: EvidenceRecorder) -> None:
    before = serving_snapshot()
    engine: Engine | None = None
    with pytest.raises(EngineStartupRefused) as refused:
        engine = boot_engine(**changes)
    after = serving_snapshot()
    evidence.note("refusal", {"code": refused.value.code, "message": refused.value.message,
                              "configuration": {k: str(v) for k, v in changes.items()}})
    evidence.check(engine is None, f"an engine was returned: {engine!r}")
    evidence.check(refused.value.code == code,
                   f"start-up refused with code {refused.value.code!r}, expected {code!r}: "
                   f"{refused.value.message}")
    _expect_nothing_served(evidence, before, after)


def _expect_nothing_served(evidence: EvidenceRecorder, before: ServingSnapshot,
                           after: ServingSnapshot) -> None:
    new_children = sorted(after.children - before.children)
    evidence.measure("processes_left_running", len(new_children), at_most=0)
    evidence.check(not new_children, f"refused start-up left processes {new_children} running")
    if before.ports is None or after.ports is None:
        evidence.note("listening_ports", "unknown: neither /proc/<pid>/fd nor lsof readable")
        return
    new_ports = sorted(after.ports - before.ports)
    evidence.note("listening_ports", "sockets of this process and its children, before/after")
    evidence.measure("ports_listening_after_refusal", len(new_ports), at_most=0)
    evidence.check(not new_ports, f"refused start-up left ports {new_ports} listening")


@pytest.mark.ac("FR-4.4", spec="SPEC-028", title="a draft with another tokenizer refuses start-up")
def test_fr4_4_mismatched_tokenizer_refuses_startup(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    _assert_refused("draft_model_tokenizer_mismatch", spec028.mismatched_tokenizer,
                    boot_engine, evidence)


@pytest.mark.ac("FR-4.6", spec="SPEC-028", title="target + draft over capacity refuses start-up")
def test_fr4_6_capacity_shortfall_refuses_startup(
    spec028: BackendProfile, boot_engine: Callable[..., Engine], evidence: EvidenceRecorder
) -> None:
    _assert_refused("draft_model_capacity_shortfall", spec028.too_little_memory,
                    boot_engine, evidence)
