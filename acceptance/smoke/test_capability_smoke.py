"""The capability smoke floor against the engine under test.

Chat and streaming are always smoked; anything else only when the model config
declares it. The result, with every unsmoked capability and ``partial``, goes
into the evidence.
"""

from __future__ import annotations

import pytest

from pytest_specgate.engines import Engine
from pytest_specgate.evidence import EvidenceRecorder
from pytest_specgate.smoke import ALWAYS, smoke

pytestmark = pytest.mark.engine(target="tiny:target", draft="tiny:draft", num_draft_tokens=3)


@pytest.mark.ac("FR-6.4", spec="SPECGATE-6", title="smoke floor: chat and streaming, undeclared is unsmoked")
def test_model_declaring_no_tools_smokes_the_floor_and_is_partial(
    engine: Engine, evidence: EvidenceRecorder
) -> None:
    result = smoke(engine, {"capabilities": []}, evidence=evidence)
    assert not result.failed, result.summary()
    assert [r.name for r in result.results if r.status == "passed"] == list(ALWAYS)
    assert result.status_of("tool-call") == "unsmoked"
    assert result.partial


@pytest.mark.ac("FR-6.5", spec="SPECGATE-6", title="smoke floor: a declared long context is smoked")
def test_declared_long_context_is_smoked(engine: Engine, evidence: EvidenceRecorder) -> None:
    result = smoke(engine, {"capabilities": ["long-context"], "context_tokens": 2048}, evidence=evidence)
    assert result.status_of("long-context") == "passed", result.summary()
    assert not result.failed, result.summary()
