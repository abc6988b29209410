"""Resource hygiene: every engine's teardown compares free memory with its level before boot."""

from __future__ import annotations

from pathlib import Path

import pytest
from provenance_testkit import commit_project, only_record

from pytest_specgate.engines.config import EngineConfig, EnginePool, fresh_engines
from pytest_specgate.engines.hygiene import (
    MemoryLedger,
    MemoryReading,
    MemoryReturn,
    memory_returned,
    parse_mem_available,
)
from pytest_specgate.evidence import AcRecord, judge
from pytest_specgate.evidence._acrecord import EngineFact
from pytest_specgate.evidence._policy import memory_reasons

GIB = 1 << 30
LEAKY_CONFTEST = """
from pytest_specgate.engines.hygiene import MemoryLedger, MemoryReading
from pytest_specgate.plugin.stash import MEMORY_LEDGER_KEY

READINGS = iter([MemoryReading(8 << 30, None), MemoryReading(4 << 30, None)])


def pytest_configure(config):
    config.stash[MEMORY_LEDGER_KEY] = MemoryLedger(lambda: next(READINGS))
"""
BOOTS_ITS_OWN = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(boot_engine, evidence):
    engine = boot_engine()
    assert engine.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=2).text
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""


def test_memory_returned_within_tolerance_short_of_it_and_unknown() -> None:
    assert memory_returned(8 * GIB, 8 * GIB - 100, GIB) is True
    assert memory_returned(8 * GIB, 7 * GIB, GIB) is True
    assert memory_returned(8 * GIB, 7 * GIB - 1, GIB) is False
    assert memory_returned(None, 8 * GIB, GIB) is None
    assert memory_returned(8 * GIB, None, GIB) is None


def test_mem_available_is_read_in_bytes() -> None:
    text = "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n"
    assert parse_mem_available(text) == 8_000_000 * 1024
    assert parse_mem_available("MemTotal: 1 kB\n") is None


def test_an_unread_side_is_unknown_never_clean_and_a_short_gpu_fails() -> None:
    host = MemoryReading(8 * GIB, None)
    assert MemoryReturn(host, host).returned is True
    assert MemoryReturn(host, None).returned is None
    assert MemoryReturn(MemoryReading(None, None), MemoryReading(None, None)).returned is None
    gpu_known = MemoryReading(8 * GIB, 80 * GIB)
    assert MemoryReturn(gpu_known, MemoryReading(8 * GIB, None)).returned is None
    assert MemoryReturn(gpu_known, MemoryReading(8 * GIB, 70 * GIB)).returned is False
    side = MemoryReturn(gpu_known, MemoryReading(8 * GIB, 70 * GIB)).to_dict()["gpu"]
    assert side == {"before_bytes": 80 * GIB, "after_bytes": 70 * GIB,
                    "tolerance_bytes": 512 << 20, "returned": False}


class _Engine:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self._log = name, log

    def close(self) -> None:
        self._log.append(f"close {self.name}")


def test_pool_reads_before_each_boot_and_after_each_close(tmp_path: Path) -> None:
    log: list[str] = []
    free = iter(range(10, 0, -1))

    def reader() -> MemoryReading:
        value = next(free) * GIB
        log.append(f"read {value // GIB}")
        return MemoryReading(value, None)

    ledger = MemoryLedger(reader)
    engines = iter([_Engine("a", log), _Engine("b", log)])
    pool = EnginePool(boot=lambda config, workdir: next(engines), ledger=ledger)  # type: ignore[arg-type,return-value]
    a = pool.get(EngineConfig(backend="mock"), tmp_path)
    b = pool.get(EngineConfig(backend="mock", target="other"), tmp_path)
    assert ledger.of(a) == MemoryReturn(MemoryReading(10 * GIB, None), None)
    pool.close_all()
    assert log == ["read 10", "read 9", "close b", "read 8", "close a", "read 7"]
    assert ledger.of(b).to_dict()["host"]["returned"] is True  # type: ignore[union-attr]
    assert ledger.of(a).returned is False  # type: ignore[union-attr]


def test_boot_engine_closes_through_the_ledger(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    readings = iter([MemoryReading(8 * GIB, None), MemoryReading(8 * GIB, None)])
    ledger = MemoryLedger(lambda: next(readings))
    log: list[str] = []
    engine = _Engine("x", log)
    monkeypatch.setattr("pytest_specgate.engines.config.boot_function", lambda backend: lambda c, w: engine)
    with fresh_engines(lambda name: tmp_path, ledger=ledger) as boot:
        assert boot(EngineConfig(backend="mock")) is engine
    assert log == ["close x"] and ledger.of(engine).returned is True  # type: ignore[union-attr]
    assert ledger.entry(engine, on_this_host=True)["returned"] is True  # type: ignore[index]
    assert ledger.entry(engine, on_this_host=False) is None
    assert ledger.entry(object(), on_this_host=True) is None


def test_a_short_return_is_a_reason_unknown_is_not() -> None:
    def fact(returned: bool | None) -> EngineFact:
        side = {"before_bytes": 8 * GIB, "after_bytes": 4 * GIB, "tolerance_bytes": GIB, "returned": returned}
        return EngineFact("vllm", "m", False, True, True,
                          memory_returned={"torn_down": True, "returned": returned, "host": side,
                                           "gpu": {**side, "returned": None}})

    assert memory_reasons(fact(None)) == [] and memory_reasons(fact(True)) == []
    assert memory_reasons(fact(False)) == [
        f"the vllm engine did not give its memory back at teardown: host memory {4 * GIB} bytes free "
        f"after, {8 * GIB} before boot (tolerance {GIB})"]


def test_a_mock_engine_that_kept_memory_is_recorded_and_disqualifies(pytester: pytest.Pytester) -> None:
    commit_project(pytester, **{"test_spec.py": BOOTS_ITS_OWN, "conftest.py": LEAKY_CONFTEST})
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    _, record = only_record(pytester.path / "out")
    [entry] = record["tests"][0]["engines"]
    assert entry["memory_returned"]["torn_down"] is True
    assert entry["memory_returned"]["host"] == {"before_bytes": 8 * GIB, "after_bytes": 4 * GIB,
                                                "tolerance_bytes": GIB, "returned": False}
    reasons = judge(AcRecord.from_json(record, "AC-10")).reasons
    assert any("mock engine did not give its memory back at teardown" in reason for reason in reasons)
