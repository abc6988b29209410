"""Host facts as values: what hardware a run is on, and where those facts came from.

The probe (``selection.host_probe``) and a facts file (``--specgate-host-facts``) both
produce a ``HostFacts``; the hardware matcher, the evidence records and the gate read it.
A fact that cannot be known is ``None`` ("unknown"), which the matcher treats as unmet.
Because a simulation must never pass for the real thing, facts carry their provenance:
where they came from (the probe, a file, a hook, an edit) and, for the probe, every tool
it asked, where that tool lives and what it answered.
"""

from __future__ import annotations

import hashlib
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, final

from pytest_specgate.contracts.errors import SpecgateInputError

__all__ = [
    "GIB",
    "HOST_FACTS_SCHEMA",
    "NVIDIA_DRIVER_DIRS",
    "OS_NAMES",
    "SYSTEM_TOOL_DIRS",
    "GpuFacts",
    "HostFacts",
    "HostFactsError",
    "HostOrigin",
    "HostProvenance",
    "ProbeAnswer",
    "host_facts_from_dict",
]

HOST_FACTS_SCHEMA: Final = "specgate.host-facts/v1"


GIB: Final = 1024**3


OS_NAMES: Final = {"macos": "macOS", "linux": "Linux", "windows": "Windows"}
"""Each OS a host-facts document may name, and how a reader sees it."""


NVIDIA_DRIVER_DIRS: Final = ("/usr/local/nvidia/bin", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")
"""Where GPU containers find the host's NVIDIA driver (``nvidia-smi`` and ``libnvidia-ml``) when it
is mounted rather than installed: Kubernetes GPU nodes (GKE) mount it there, and NVIDIA's CUDA
images put these folders on ``PATH`` and ``LD_LIBRARY_PATH``. An H200 container seen here had
both tools nowhere else. Trusted like the system's own folders, with the same test: the file
is owned by root and writable by nobody else."""

SYSTEM_TOOL_DIRS: Final = ("/usr/bin", "/bin", "/usr/sbin", "/sbin", NVIDIA_DRIVER_DIRS[0])
"""Where the probe trusts a tool (``nvidia-smi``, ``sysctl``) to be found. ``/usr/local/bin`` is
left out on purpose: Homebrew and hand installs make it writable without root."""


HostOrigin = Literal["probe", "file", "hook", "edited"]


class HostFactsError(SpecgateInputError):
    """A host-facts document is malformed; the message names the field."""


@final
@dataclass(frozen=True)
class ProbeAnswer:
    """One question the probe asked a tool or library, and the raw answer it got."""

    tool: str
    path: str | None
    asked: str
    answer: str | None
    # Decided where the tool was found (``in_system_location``); a record keeps the verdict.
    system_location: bool


def _sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


@final
@dataclass(frozen=True)
class HostProvenance:
    """Where a session's host facts came from; anything but the unedited probe is simulated."""

    origin: HostOrigin
    detail: str | None = None
    answers: tuple[ProbeAnswer, ...] = ()

    @property
    def simulated(self) -> bool:
        return self.origin != "probe"

    @property
    def source_label(self) -> str:
        """The facts' ``source`` field: ``probe``, ``file:gb10.json``, ``hook:conftest.py``, ..."""
        return self.origin if self.detail is None else f"{self.origin}:{self.detail}"

    def label(self) -> str | None:
        """What a reader must know next to the host line, or None for a trusted probe."""
        if self.origin == "file":
            return f"simulated from {self.detail}"
        if self.origin == "hook":
            return f"simulated by pytest_specgate_host_facts in {self.detail}"
        if self.origin == "edited":
            return f"simulated: edited by pytest_specgate_update_host_facts in {self.detail}"
        outside = sorted({a.path or a.tool for a in self.answers if not a.system_location})
        return f"probed with {', '.join(outside)} outside the system's tool locations" if outside else None

    def reasons(self) -> tuple[str, ...]:
        """Why evidence on these facts may not qualify (empty for an unedited, trusted probe)."""
        reasons = []
        if self.simulated:
            reasons.append(f"host facts {self.label()}: only the unedited probe qualifies")
        for answer in self.answers:
            if not answer.system_location:
                where = "at an unknown path" if answer.path is None else f"at {answer.path}"
                reasons.append(
                    f"host probe asked {answer.tool} {where}, outside the system's tool locations "
                    f"({', '.join(SYSTEM_TOOL_DIRS)}): its answer cannot be trusted"
                )
        return tuple(reasons)

    @classmethod
    def from_record(cls, data: object, where: str = "host.provenance") -> HostProvenance:
        """Read ``record["host"]["provenance"]`` back (what the gate re-judges); errors name the field."""
        if not isinstance(data, Mapping):
            raise HostFactsError(f"{where}: must be an object, got {type(data).__name__}")
        origin = data.get("origin")
        if origin not in ("probe", "file", "hook", "edited"):
            raise HostFactsError(
                f"{where}: field 'origin' must be probe, file, hook or edited, got {origin!r}")
        detail = data.get("detail")
        tools, answers = data.get("tools"), data.get("answers")
        if not isinstance(tools, list) or not isinstance(answers, list) or len(tools) != len(answers):
            raise HostFactsError(f"{where}: fields 'tools' and 'answers' must be lists of equal length")
        probed = []
        for index, (tool, answer) in enumerate(zip(tools, answers, strict=True)):
            if not isinstance(tool, Mapping) or not isinstance(answer, Mapping):
                raise HostFactsError(f"{where}: tools[{index}] and answers[{index}] must be objects")
            path, said = tool.get("path"), answer.get("answer")
            probed.append(ProbeAnswer(
                tool=str(tool.get("name")),
                path=path if isinstance(path, str) else None,
                asked=str(answer.get("asked")),
                answer=said if isinstance(said, str) else None,
                system_location=tool.get("system_location") is True,
            ))
        return cls(origin, detail if isinstance(detail, str) else None, tuple(probed))

    def to_record(self, redact: Callable[[str], str] = str) -> dict[str, Any]:
        """``record["host"]["provenance"]``; each tool's ``answer_sha256`` binds the stored answer."""
        answers = [None if a.answer is None else redact(a.answer) for a in self.answers]
        return {
            "origin": self.origin,
            "simulated": self.simulated,
            "detail": self.detail,
            "tools": [
                {"name": a.tool, "path": a.path, "system_location": a.system_location,
                 "answer_sha256": _sha256_text(stored)}
                for a, stored in zip(self.answers, answers, strict=True)
            ],
            "answers": [
                {"tool": a.tool, "asked": a.asked, "answer": stored}
                for a, stored in zip(self.answers, answers, strict=True)
            ],
        }


@final
@dataclass(frozen=True)
class GpuFacts:
    """One accelerator as the probe (or a facts file) saw it."""

    name: str
    vendor: str = "nvidia"
    memory_bytes: int | None = None
    compute_capability: str | None = None
    unified_memory: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "memory_bytes": self.memory_bytes,
            "compute_capability": self.compute_capability,
            "unified_memory": self.unified_memory,
        }


@final
@dataclass(frozen=True)
class HostFacts:
    """Everything a hardware requirement can be matched against."""

    os: str
    arch: str
    os_version: str | None = None
    kernel: str | None = None
    cpu_brand: str | None = None
    cpu_count: int | None = None
    memory_bytes: int | None = None
    apple_chip: str | None = None
    gpus: tuple[GpuFacts, ...] = ()
    thermal_state: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    source: str = "probe"
    # What the probe asked and was told; not part of the editable JSON shape.
    probed_with: tuple[ProbeAnswer, ...] = field(default=(), compare=False)

    @property
    def apple_chip_family(self) -> str | None:
        """``"M4"`` for an ``"M4 Pro"``: the generation a requirement names."""
        return self.apple_chip.split()[0] if self.apple_chip else None

    @property
    def memory_gb(self) -> float | None:
        return None if self.memory_bytes is None else self.memory_bytes / GIB

    def summary(self) -> str:
        """One line a user can compare with a requirement, e.g. in a skip reason."""
        os_name = OS_NAMES.get(self.os, self.os)
        if self.os == "macos" and self.os_version:
            os_name = f"macOS {self.os_version}"
        parts = [f"{os_name} {self.arch}"]
        parts.append(f"Apple {self.apple_chip}" if self.apple_chip else "no Apple chip")
        parts.append("memory unknown" if self.memory_gb is None else f"{self.memory_gb:.1f} GB")
        if self.gpus:
            for gpu in self.gpus:
                sm = f"SM {gpu.compute_capability}" if gpu.compute_capability else "SM unknown"
                mem = (
                    "unified memory"
                    if gpu.memory_bytes is None and gpu.unified_memory
                    else "memory unknown"
                    if gpu.memory_bytes is None
                    else f"{gpu.memory_bytes / GIB:.1f} GB"
                )
                parts.append(f"{gpu.name} ({sm}, {mem})")
        elif not self.apple_chip:
            parts.append("no GPU")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": HOST_FACTS_SCHEMA,
            "os": self.os,
            "arch": self.arch,
            "os_version": self.os_version,
            "kernel": self.kernel,
            "cpu_brand": self.cpu_brand,
            "cpu_count": self.cpu_count,
            "memory_bytes": self.memory_bytes,
            "apple_chip": self.apple_chip,
            "gpus": [gpu.to_dict() for gpu in self.gpus],
            "thermal_state": self.thermal_state,
            "extra": dict(self.extra),
            "source": self.source,
        }


def _shown(value: object) -> str:
    """``repr(value)`` cut short: a wrong field of a 30 MB file stays a one-line message."""
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = 80
    return shown.repr(value)


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str,
           *, required: bool = False) -> Any:
    if name not in data or data[name] is None:
        if required:
            raise HostFactsError(f"{where}: missing required field {name!r}")
        return None
    value = data[name]
    if isinstance(value, bool) and kind in (int, (int, float)):
        raise HostFactsError(f"{where}: field {name!r} must be a number, got {value!r}")
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise HostFactsError(
            f"{where}: field {name!r} must be {expected}, got {type(value).__name__} {_shown(value)}"
        )
    return value


def _non_negative(value: int | None, name: str, where: str) -> int | None:
    if value is not None and value < 0:
        raise HostFactsError(f"{where}: field {name!r} must be >= 0, got {value}")
    return value


def _gpu_from_dict(data: Any, where: str) -> GpuFacts:
    if not isinstance(data, Mapping):
        raise HostFactsError(f"{where}: must be an object, got {type(data).__name__}")
    unknown = set(data) - {"name", "vendor", "memory_bytes", "compute_capability",
                           "unified_memory"}
    if unknown:
        raise HostFactsError(f"{where}: unknown field(s) {sorted(unknown)}")
    capability = _field(data, "compute_capability", str, where)
    if capability is not None and not re.fullmatch(r"\d+\.\d+", capability):
        raise HostFactsError(
            f"{where}: field 'compute_capability' must look like '12.1', got {capability!r}"
        )
    unified = _field(data, "unified_memory", bool, where)
    return GpuFacts(
        name=_field(data, "name", str, where, required=True),
        vendor=_field(data, "vendor", str, where) or "nvidia",
        memory_bytes=_non_negative(_field(data, "memory_bytes", int, where), "memory_bytes",
                                   where),
        compute_capability=capability,
        unified_memory=bool(unified),
    )


def host_facts_from_dict(data: Any, *, where: str = "host facts", source: str = "file") -> HostFacts:
    """Validate a facts document; every error names ``where`` and the field."""
    if not isinstance(data, Mapping):
        raise HostFactsError(f"{where}: must be a JSON object, got {type(data).__name__}")
    known = {"schema", "os", "arch", "os_version", "kernel", "cpu_brand", "cpu_count",
             "memory_bytes", "apple_chip", "gpus", "thermal_state", "extra", "source"}
    unknown = set(data) - known
    if unknown:
        raise HostFactsError(f"{where}: unknown field(s) {sorted(unknown)}")
    schema = data.get("schema", HOST_FACTS_SCHEMA)
    if schema != HOST_FACTS_SCHEMA:
        raise HostFactsError(f"{where}: field 'schema' must be {HOST_FACTS_SCHEMA!r}, got {schema!r}")
    os_name = _field(data, "os", str, where, required=True)
    if os_name not in OS_NAMES:
        raise HostFactsError(f"{where}: field 'os' must be one of {sorted(OS_NAMES)}, got {os_name!r}")
    apple_chip = _field(data, "apple_chip", str, where)
    if apple_chip is not None and not re.fullmatch(r"M\d+(?: (?:Pro|Max|Ultra))?", apple_chip):
        raise HostFactsError(
            f"{where}: field 'apple_chip' must look like 'M4' or 'M4 Pro', got {apple_chip!r}"
        )
    gpus_raw = _field(data, "gpus", list, where) or []
    extra = _field(data, "extra", dict, where) or {}
    return HostFacts(
        os=os_name,
        arch=_field(data, "arch", str, where, required=True),
        os_version=_field(data, "os_version", str, where),
        kernel=_field(data, "kernel", str, where),
        cpu_brand=_field(data, "cpu_brand", str, where),
        cpu_count=_non_negative(_field(data, "cpu_count", int, where), "cpu_count", where),
        memory_bytes=_non_negative(_field(data, "memory_bytes", int, where), "memory_bytes",
                                   where),
        apple_chip=apple_chip,
        gpus=tuple(_gpu_from_dict(g, f"{where}: gpus[{i}]") for i, g in enumerate(gpus_raw)),
        thermal_state=_field(data, "thermal_state", str, where),
        extra=extra,
        source=source,
    )


