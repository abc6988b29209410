"""Host facts: probe parsers, facts-file validation, and the live probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_specgate.contracts.host import HostFactsError, host_facts_from_dict
from pytest_specgate.selection.host_probe import (
    load_host_facts,
    parse_apple_chip,
    parse_meminfo_bytes,
    parse_nvidia_smi_csv,
    probe_host,
)

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"


@pytest.mark.parametrize(
    ("brand", "chip"),
    [
        ("Apple M4", "M4"),
        ("Apple M4 Pro", "M4 Pro"),
        ("Apple M1 Max", "M1 Max"),
        ("Apple M2 Ultra", "M2 Ultra"),
        ("Intel(R) Core(TM) i9-9980HK", None),
        ("", None),
        (None, None),
    ],
)
def test_apple_chip_from_brand_string(brand: str | None, chip: str | None) -> None:
    assert parse_apple_chip(brand) == chip


def test_meminfo_total() -> None:
    assert parse_meminfo_bytes("MemTotal:       24683584 kB\nMemFree: 1 kB\n") == 24683584 * 1024
    assert parse_meminfo_bytes("nothing here") is None


def test_nvidia_smi_csv_with_gb10_na_memory() -> None:
    gpus = parse_nvidia_smi_csv("NVIDIA GB10, [N/A], 12.1\nNVIDIA GeForce RTX 4090, 24564, 8.9\n,,\n")
    assert [g.name for g in gpus] == ["NVIDIA GB10", "NVIDIA GeForce RTX 4090"]
    assert gpus[0].memory_bytes is None and gpus[0].unified_memory
    assert gpus[0].compute_capability == "12.1"
    assert gpus[1].memory_bytes == 24564 * 1024**2 and not gpus[1].unified_memory


def test_example_files_round_trip() -> None:
    for path in sorted(HOSTS.glob("*.json")):
        facts = load_host_facts(path)
        again = host_facts_from_dict(facts.to_dict(), source=facts.source)
        assert again == facts, path.name


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"memory_bytes": "lots"}, "field 'memory_bytes' must be int, got str 'lots'"),
        ({"memory_bytes": -1}, "field 'memory_bytes' must be >= 0, got -1"),
        ({"os": "plan9"}, "field 'os' must be one of"),
        ({"apple_chip": "A18"}, "field 'apple_chip' must look like 'M4' or 'M4 Pro', got 'A18'"),
        ({"ram": 1}, "unknown field(s) ['ram']"),
        ({"schema": "other/v9"}, "field 'schema' must be 'specgate.host-facts/v1'"),
        (
            {"gpus": [{"name": "X", "compute_capability": "twelve"}]},
            "gpus[0]: field 'compute_capability' must look like '12.1', got 'twelve'",
        ),
        ({"gpus": [{"memory_bytes": 1}]}, "gpus[0]: missing required field 'name'"),
    ],
)
def test_bad_facts_name_the_field(patch: dict[str, object], message: str) -> None:
    data = json.loads((HOSTS / "m4-16gb.json").read_text())
    data.update(patch)
    with pytest.raises(HostFactsError) as info:
        host_facts_from_dict(data, where="facts.json")
    assert str(info.value).startswith("facts.json")
    assert message in str(info.value)


def test_missing_arch_and_bad_json_file(tmp_path: Path) -> None:
    with pytest.raises(HostFactsError, match="missing required field 'arch'"):
        host_facts_from_dict({"os": "linux"})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(HostFactsError, match=r"bad.json: not valid JSON"):
        load_host_facts(bad)
    with pytest.raises(HostFactsError, match=r"host facts file .*absent.json: file not found"):
        load_host_facts(tmp_path / "absent.json")


def test_live_probe_reads_real_facts_of_this_machine() -> None:
    facts = probe_host()
    assert facts.source == "probe"
    assert facts.os in {"linux", "macos", "windows"}
    assert facts.arch
    assert facts.cpu_count and facts.cpu_count >= 1
    assert facts.memory_bytes and facts.memory_bytes > 256 * 1024**2
    assert host_facts_from_dict(facts.to_dict(), source="probe") == facts


def test_probe_survives_missing_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    facts = probe_host()
    assert facts.gpus == ()
    assert facts.arch
