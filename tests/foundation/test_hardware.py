"""Requirement parsing and matching, tested as pure functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.contracts.hardware import HardwareRequirement, HostProfile, RequirementError
from pytest_specgate.contracts.host import GIB, GpuFacts, HostFacts
from pytest_specgate.selection.hardware import (
    evaluate_requirement,
    load_host_profiles,
    requirement_from_marker,
)
from pytest_specgate.selection.host_probe import load_host_facts

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"


def host(name: str) -> HostFacts:
    return load_host_facts(HOSTS / f"{name}.json")


PROFILES = {
    "m4-16gb": HostProfile("m4-16gb", HardwareRequirement(profile="m4-16gb", apple="M4", min_memory_gb=16)),
}


def verdict(host_name: str, environ: dict[str, str] | None = None, *args: str, **kwargs: object):
    requirement = requirement_from_marker(args, kwargs, PROFILES)
    return evaluate_requirement(requirement, host(host_name), environ or {})


def test_m4_profile_matches_m4_and_names_every_mismatch_elsewhere() -> None:
    assert verdict("m4-16gb", None, "m4-16gb").matched
    linux = verdict("linux-x86_64-24gb-nogpu", None, "m4-16gb")
    assert not linux.matched
    assert linux.reasons == ("Apple M4 (host has no Apple chip)",)
    m1 = verdict("m1-8gb-air-macos26", None, "m4-16gb")
    assert m1.reasons == ("Apple M4 (host has Apple M1)", "memory ≥ 16 GB (host has 8.0 GB)")
    message = m1.mismatch_message()
    assert message.startswith("needs Apple M4, memory ≥ 16 GB [m4-16gb]; unmet: Apple M4")
    assert message.endswith("host has macOS 26.3.1 arm64, Apple M1, 8.0 GB")


def test_apple_family_model_and_any() -> None:
    pro = HostFacts(os="macos", arch="arm64", apple_chip="M4 Pro", memory_bytes=24 * GIB)
    assert evaluate_requirement(HardwareRequirement(apple="M4"), pro, {}).matched
    assert evaluate_requirement(HardwareRequirement(apple="M4 Pro"), pro, {}).matched
    assert not evaluate_requirement(HardwareRequirement(apple="M4 Max"), pro, {}).matched
    assert evaluate_requirement(HardwareRequirement(apple="M-any"), pro, {}).matched
    assert not evaluate_requirement(HardwareRequirement(apple="M-any"), host("gb10"), {}).matched


def test_memory_bounds_and_unknown_memory_fails_closed() -> None:
    assert verdict("m1-8gb-air-macos26", None, max_memory_gb=12).matched
    assert verdict("m4-16gb", None, max_memory_gb=12).reasons == ("memory ≤ 12 GB (host has 16.0 GB)",)
    unknown = HostFacts(os="linux", arch="x86_64", memory_bytes=None)
    result = evaluate_requirement(HardwareRequirement(min_memory_gb=1), unknown, {})
    assert result.reasons == ("memory ≥ 1 GB (host memory unknown)",)


def test_gb10_sm_and_unified_memory_fallback() -> None:
    assert verdict("gb10", None, cuda_sm="12.1").matched
    assert verdict("gb10", None, min_cuda_sm="9.0", min_gpus=1).matched
    assert not verdict("gb10", None, cuda_sm="9.0").matched
    assert not verdict("gb10", None, min_gpus=2).matched
    # NVML reports no memory for GB10: the host's unified memory stands in.
    assert verdict("gb10", None, min_gpu_memory_gb=100).matched
    assert not verdict("gb10", None, min_gpu_memory_gb=200).matched


def test_discrete_gpu_with_unknown_memory_fails_closed() -> None:
    box = HostFacts(
        os="linux",
        arch="x86_64",
        memory_bytes=64 * GIB,
        gpus=(GpuFacts(name="NVIDIA GeForce RTX 4090", compute_capability="8.9"),),
    )
    result = evaluate_requirement(HardwareRequirement(min_gpu_memory_gb=16), box, {})
    assert not result.matched
    assert "memory unknown" in result.reasons[0]


def test_no_gpu_host_reports_none() -> None:
    reasons = verdict("linux-x86_64-24gb-nogpu", None, cuda_sm="12.1").reasons
    assert reasons == ("1× NVIDIA GPU (SM 12.1) (host has 0 fitting: no NVIDIA GPU)",)


def test_macos_bounds_compare_on_the_bound_precision() -> None:
    assert verdict("m4-16gb", None, macos_max="15").matched  # 15.5 <= 15
    assert verdict("m1-8gb-air-macos26", None, macos_max="15").reasons == (
        "macOS ≤ 15 (host has macOS 26.3.1)",
    )
    assert verdict("m1-8gb-air-macos26", None, macos_min="26.3").matched
    assert verdict("gb10", None, macos_min="14").reasons == ("macOS ≥ 14 (host runs Linux)",)
    assert verdict("m4-16gb", None, os="macos").matched
    assert verdict("m4-16gb", None, os="linux").reasons == ("OS Linux (host runs macOS)",)


def test_env_opt_in_must_equal_one() -> None:
    name = "SPEC028_RUN_SMALL_AIR_CANARY"
    assert verdict("m1-8gb-air-macos26", {name: "1"}, env=name).matched
    assert verdict("m1-8gb-air-macos26", {}, env=name).reasons == (f"opt-in {name}=1 (host has it unset)",)
    assert verdict("m1-8gb-air-macos26", {name: "yes"}, env=name).reasons == (
        f"opt-in {name}=1 (host has 'yes')",
    )


def test_marker_keywords_refine_a_profile() -> None:
    requirement = requirement_from_marker(("m4-16gb",), {"min_memory_gb": 24}, PROFILES)
    assert requirement == HardwareRequirement(profile="m4-16gb", apple="M4", min_memory_gb=24)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {"ram": 16}, "unknown argument(s) ram"),
        ((), {"min_memory_gb": "lots"}, "min_memory_gb must be a number of GB, got 'lots'"),
        ((), {"min_memory_gb": True}, "min_memory_gb must be a number of GB, got True"),
        ((), {"min_gpus": 0}, "min_gpus must be a whole number ≥ 1, got 0"),
        ((), {"cuda_sm": 12.1}, "cuda_sm must look like '12.1', got 12.1"),
        ((), {"apple": "A17"}, "apple must look like 'M4', 'M4 Pro' or 'M-any', got 'A17'"),
        ((), {"os": "beos"}, "os must be one of ['linux', 'macos', 'windows'], got 'beos'"),
        (("m9-1tb",), {}, "unknown host profile 'm9-1tb' (declared in [tool.specgate.hosts]: m4-16gb)"),
        ((), {"min_memory_gb": 16, "max_memory_gb": 8}, "min_memory_gb=16 > max_memory_gb=8"),
        ((), {"macos_min": "15", "macos_max": "14"}, "macos_min=15 > macos_max=14"),
        ((), {"cuda_sm": "8.0", "min_cuda_sm": "9.0"}, "cuda_sm=8.0 < min_cuda_sm=9.0"),
        ((), {"apple": "M4", "os": "linux"}, "contradicts an Apple/macOS requirement"),
        (("a", "b"), {}, "takes at most one positional profile name, got 2"),
    ],
)
def test_bad_arguments_are_named(args: tuple[str, ...], kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(RequirementError) as info:
        requirement_from_marker(args, kwargs, PROFILES)
    assert message in str(info.value)


def test_profiles_load_from_pyproject_and_errors_name_the_table(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[tool.specgate.hosts.gb10]\ndescription = "DGX Spark"\ncuda_sm = "12.1"\n'
        "[tool.specgate.hosts.big]\nmin_memory_gb = 64\n"
    )
    profiles = load_host_profiles(pyproject)
    assert profiles["gb10"].requirement == HardwareRequirement(profile="gb10", cuda_sm="12.1")
    assert profiles["gb10"].description == "DGX Spark"
    pyproject.write_text('[tool.specgate.hosts.bad]\nmin_memory_gb = "lots"\n')
    with pytest.raises(RequirementError, match=r"\[tool.specgate.hosts.bad\]: min_memory_gb must"):
        load_host_profiles(pyproject)
    assert load_host_profiles(tmp_path / "missing.toml") == {}


def test_repository_profiles_match_their_example_hosts() -> None:
    profiles = load_host_profiles(Path(__file__).resolve().parents[2] / "pyproject.toml")
    pairs = {"m4-16gb": "m4-16gb", "m1-8gb-air": "m1-8gb-air-macos26", "gb10": "gb10"}
    for profile, host_name in pairs.items():
        matches = {
            name
            for name, p in profiles.items()
            if evaluate_requirement(p.requirement, host(host_name), {}).matched
        }
        assert matches == {profile}, host_name
    linux = host("linux-x86_64-24gb-nogpu")
    assert not any(evaluate_requirement(p.requirement, linux, {}).matched for p in profiles.values())
