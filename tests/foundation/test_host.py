"""Host facts: probe parsers, facts-file validation, and the live probe."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_specgate.contracts.hardware import HardwareRequirement
from pytest_specgate.contracts.host import GpuFacts, HostFactsError, host_facts_from_dict
from pytest_specgate.selection.hardware import evaluate_requirement
from pytest_specgate.selection.host_probe import (
    load_host_facts,
    parse_apple_chip,
    parse_meminfo_bytes,
    parse_nvidia_smi_csv,
    probe_host,
    under_system_prefix,
)

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
RECORDED_H200 = json.loads((Path(__file__).parent / "recorded" / "h200-hosts.json").read_text())
"""What ``specgate hosts --json`` printed on a real H200 container, through NVML and through nvidia-smi."""


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
    monkeypatch.setitem(sys.modules, "pynvml", None)  # NVML is a library, not a tool on PATH: gone too
    facts = probe_host()
    assert facts.gpus == ()
    assert facts.arch


def test_a_real_h200_reads_the_same_through_nvml_and_nvidia_smi() -> None:
    [smi] = RECORDED_H200["nvidia_smi"]["provenance"]["answers"]
    [nvml] = RECORDED_H200["nvml"]["provenance"]["answers"]
    h200 = GpuFacts(name="NVIDIA H200", memory_bytes=143771 * 1024**2, compute_capability="9.0")
    assert (smi["tool"], parse_nvidia_smi_csv(smi["answer"])) == ("nvidia-smi", (h200,))
    assert (nvml["tool"], [GpuFacts(**row) for row in json.loads(nvml["answer"])]) == ("nvml", [h200])
    for route in ("nvml", "nvidia_smi"):
        assert host_facts_from_dict(RECORDED_H200[route]["host"], source="probe").gpus == (h200,)


def test_gpu_markers_on_the_recorded_h200() -> None:
    host = host_facts_from_dict(RECORDED_H200["nvml"]["host"], source="probe")
    assert evaluate_requirement(HardwareRequirement(cuda_sm="9.0", min_gpu_memory_gb=140), host, {}).matched
    assert evaluate_requirement(HardwareRequirement(min_cuda_sm="8.9"), host, {}).matched
    misses = {"cuda_sm": "12.1", "min_gpu_memory_gb": 141, "min_gpus": 2, "min_cuda_sm": "10.0"}
    for clause, value in misses.items():
        verdict = evaluate_requirement(HardwareRequirement(**{clause: value}), host, {})
        assert not verdict.matched and verdict.reasons[0].endswith("NVIDIA H200 SM 9.0, 140.4 GB)"), verdict


@pytest.mark.parametrize("path", ["/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi",
                                  "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04",
                                  "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"])
def test_the_drivers_own_folders_are_system_locations(path: str) -> None:
    assert under_system_prefix(path, path)


@pytest.mark.parametrize(("path", "real"), [
    ("/usr/local/bin/nvidia-smi", "/usr/local/bin/nvidia-smi"),
    ("/usr/local/nvidia-tools/bin/nvidia-smi", "/usr/local/nvidia-tools/bin/nvidia-smi"),
    ("/usr/local/nvidia/bin/../../bin/nvidia-smi", "/usr/local/bin/nvidia-smi"),
    ("/usr/local/nvidia/share/nvidia-smi", "/usr/local/nvidia/share/nvidia-smi"),
    ("/usr/local/nvidia/bin/nvidia-smi", "/tmp/fake/nvidia-smi"),
    ("/home/runner/nvidia/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi"),
])
def test_lookalike_or_escaping_driver_paths_are_not(path: str, real: str) -> None:
    assert not under_system_prefix(path, real)
