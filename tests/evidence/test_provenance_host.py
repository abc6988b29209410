"""Host provenance end to end: each way of faking a host is recorded, named and rejected by the gate."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from provenance_testkit import commit_project, gate_lines, gate_rejection, only_record, run_passing

from pytest_specgate.cli import main
from pytest_specgate.contracts.host import HostProvenance, ProbeAnswer
from pytest_specgate.evidence._policy import host_reasons
from pytest_specgate.selection.host_probe import answer_found_at, in_system_location

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
ADD_AN_M4 = """
def pytest_specgate_update_host_facts(config, facts):
    facts.update(os="macos", arch="arm64", cpu_brand="Apple M4", apple_chip="M4",
                 memory_bytes=16 * 1024**3)
"""
ANSWER_WITH_A_GB10 = """
from pytest_specgate.cli import main
from pytest_specgate.evidence._policy import host_reasons
from pytest_specgate.contracts.host import GpuFacts, HostFacts

def pytest_specgate_host_facts(config):
    return HostFacts(os="linux", arch="aarch64", memory_bytes=128 * 1024**3, source="probe",
                     gpus=(GpuFacts(name="NVIDIA GB10", compute_capability="12.1"),))
"""
FAKE_NVIDIA_SMI = "#!/bin/sh\necho 'NVIDIA GB10, [N/A], 12.1'\n"


def test_unedited_probe_qualifies_and_gate_accepts(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester)
    bundle, record = run_passing(pytester)
    provenance = record["host"]["provenance"]
    assert (provenance["origin"], provenance["simulated"], provenance["detail"]) == ("probe", False, None)
    assert all(tool["system_location"] for tool in provenance["tools"])
    assert record["qualifying"] is True, record["not_qualifying_reasons"]
    code, lines = gate_lines(bundle, commit, capsys)
    assert (code, lines[-1]) == (0, "specgate gate: accepted AC-10"), lines


def test_host_facts_file_is_simulated_named_in_markdown_and_rejected(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester)
    result = pytester.runpytest("--specgate-evidence=out", f"--specgate-host-facts={HOSTS / 'gb10.json'}",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["specgate: host Linux aarch64*(simulated from gb10.json); mode: default"])
    bundle, record = only_record(pytester.path / "out")
    provenance = record["host"]["provenance"]
    assert (provenance["origin"], provenance["simulated"]) == ("file", True)
    assert provenance["detail"] == "gb10.json"
    assert record["host"]["facts"]["source"] == "file:gb10.json"
    assert record["qualifying"] is False
    reason = "host facts simulated from gb10.json: only the unedited probe qualifies"
    assert reason in record["not_qualifying_reasons"]
    assert "- Host: Linux aarch64, no Apple chip, 119.7 GB, NVIDIA GB10 (SM 12.1, unified memory) " \
           "(simulated from gb10.json)" in (bundle / "evidence.md").read_text()
    assert reason in gate_rejection(bundle, commit, capsys)


def test_update_hook_adding_an_m4_is_an_edit_not_a_probe(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester, **{"conftest.py": ADD_AN_M4})
    bundle, record = run_passing(pytester)
    provenance = record["host"]["provenance"]
    assert (provenance["origin"], provenance["simulated"], provenance["detail"]) == (
        "edited", True, "conftest.py")
    assert record["host"]["facts"]["apple_chip"] == "M4"
    assert record["host"]["facts"]["source"] == "edited:conftest.py"
    reason = ("host facts simulated: edited by pytest_specgate_update_host_facts in conftest.py: "
              "only the unedited probe qualifies")
    assert reason in record["not_qualifying_reasons"]
    assert reason in gate_rejection(bundle, commit, capsys)


def test_update_hook_that_changes_nothing_keeps_the_probe(pytester: pytest.Pytester) -> None:
    commit_project(pytester, **{"conftest.py": "def pytest_specgate_update_host_facts(config, facts):\n"
                                               "    facts['os'] = facts['os']\n"})
    _, record = run_passing(pytester)
    assert record["host"]["provenance"]["origin"] == "probe" and record["qualifying"] is True


def test_host_facts_hook_claiming_probe_is_recorded_as_hook(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester, **{"conftest.py": ANSWER_WITH_A_GB10})
    bundle, record = run_passing(pytester)
    provenance = record["host"]["provenance"]
    assert (provenance["origin"], provenance["detail"]) == ("hook", "conftest.py")
    assert record["host"]["facts"]["source"] == "hook:conftest.py"
    reason = ("host facts simulated by pytest_specgate_host_facts in conftest.py: "
              "only the unedited probe qualifies")
    assert reason in record["not_qualifying_reasons"]
    assert reason in gate_rejection(bundle, commit, capsys)


def test_fake_nvidia_smi_early_on_path_is_caught(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = commit_project(pytester)
    fake_bin = pytester.path.parent / "fake-bin"
    fake_bin.mkdir()
    (fake_bin / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (fake_bin / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # NVML absent: the probe falls back to nvidia-smi
    bundle, record = run_passing(pytester)
    assert record["host"]["facts"]["gpus"][0]["name"] == "NVIDIA GB10"
    provenance = record["host"]["provenance"]
    assert provenance["origin"] == "probe"
    [tool] = [tool for tool in provenance["tools"] if tool["name"] == "nvidia-smi"]
    assert tool["system_location"] is False and tool["path"].endswith("/fake-bin/nvidia-smi")
    [answer] = [answer for answer in provenance["answers"] if answer["tool"] == "nvidia-smi"]
    assert answer["answer"] == "NVIDIA GB10, [N/A], 12.1"
    assert answer["asked"] == ("nvidia-smi --query-gpu=name,memory.total,compute_cap "
                               "--format=csv,noheader,nounits")
    assert any(reason.startswith("host probe asked nvidia-smi at ") and "outside the system's tool locations"
               in reason for reason in record["not_qualifying_reasons"])
    assert "(probed with " in record["host"]["summary"]
    assert "host probe asked nvidia-smi at " in gate_rejection(bundle, commit, capsys)


def test_system_locations_exclude_temp_and_user_dirs(tmp_path: Path) -> None:
    fake = tmp_path / "sysctl"
    fake.write_text("#!/bin/sh\n")
    assert in_system_location(str(fake)) is False
    assert in_system_location(None) is False
    assert in_system_location("relative/sysctl") is False
    assert in_system_location("/usr/local/bin/nvidia-smi") is False
    assert in_system_location("/bin/sh") is True


def test_answer_digest_binds_the_redacted_answer() -> None:
    answer = ProbeAnswer("sysctl", "/usr/sbin/sysctl", "sysctl -n machdep.cpu.brand_string",
                         "Apple M4 of alice", system_location=True)
    record = HostProvenance("probe", None, (answer,)).to_record(lambda text: text.replace("alice", "<user>"))
    assert record["answers"] == [{"tool": "sysctl", "asked": "sysctl -n machdep.cpu.brand_string",
                                  "answer": "Apple M4 of <user>"}]
    assert record["tools"][0]["answer_sha256"] == hashlib.sha256(b"Apple M4 of <user>").hexdigest()


def test_specgate_hosts_shows_provenance_and_an_untrusted_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert main(["hosts", "--host-facts", str(HOSTS / "gb10.json"), "--pyproject", str(pyproject)]) == 0
    assert "  provenance     simulated from gb10.json" in capsys.readouterr().out.splitlines()
    (tmp_path / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (tmp_path / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert main(["hosts", "--pyproject", str(pyproject)]) == 0
    out = capsys.readouterr().out.splitlines()
    fake = f"{tmp_path}/nvidia-smi"
    assert f"  asked          nvidia-smi at {fake} (OUTSIDE the system's tool locations)" in out
    assert f"  provenance     probed with {fake} outside the system's tool locations" in out
    assert main(["hosts", "--json", "--pyproject", str(pyproject)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [tool["system_location"] for tool in report["provenance"]["tools"]] == [False]


def test_reasons_are_recomputed_from_the_recorded_provenance() -> None:
    fake = answer_found_at("nvidia-smi", "/tmp/fake-bin/nvidia-smi", "nvidia-smi --query-gpu=name",
                                "NVIDIA GB10")
    for provenance in (HostProvenance("file", "gb10.json"), HostProvenance("probe", None, (fake,))):
        again = HostProvenance.from_record(json.loads(json.dumps(provenance.to_record())))
        assert again == provenance and again.reasons() == provenance.reasons() != ()
    assert host_reasons({"origin": "probe"}) == [
        "host provenance unreadable, so the host is unknown: host.provenance: fields 'tools' and "
        "'answers' must be lists of equal length"]
    assert host_reasons({"origin": "hardware", "tools": [], "answers": []})[0].endswith(
        "field 'origin' must be probe, file, hook or edited, got 'hardware'")
    assert host_reasons(HostProvenance("probe").to_record()) == []
