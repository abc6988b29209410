"""Hardware requirements: ``@pytest.mark.hardware(...)`` -> requirement -> verdict.

Like pytest's own ``skipping.py``, evaluation is a pure function of the
marker, the host facts and the environment, returning a small frozen
verdict that lists every unmet requirement next to what the host has.
Unknown facts never satisfy a requirement: a memory guard on a host whose
memory cannot be read is unmet, not assumed.
"""

from __future__ import annotations

import operator
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_specgate.contracts.hardware import (
    OS_NAMES,
    HardwareRequirement,
    HardwareVerdict,
    HostProfile,
    RequirementError,
    format_gb,
)
from pytest_specgate.contracts.host import GIB, GpuFacts, HostFacts
from pytest_specgate.contracts.validation import is_count, is_finite_positive, is_real

__all__ = [
    "HardwareRequirement",
    "HardwareVerdict",
    "HostProfile",
    "RequirementError",
    "capability_at_least",
    "evaluate_requirement",
    "gpu_memory_bytes",
    "host_profiles_from_table",
    "load_host_profiles",
    "requirement_from_marker",
    "specgate_table",
]

_APPLE_MODEL = re.compile(r"M-any|M\d+(?: (?:Pro|Max|Ultra))?")
_SM = re.compile(r"\d+\.\d+")
_VERSION = re.compile(r"\d+(?:\.\d+){0,2}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ---------------------------------------------------------------------------
# Marker / profile arguments -> requirement


def _number(name: str, value: Any) -> float:
    if not is_real(value):
        raise RequirementError(f"{name} must be a number of GB, got {value!r}")
    if not is_finite_positive(value):
        raise RequirementError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _matching(name: str, value: Any, pattern: re.Pattern[str], example: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise RequirementError(f"{name} must look like {example}, got {value!r}")
    return value


def _count(name: str, value: Any) -> int:
    if not is_count(value):
        raise RequirementError(f"{name} must be a whole number ≥ 1, got {value!r}")
    return value


def _os_name(name: str, value: Any) -> str:
    if value not in OS_NAMES:
        raise RequirementError(f"{name} must be one of {sorted(OS_NAMES)}, got {value!r}")
    return str(value)


_PARSERS: Final[dict[str, Callable[[str, Any], Any]]] = {
    "apple": lambda n, v: _matching(n, v, _APPLE_MODEL, "'M4', 'M4 Pro' or 'M-any'"),
    "min_memory_gb": _number,
    "max_memory_gb": _number,
    "cuda_sm": lambda n, v: _matching(n, v, _SM, "'12.1'"),
    "min_cuda_sm": lambda n, v: _matching(n, v, _SM, "'8.9'"),
    "min_gpus": _count,
    "min_gpu_memory_gb": _number,
    "os": _os_name,
    "macos_min": lambda n, v: _matching(n, v, _VERSION, "'14' or '15.3'"),
    "macos_max": lambda n, v: _matching(n, v, _VERSION, "'15' or '15.3'"),
    "env": lambda n, v: _matching(n, v, _ENV_NAME, "'SPEC028_RUN_SMALL_AIR_CANARY'"),
}


def _parse_clauses(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(kwargs) - set(_PARSERS))
    if unknown:
        raise RequirementError(
            f"unknown argument(s) {', '.join(unknown)}; known: {', '.join(sorted(_PARSERS))}"
        )
    return {name: _PARSERS[name](name, value) for name, value in kwargs.items()
            if value is not None}


def _checked(clauses: Mapping[str, Any], profile: str | None) -> HardwareRequirement:
    requirement = HardwareRequirement(profile=profile, **clauses)
    lo, hi = requirement.min_memory_gb, requirement.max_memory_gb
    if lo is not None and hi is not None and lo > hi:
        raise RequirementError(f"min_memory_gb={lo:g} > max_memory_gb={hi:g}: no host can match")
    if requirement.macos_min and requirement.macos_max and (
        _version(requirement.macos_min) > _version(requirement.macos_max)
    ):
        raise RequirementError(
            f"macos_min={requirement.macos_min} > macos_max={requirement.macos_max}: "
            "no host can match"
        )
    if requirement.cuda_sm and requirement.min_cuda_sm and (
        _version(requirement.cuda_sm) < _version(requirement.min_cuda_sm)
    ):
        raise RequirementError(
            f"cuda_sm={requirement.cuda_sm} < min_cuda_sm={requirement.min_cuda_sm}: "
            "no host can match"
        )
    macos_only = requirement.apple or requirement.macos_min or requirement.macos_max
    if macos_only and requirement.os not in (None, "macos"):
        raise RequirementError(f"os={requirement.os!r} contradicts an Apple/macOS requirement")
    return requirement


def requirement_from_marker(
    args: Sequence[Any], kwargs: Mapping[str, Any], profiles: Mapping[str, HostProfile]
) -> HardwareRequirement:
    """Build the requirement of one marker; marker keywords refine a named profile."""
    if len(args) > 1:
        raise RequirementError(f"takes at most one positional profile name, got {len(args)}")
    profile_name = args[0] if args else kwargs.get("profile")
    if args and "profile" in kwargs:
        raise RequirementError("profile given both positionally and as profile=")
    clauses = {k: v for k, v in kwargs.items() if k != "profile"}
    base: dict[str, Any] = {}
    if profile_name is not None:
        if not isinstance(profile_name, str):
            raise RequirementError(f"profile must be a name, got {profile_name!r}")
        if profile_name not in profiles:
            known = ", ".join(sorted(profiles)) or "none declared"
            raise RequirementError(
                f"unknown host profile {profile_name!r} (declared in [tool.specgate.hosts]: "
                f"{known})"
            )
        base = profiles[profile_name].requirement.to_dict()
        base.pop("profile", None)
    return _checked({**base, **_parse_clauses(clauses)}, profile_name)


def requirement_from_dict(data: Mapping[str, Any]) -> HardwareRequirement:
    """A requirement as :meth:`HardwareRequirement.to_dict` wrote it (into evidence), re-validated."""
    profile = data.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise RequirementError(f"profile must be a name, got {profile!r}")
    return _checked(_parse_clauses({k: v for k, v in data.items() if k != "profile"}), profile)


def specgate_table(pyproject: Path | None) -> dict[str, Any]:
    """The ``[tool.specgate]`` table of a pyproject.toml (empty when there is none)."""
    if pyproject is None or not pyproject.is_file():
        return {}
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        found = f"{exc.reason} at byte {exc.start}"
        raise RequirementError(f"{pyproject}: cannot read: not UTF-8 text ({found})") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RequirementError(f"{pyproject}: cannot read: {exc}") from exc
    table = data.get("tool", {}).get("specgate", {})
    if not isinstance(table, dict):
        raise RequirementError(f"{pyproject}: [tool.specgate] must be a table")
    return table


def host_profiles_from_table(hosts: object, pyproject: Path) -> dict[str, HostProfile]:
    """Named profiles from a ``[tool.specgate.hosts]`` table; errors name the file and profile."""
    if not isinstance(hosts, dict):
        raise RequirementError(f"{pyproject}: [tool.specgate.hosts] must be a table")
    profiles: dict[str, HostProfile] = {}
    for name, table in hosts.items():
        where = f"{pyproject}: [tool.specgate.hosts.{name}]"
        if not isinstance(table, dict):
            raise RequirementError(f"{where} must be a table")
        clauses = dict(table)
        description = clauses.pop("description", None)
        try:
            requirement = _checked(_parse_clauses(clauses), name)
        except RequirementError as exc:
            raise RequirementError(f"{where}: {exc}") from exc
        profiles[name] = HostProfile(name=name, requirement=requirement,
                                     description=str(description) if description else None)
    return profiles


def load_host_profiles(pyproject: Path | None) -> dict[str, HostProfile]:
    """Named profiles from ``[tool.specgate.hosts]`` of ``pyproject`` (none without one)."""
    if pyproject is None:
        return {}
    return host_profiles_from_table(specgate_table(pyproject).get("hosts", {}), pyproject)


# ---------------------------------------------------------------------------
# Requirement + host -> verdict


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _within(host_version: str, bound: str, *, upper: bool) -> bool:
    """Compare on the bound's precision: ``macos_max='15'`` admits 15.7."""
    want = _version(bound)
    have = _version(host_version)[: len(want)]
    return have <= want if upper else have >= want


def gpu_memory_bytes(gpu: GpuFacts, host: HostFacts) -> int | None:
    """The GPU's memory; a unified-memory GPU (GB10) has the host's. None when unknown."""
    if gpu.memory_bytes is not None:
        return gpu.memory_bytes
    return host.memory_bytes if gpu.unified_memory else None


def capability_at_least(found: str | None, minimum: str) -> bool | None:
    """Whether compute capability ``found`` is ``minimum`` or newer; None when ``found`` is unknown."""
    have = None if found is None else _version(found)
    return None if not have else have >= _version(minimum)


def _gpu_fits(gpu: GpuFacts, req: HardwareRequirement, host: HostFacts) -> bool:
    if gpu.vendor != "nvidia":
        return False
    if req.cuda_sm and gpu.compute_capability != req.cuda_sm:
        return False
    if req.min_cuda_sm and not capability_at_least(gpu.compute_capability, req.min_cuda_sm):
        return False
    if req.min_gpu_memory_gb is not None:
        memory = gpu_memory_bytes(gpu, host)
        if memory is None or memory < req.min_gpu_memory_gb * GIB:
            return False
    return True


def _memory_reasons(req: HardwareRequirement, host: HostFacts) -> list[str]:
    reasons: list[str] = []
    have = host.memory_gb
    for bound, label, ok in (
        (req.min_memory_gb, "≥", operator.ge),
        (req.max_memory_gb, "≤", operator.le),
    ):
        if bound is None:
            continue
        if have is None:
            reasons.append(f"memory {label} {format_gb(bound)} (host memory unknown)")
        elif not ok(have, bound):
            reasons.append(f"memory {label} {format_gb(bound)} (host has {have:.1f} GB)")
    return reasons


def _macos_reasons(req: HardwareRequirement, host: HostFacts) -> list[str]:
    reasons: list[str] = []
    for bound, label, upper in ((req.macos_min, "≥", False), (req.macos_max, "≤", True)):
        if bound is None:
            continue
        if host.os != "macos":
            reasons.append(f"macOS {label} {bound} (host runs {OS_NAMES.get(host.os, host.os)})")
        elif host.os_version is None:
            reasons.append(f"macOS {label} {bound} (host macOS version unknown)")
        elif not _within(host.os_version, bound, upper=upper):
            reasons.append(f"macOS {label} {bound} (host has macOS {host.os_version})")
    return reasons


def _gpu_reasons(req: HardwareRequirement, host: HostFacts) -> list[str]:
    if not req.needs_nvidia:
        return []
    wanted = req.min_gpus or 1
    fitting = [gpu for gpu in host.gpus if _gpu_fits(gpu, req, host)]
    if len(fitting) >= wanted:
        return []
    have = "; ".join(
        f"{gpu.name} SM {gpu.compute_capability or 'unknown'}, "
        + ("memory unknown" if gpu_memory_bytes(gpu, host) is None
           else f"{(gpu_memory_bytes(gpu, host) or 0) / GIB:.1f} GB")
        for gpu in host.gpus
    ) or "no NVIDIA GPU"
    return [f"{req._describe_gpus()} (host has {len(fitting)} fitting: {have})"]


def evaluate_requirement(
    requirement: HardwareRequirement, host: HostFacts, environ: Mapping[str, str]
) -> HardwareVerdict:
    """Match a requirement against host facts and the environment (pure)."""
    reasons: list[str] = []
    if requirement.os and host.os != requirement.os:
        reasons.append(f"OS {OS_NAMES[requirement.os]} (host runs "
                       f"{OS_NAMES.get(host.os, host.os)})")
    if requirement.apple:
        chip = host.apple_chip
        wanted = requirement.apple
        if chip is None:
            reasons.append(f"Apple {wanted} (host has no Apple chip)")
        elif wanted != "M-any" and chip != wanted and host.apple_chip_family != wanted:
            reasons.append(f"Apple {wanted} (host has Apple {chip})")
    reasons += _macos_reasons(requirement, host)
    reasons += _memory_reasons(requirement, host)
    reasons += _gpu_reasons(requirement, host)
    if requirement.env:
        value = environ.get(requirement.env)
        if value != "1":
            found = "unset" if value is None else f"{value!r}"
            reasons.append(f"opt-in {requirement.env}=1 (host has it {found})"
                           if value is None else
                           f"opt-in {requirement.env}=1 (host has {found})")
    return HardwareVerdict(requirement=requirement, matched=not reasons,
                           reasons=tuple(reasons), host_summary=host.summary())
