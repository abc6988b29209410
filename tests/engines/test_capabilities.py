"""Engines declare what they can do as typed capabilities, and specs use only what is declared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from engines_testkit import GREEDY, BootMock, user

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines import Capabilities, Engine, MissingCapability
from pytest_specgate.engines.endpoint import boot as endpoint_boot
from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.qualification import ClientFaultInjector, MockFaultInjector, injector_for

ROOT = Path(__file__).resolve().parents[2]


def test_the_mock_declares_every_ability_and_each_one_acts_on_the_server(boot_mock: BootMock) -> None:
    engine = boot_mock(alpha=0.7)
    capabilities = engine.capabilities()
    assert capabilities.process is None, "a mock on a thread of this process has no process of its own"
    assert capabilities.log is not None and capabilities.log.is_file()
    reset = Capabilities.require(capabilities.telemetry_reset, engine.backend, "telemetry reset")
    faults = Capabilities.require(capabilities.faults, engine.backend, "fault injection")
    swap = Capabilities.require(capabilities.swap, engine.backend, "warm swap")
    status = Capabilities.require(capabilities.raw_status, engine.backend, "raw status")

    engine.chat(user("count me"), max_tokens=12, **GREEDY)
    assert engine.telemetry().drafted
    reset.reset_telemetry()
    assert (engine.telemetry().drafted, engine.telemetry().accepted) == (0, 0)
    faults.inject_fault("draft-failure")
    engine.chat(user("fail the draft"), max_tokens=12, **GREEDY)
    assert status.status()["spec_decode_draft_failures_since_last"] == 1
    swap.swap("tiny:target-b")
    assert status.status()["swaps"] == 1 and engine.model_id == "tiny:target-b"


def test_a_mock_in_its_own_process_declares_that_process(boot_mock: BootMock) -> None:
    engine = boot_mock(isolation="subprocess")
    process = Capabilities.require(engine.capabilities().process, engine.backend, "process")
    assert process.pid == engine.pid and isinstance(process.pid, int)
    assert process.returncode() is None
    engine.close()
    assert process.returncode() is not None


def test_an_endpoint_declares_nothing_and_asking_names_the_backend(
    boot_mock: BootMock, tmp_path: Path
) -> None:
    server = boot_mock()
    config = EngineConfig(backend="endpoint", options=(("url", server.base_url),))
    with endpoint_boot(config, tmp_path) as engine:
        assert isinstance(engine, Engine)
        assert engine.capabilities() == Capabilities()
        with pytest.raises(MissingCapability, match=r"^the endpoint engine has no warm swap$"):
            Capabilities.require(engine.capabilities().swap, engine.backend, "warm swap")
        assert isinstance(injector_for(engine), ClientFaultInjector)
        with pytest.raises(TypeError, match=f"endpoint engine at {server.base_url} has no fault-injection"):
            MockFaultInjector().cancel_stream(engine, user("x"))


def test_a_mock_gets_server_side_faults(spec_engine: MockEngine) -> None:
    assert isinstance(injector_for(spec_engine), MockFaultInjector)


_PROBE = re.compile(r"\b(?:getattr|hasattr)\(\s*[\w.]*engine\b")


def test_nothing_probes_an_engine_for_attributes() -> None:
    sources = [path for folder in ("pytest_specgate", "acceptance")
               for path in sorted((ROOT / folder).rglob("*.py"))]
    probes = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
              for path in sources
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if _PROBE.search(line)]
    assert sources and probes == []
