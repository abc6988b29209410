"""Engine provenance: the plugin records every engine a test was handed; a test cannot rewrite it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from provenance_testkit import commit_project, gate_rejection, only_record, run_passing

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.identity import ServerIdentity, engine_entry, is_loopback_url
from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.engines.mock import boot as boot_mock
from pytest_specgate.evidence._acrecord import EngineFact, _engine
from pytest_specgate.evidence._policy import _engine_reasons
from pytest_specgate.evidence._recorder import RESERVED_NOTE_KEYS
from pytest_specgate.evidence._run_provenance import unenrolled_backends, used_backends

SCHEMA = Path(__file__).resolve().parents[2] / "pytest_specgate" / "schemas" / "evidence-v3.json"
OVERWRITE_ENGINES = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(engine, evidence):
    evidence.note("engines", [{"backend": "vllm", "model": "Qwen3-8B", "simulated": False}])
"""
POOL_OUTSIDE_FIXTURES = """
import pytest
from pytest_specgate.contracts.engine_config import EngineConfig

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(specgate_engine_pool, tmp_path, evidence):
    engine = specgate_engine_pool.get(EngineConfig(backend="mock"), tmp_path)
    assert engine.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=2).text
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""
ENDPOINT_SPEC = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(engine, evidence):
    assert engine.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=2).text
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""


@pytest.fixture
def running_mock(tmp_path: Path) -> Iterator[MockEngine]:
    """``specgate mock-engine`` stand-in: a mock someone else started, reached only by its URL."""
    with boot_mock(EngineConfig(backend="mock"), tmp_path / "mock") as mock:
        yield mock


def test_noting_engines_is_refused_naming_key_and_test(pytester: pytest.Pytester) -> None:
    commit_project(pytester, **{"test_spec.py": OVERWRITE_ENGINES})
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*ValueError: test_spec.py::test_canary: evidence.note('engines'): 'engines' is recorded by "
        "specgate itself (reserved: *engines*); choose another key",
    ])
    _, record = only_record(pytester.path / "out")
    assert [(e["backend"], e["simulated"]) for e in record["tests"][0]["engines"]] == [("mock", True)]
    assert "engines" not in record["tests"][0]["notes"]


def test_schema_refuses_the_same_reserved_note_keys() -> None:
    schema = json.loads(SCHEMA.read_text())
    notes = schema["properties"]["tests"]["items"]["properties"]["notes"]
    assert {rule["required"][0] for rule in notes["not"]["anyOf"]} == RESERVED_NOTE_KEYS


def test_engine_taken_from_the_pool_outside_fixtures_is_recorded(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester, **{"test_spec.py": POOL_OUTSIDE_FIXTURES})
    bundle, record = run_passing(pytester)
    [entry] = record["tests"][0]["engines"]
    assert (entry["backend"], entry["simulated"], entry["loopback"]) == ("mock", True, True)
    reason = ("ran on the built-in mock engine (specgate-mock-target), "
              "a simulation: only a real engine's evidence qualifies")
    assert f"test_spec.py::test_canary: {reason}" in record["not_qualifying_reasons"]
    assert f"{reason} (test test_spec.py::test_canary)" in gate_rejection(bundle, commit, capsys)


def test_endpoint_at_the_mock_is_recognised_as_the_mock(
    pytester: pytest.Pytester, running_mock: MockEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester, **{"test_spec.py": ENDPOINT_SPEC})
    pytester.runpytest("--specgate-evidence=out", "--specgate-engine=endpoint",
                       f"--specgate-endpoint={running_mock.base_url}/v1", "-p", "no:cacheprovider"
                       ).assert_outcomes(passed=1)
    bundle, record = only_record(pytester.path / "out")
    [entry] = record["tests"][0]["engines"]
    assert (entry["backend"], entry["simulated"], entry["loopback"], entry["version_known"]) == (
        "endpoint", True, True, True)
    identity = entry["identity"]
    assert identity["models"] == [{"id": running_mock.model_id, "owned_by": "specgate-mock"}]
    assert (identity["engine"], identity["url"]) == ("specgate-mock", running_mock.base_url)
    assert identity["server"] == "uvicorn"
    reason = (f"ran on the built-in mock engine ({running_mock.model_id}), "
              "a simulation: only a real engine's evidence qualifies")
    assert f"test_spec.py::test_canary: {reason}" in record["not_qualifying_reasons"]
    assert f"{reason} (test test_spec.py::test_canary)" in gate_rejection(bundle, commit, capsys)


class _RealLookingEngine:
    backend = "endpoint"
    model_id = "Qwen3-8B"

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def versions(self) -> dict[str, str]:
        return {"backend": self.backend, "model": self.model_id}


def engine_reasons(entry: dict[str, object]) -> list[str]:
    """The policy's reasons for one recorded engine of a test whose hardware marker matched here."""
    fact: EngineFact = _engine(entry)  # type: ignore[arg-type]
    return [f"test_spec.py::test_canary: {why}" for why in _engine_reasons(fact, hardware_checked_here=True)]


def test_remote_endpoint_with_unknown_version_never_qualifies_under_a_hardware_marker() -> None:
    url = "http://10.1.2.3:8000"
    identity = ServerIdentity(url, (("Qwen3-8B", "vllm"),), version=None, engine=None, server_header=None)
    entry = engine_entry(_RealLookingEngine(url), "endpoint", "endpoint url='http://10.1.2.3:8000'",  # type: ignore[arg-type]
                         identity)
    assert (entry["simulated"], entry["loopback"], entry["version_known"]) == (False, False, False)
    assert engine_reasons(entry) == [
        f"test_spec.py::test_canary: the version of the endpoint engine at {url} could not be read: "
        "a real engine must say what it is",
        f"test_spec.py::test_canary: the endpoint engine at {url} is not on this host (not a loopback "
        "address): the hardware marker was checked here, not there",
    ]
    known = engine_entry(_RealLookingEngine("http://127.0.0.1:8000"), "endpoint", "endpoint",  # type: ignore[arg-type]
                         ServerIdentity("http://127.0.0.1:8000", version="0.11.0"))
    assert engine_reasons(known) == []
    assert known["identity"]["version"] == "0.11.0"


class _SaysMlx(_RealLookingEngine):
    """A third-party backend's engine that calls itself ``mlx``."""

    backend = "mlx"


def test_an_engine_is_recorded_by_its_configuration_and_one_that_reports_another_name_is_refused() -> None:
    """Issue #28: enrolment and the recorded backend come from the booted configuration's registry
    name; what the engine says is kept beside it, and a difference never qualifies."""
    identity = ServerIdentity("http://127.0.0.1:8000", version="1.0")
    entry = engine_entry(_SaysMlx("http://127.0.0.1:8000"), "echo", "echo target=parrot", identity)  # type: ignore[arg-type]
    assert (entry["backend"], entry["reported_backend"]) == ("echo", "mlx")
    assert engine_reasons(entry) == [
        "test_spec.py::test_canary: the engine booted by the 'echo' backend reports itself as 'mlx': an "
        "engine is known by the configuration that booted it, and one that says otherwise is not believed"
    ]
    record = {"tests": [{"engines": [entry]}], "run_provenance": {"backends": {"echo": "specgate-echo"}}}
    assert unenrolled_backends(used_backends(record), {"mlx": "mlx-lm"}) == [
        "engine backend 'echo' (specgate-echo) is not enrolled in the trusted [tool.specgate.backends]"
    ], "enrolment is judged on the registry name, not on the name the engine reports"
    honest = engine_entry(_SaysMlx("http://127.0.0.1:8000"), "mlx", "mlx target=tiny", identity)  # type: ignore[arg-type]
    assert (honest["backend"], honest["reported_backend"], engine_reasons(honest)) == ("mlx", "mlx", [])
    mock_named = engine_entry(_RealLookingEngine("http://127.0.0.1:8000"), "mock", "mock", identity)  # type: ignore[arg-type]
    assert mock_named["simulated"] is True, "booted as the mock: a simulation, whatever it reports"


@pytest.mark.parametrize(
    ("url", "loopback"),
    [("http://127.0.0.1:8000", True), ("http://localhost:1", True), ("http://[::1]:8000", True),
     ("http://10.0.0.5:8000", False), ("https://engine.example.com/v1", False), ("not a url", None)],
)
def test_loopback_urls(url: str, loopback: bool | None) -> None:
    assert is_loopback_url(url) is loopback
