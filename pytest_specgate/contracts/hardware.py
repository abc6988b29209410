"""Hardware requirements and verdicts as values.

A ``HardwareRequirement`` is what a spec needs (from ``@pytest.mark.hardware(...)`` or a
``[tool.specgate.hosts.<name>]`` profile); a ``HardwareVerdict`` is whether a host met it,
with every unmet clause next to what the host has. Parsing markers and matching hosts
live in ``selection.hardware``; the evidence records and the gate read these values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, final

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.host import OS_NAMES

__all__ = [
    "OS_NAMES",
    "HardwareRequirement",
    "HardwareVerdict",
    "HostProfile",
    "RequirementError",
    "format_gb",
]



class RequirementError(SpecgateInputError):
    """A marker or profile argument is wrong; the message names the argument."""


@final
@dataclass(frozen=True)
class HardwareRequirement:
    """What a spec needs. Every field ``None`` means "no constraint"."""

    profile: str | None = None
    apple: str | None = None
    min_memory_gb: float | None = None
    max_memory_gb: float | None = None
    cuda_sm: str | None = None
    min_cuda_sm: str | None = None
    min_gpus: int | None = None
    min_gpu_memory_gb: float | None = None
    os: str | None = None
    macos_min: str | None = None
    macos_max: str | None = None
    env: str | None = None

    @property
    def needs_nvidia(self) -> bool:
        return any(v is not None for v in (self.cuda_sm, self.min_cuda_sm, self.min_gpus,
                                           self.min_gpu_memory_gb))

    def describe(self) -> str:
        """Human form, e.g. ``Apple M4, memory ≥ 16 GB``."""
        parts: list[str] = []
        if self.apple:
            parts.append("Apple Silicon (any M chip)" if self.apple == "M-any"
                         else f"Apple {self.apple}")
        if self.os:
            parts.append(OS_NAMES[self.os])
        if self.macos_min:
            parts.append(f"macOS ≥ {self.macos_min}")
        if self.macos_max:
            parts.append(f"macOS ≤ {self.macos_max}")
        if self.min_memory_gb is not None:
            parts.append(f"memory ≥ {format_gb(self.min_memory_gb)}")
        if self.max_memory_gb is not None:
            parts.append(f"memory ≤ {format_gb(self.max_memory_gb)}")
        if self.needs_nvidia:
            parts.append(self._describe_gpus())
        if self.env:
            parts.append(f"{self.env}=1")
        return ", ".join(parts) or "any host"

    def _describe_gpus(self) -> str:
        gpu = f"{self.min_gpus or 1}× NVIDIA GPU"
        details = []
        if self.cuda_sm:
            details.append(f"SM {self.cuda_sm}")
        if self.min_cuda_sm:
            details.append(f"SM ≥ {self.min_cuda_sm}")
        if self.min_gpu_memory_gb is not None:
            details.append(f"≥ {format_gb(self.min_gpu_memory_gb)} each")
        return f"{gpu} ({', '.join(details)})" if details else gpu

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


@final
@dataclass(frozen=True)
class HostProfile:
    """A named requirement from ``[tool.specgate.hosts.<name>]``."""

    name: str
    requirement: HardwareRequirement
    description: str | None = None


@final
@dataclass(frozen=True)
class HardwareVerdict:
    """The requirement, whether the host meets it, and every unmet clause."""

    requirement: HardwareRequirement
    matched: bool
    reasons: tuple[str, ...]
    host_summary: str

    def mismatch_message(self) -> str:
        profile = f" [{self.requirement.profile}]" if self.requirement.profile else ""
        return (f"needs {self.requirement.describe()}{profile}; unmet: "
                f"{'; '.join(self.reasons)}; host has {self.host_summary}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "requirement": self.requirement.to_dict(),
            "profile": self.requirement.profile,
            "matched": self.matched,
            "reasons": list(self.reasons),
            "host_summary": self.host_summary,
        }


def format_gb(value: float) -> str:
    return f"{value:g} GB"


