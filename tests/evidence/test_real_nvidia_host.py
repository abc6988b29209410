"""The host probe, the GPU hardware markers and host provenance on a real NVIDIA GPU.

Every other host test feeds the probe a fake ``nvidia-smi`` or a facts file; these ask the
machine itself, so they run only where ``nvidia-smi`` answers with at least one GPU and skip
elsewhere (CI has none). ``.ci/gpu-host`` runs them on a GPU host from a built install;
docs/markers.md records what they saw on an H200.

What they hold the probe to: NVML and ``nvidia-smi`` (two routes into the driver) and, where
PyTorch is installed, the CUDA runtime (a third) name the same GPUs with the same compute
capability and memory; markers written from those facts match and mismatch as they say; and
an unedited probe on this host qualifies, so the gate accepts an honest GPU run.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys

import pytest
from provenance_testkit import commit_project, gate_lines, run_passing

from pytest_specgate.contracts.host import GpuFacts, HostFacts
from pytest_specgate.selection.hardware import gpu_memory_bytes
from pytest_specgate.selection.host_probe import probe_host

MIB = 1024**2
GIB = 1024**3
QUERY = ["--query-gpu=name,memory.total,compute_cap", "--format=csv,noheader,nounits"]


def _nvidia_smi_rows() -> list[tuple[str, int | None, str]]:
    """Each GPU as ``nvidia-smi`` names it: (name, memory in bytes, compute capability); a
    unified-memory GPU's memory (a GB10's ``[N/A]``) is None, as the probe has it."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        done = subprocess.run([tool, *QUERY], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        name, memory, capability = (cell.strip() for cell in line.split(","))
        rows.append((name, int(memory) * MIB if memory.isdigit() else None, capability))
    return rows


ROWS = _nvidia_smi_rows()
pytestmark = pytest.mark.skipif(not ROWS, reason="no NVIDIA GPU answers nvidia-smi on this host")


def _as_rows(gpus: tuple[GpuFacts, ...]) -> list[tuple[str, int | None, str | None]]:
    return [(gpu.name, gpu.memory_bytes, gpu.compute_capability) for gpu in gpus]


def _probe_without_nvml(monkeypatch: pytest.MonkeyPatch) -> HostFacts:
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "pynvml", None)
        return probe_host()


def test_the_probe_reads_every_gpu_through_nvml() -> None:
    pytest.importorskip("pynvml", reason="NVML's Python binding (the nvidia extra) is not installed")
    facts = probe_host()
    assert _as_rows(facts.gpus) == ROWS
    [nvml] = [answer for answer in facts.probed_with if answer.tool == "nvml"]
    assert nvml.path is not None and "libnvidia-ml" in nvml.path
    assert not [answer for answer in facts.probed_with if answer.tool == "nvidia-smi"]


def test_without_nvml_the_probe_asks_nvidia_smi_and_finds_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = _probe_without_nvml(monkeypatch)
    assert _as_rows(facts.gpus) == ROWS
    [smi] = [answer for answer in facts.probed_with if answer.tool == "nvidia-smi"]
    assert smi.path == shutil.which("nvidia-smi")
    assert not [answer for answer in facts.probed_with if answer.tool == "nvml"]


def test_the_cuda_runtime_sees_the_gpus_the_probe_reports() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is the third, independent view of the GPUs")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch is installed without CUDA")
    gpus = probe_host().gpus
    assert torch.cuda.device_count() == len(gpus)
    for index, gpu in enumerate(gpus):
        cuda = torch.cuda.get_device_properties(index)
        assert (cuda.name, f"{cuda.major}.{cuda.minor}") == (gpu.name, gpu.compute_capability)
        if gpu.memory_bytes is not None:  # a unified-memory GPU's is the host's, not its own
            assert abs(cuda.total_memory - gpu.memory_bytes) < 0.02 * gpu.memory_bytes


def _another_sm(gpu: GpuFacts) -> str:
    """A compute capability this GPU does not have: a GB10's, or an H100's on a GB10."""
    return "9.0" if gpu.compute_capability == "12.1" else "12.1"


def _memory_gb(gpu: GpuFacts, host: HostFacts) -> float:
    """The GPU's memory as the markers judge it (a unified-memory GPU's is the host's)."""
    memory = gpu_memory_bytes(gpu, host)
    assert memory is not None, f"{gpu.name}: the probe read no memory for it"
    return memory / GIB


def _markers_for(host: HostFacts) -> dict[str, str]:
    """Marker arguments the first GPU meets, and ones it misses by one step each."""
    gpus, gpu = host.gpus, host.gpus[0]
    assert gpu.compute_capability is not None
    sm, gb = gpu.compute_capability, _memory_gb(gpu, host)
    return {
        "exact_sm": f'cuda_sm="{sm}"',
        "at_least_sm_and_memory": f'min_cuda_sm="{sm}", min_gpu_memory_gb={math.floor(gb)}',
        "another_sm": f'cuda_sm="{_another_sm(gpu)}"',
        "more_memory": f"min_gpu_memory_gb={math.ceil(gb) + 1}",
        "more_gpus": f"min_gpus={len(gpus) + 1}",
    }


def test_gpu_markers_match_and_mismatch_as_this_gpu_says(pytester: pytest.Pytester) -> None:
    host = probe_host()
    gpus, gpu = host.gpus, host.gpus[0]
    markers = _markers_for(host)
    pytester.makepyfile(test_gpu="import pytest\n" + "".join(
        f"\n@pytest.mark.hardware({argument})\ndef test_{name}():\n    pass\n"
        for name, argument in markers.items()))
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=3)
    have = "; ".join(f"{each.name} SM {each.compute_capability}, {_memory_gb(each, host):.1f} GB"
                     for each in gpus)
    skipped = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert len(skipped) == 3 and all(f"fitting: {have})" in line for line in skipped), skipped
    result.stdout.fnmatch_lines([f"*needs 1× NVIDIA GPU (SM {_another_sm(gpu)})*(host has 0 fitting*",
                                 "*needs 1× NVIDIA GPU (≥ * GB each)*(host has 0 fitting*",
                                 f"*needs {len(gpus) + 1}× NVIDIA GPU*(host has {len(gpus)} fitting*"],
                                consecutive=False)


def test_a_required_gpu_this_host_lacks_fails_closed(pytester: pytest.Pytester) -> None:
    gpu = probe_host().gpus[0]
    pytester.makepyfile(test_gpu=f"""
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-1", title="needs another GPU")
@pytest.mark.hardware(cuda_sm="{_another_sm(gpu)}")
def test_needs_another_gpu(evidence):
    evidence.measure("tokens_per_s", 1.0, "tok/s", at_least=0.5)
""")
    result = pytester.runpytest("--specgate-require=AC-1", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*test_needs_another_gpu: required by --specgate-require but the host does not match: "
        f"needs 1× NVIDIA GPU (SM {_another_sm(gpu)})*(host has 0 fitting*"])


def test_an_honest_run_on_this_gpu_qualifies_and_the_gate_accepts(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus = probe_host().gpus
    commit = commit_project(pytester)
    bundle, record = run_passing(pytester)
    host = record["host"]
    assert [(gpu["name"], gpu["memory_bytes"], gpu["compute_capability"]) for gpu in host["facts"]["gpus"]] \
        == _as_rows(gpus)
    tools = host["provenance"]["tools"]
    assert host["provenance"]["origin"] == "probe"
    assert all(tool["system_location"] for tool in tools), tools
    assert record["qualifying"] is True, record["not_qualifying_reasons"]
    code, lines = gate_lines(bundle, commit, capsys)
    assert (code, lines[-1]) == (0, "specgate gate: accepted AC-10"), lines
