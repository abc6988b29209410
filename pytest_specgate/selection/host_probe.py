"""Host facts: what hardware this run is on, probed once or read from a file.

Hardware specs are only as honest as the facts they are matched against, so
every probe step is optional and never guesses: a fact that cannot be read is
``None`` ("unknown"), and the requirement matcher treats unknown as unmet.
A facts file (``--specgate-host-facts``) replaces the probe entirely; that is
how CI simulates an M4 or a GB10.

Because a simulation must never pass for the real thing, facts carry their
provenance: where they came from (the probe, a file, a hook, an edit) and, for
the probe, every tool it asked, where that tool lives and what it answered.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, final

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.inputs import InputError, read_json_file

__all__ = [
    "HOST_FACTS_SCHEMA",
    "SYSTEM_TOOL_DIRS",
    "GpuFacts",
    "HostFacts",
    "HostFactsError",
    "HostProvenance",
    "ProbeAnswer",
    "host_facts_from_dict",
    "in_system_location",
    "load_host_facts",
    "parse_apple_chip",
    "parse_meminfo_bytes",
    "parse_nvidia_smi_csv",
    "probe_host",
]

HOST_FACTS_SCHEMA: Final = "specgate.host-facts/v1"
GIB: Final = 1024**3
_PROBE_TIMEOUT_S: Final = 5.0
# GPUs whose memory is the host's unified memory: NVML reports it as
# NOT_SUPPORTED, so memory guards must fall back to the host figure.
_UNIFIED_MEMORY_GPU = re.compile(r"\bGB10\b|\bOrin\b|\bThor\b", re.IGNORECASE)
_APPLE_CHIP = re.compile(r"\bApple (M\d+)(?: (Pro|Max|Ultra))?\b")
_KNOWN_OS: Final = frozenset({"linux", "macos", "windows"})
SYSTEM_TOOL_DIRS: Final = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
"""Where the probe trusts a tool (``nvidia-smi``, ``sysctl``) to be found. ``/usr/local/bin`` is
left out on purpose: Homebrew and hand installs make it writable without root."""
_SYSTEM_REAL_PREFIXES: Final = (*SYSTEM_TOOL_DIRS, "/usr/lib", "/usr/lib64", "/usr/libexec", "/lib",
                                "/lib64")
"""Where such a tool (or the NVML library) may really live once symlinks are resolved
(``/usr/bin/nvidia-smi`` -> ``/etc/alternatives`` -> ``/usr/lib/nvidia/...``)."""
HostOrigin = Literal["probe", "file", "hook", "edited"]


class HostFactsError(SpecgateInputError):
    """A host-facts document is malformed; the message names the field."""


def in_system_location(path: str | None) -> bool:
    """Whether a tool (or library) found at ``path`` is the system's own: found and really
    living under a system prefix, owned by root and writable by nobody else.

    Unknown (``None``, unreadable, not POSIX) is not a system location.
    """
    if path is None or os.name != "posix" or not os.path.isabs(path):
        return False
    real = os.path.realpath(path)
    for candidate in (os.path.normpath(path), real):
        if not any(candidate.startswith(prefix + "/") for prefix in _SYSTEM_REAL_PREFIXES):
            return False
    try:
        info = os.stat(real)
    except OSError:
        return False
    return info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


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

    @classmethod
    def found_at(cls, tool: str, path: str | None, asked: str, answer: str | None) -> ProbeAnswer:
        return cls(tool, path, asked, answer, in_system_location(path))


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
        os_name = {"macos": "macOS", "linux": "Linux", "windows": "Windows"}.get(self.os, self.os)
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


# ---------------------------------------------------------------------------
# Parsing a facts document (file or hook-edited dict)


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
            f"{where}: field {name!r} must be {expected}, got {type(value).__name__} {value!r}"
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
    if os_name not in _KNOWN_OS:
        raise HostFactsError(f"{where}: field 'os' must be one of {sorted(_KNOWN_OS)}, got {os_name!r}")
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


def load_host_facts(path: Path) -> HostFacts:
    """Read a ``--specgate-host-facts`` file; errors name the file and field."""
    try:
        _, data = read_json_file(path)
    except InputError as exc:
        raise HostFactsError(f"host facts file {exc}") from None
    return host_facts_from_dict(data, where=str(path), source=f"file:{path.name}")


# ---------------------------------------------------------------------------
# Pure parsers of probe output (tested directly)


def parse_apple_chip(brand: str | None) -> str | None:
    """``"Apple M4 Pro"`` -> ``"M4 Pro"``; anything else -> ``None``."""
    if not brand:
        return None
    match = _APPLE_CHIP.search(brand)
    if not match:
        return None
    return match.group(1) + (f" {match.group(2)}" if match.group(2) else "")


def parse_meminfo_bytes(text: str) -> int | None:
    """MemTotal from ``/proc/meminfo`` in bytes."""
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def parse_nvidia_smi_csv(text: str, host_memory_bytes: int | None = None) -> tuple[GpuFacts, ...]:
    """Parse ``nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader,nounits``.

    ``[N/A]`` memory (GB10's unified memory) stays unknown on the GPU; the
    matcher falls back to host memory only for unified-memory parts.
    """
    gpus: list[GpuFacts] = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < 3 or not cells[0]:
            continue
        name, memory, capability = cells[0], cells[1], cells[2]
        memory_bytes = int(float(memory) * 1024**2) if re.fullmatch(r"\d+(\.\d+)?", memory) else None
        gpus.append(
            GpuFacts(
                name=name,
                memory_bytes=memory_bytes,
                compute_capability=capability if re.fullmatch(r"\d+\.\d+", capability) else None,
                unified_memory=bool(_UNIFIED_MEMORY_GPU.search(name)),
            )
        )
    return tuple(gpus)


# ---------------------------------------------------------------------------
# The probe (every step optional)


class _Probe:
    """Asks tools and libraries, keeping every question, the tool's path and the raw answer."""

    def __init__(self) -> None:
        self.answers: list[ProbeAnswer] = []

    def run(self, argv: Sequence[str]) -> str | None:
        """Run a tool found on PATH by its absolute path; a missing tool is not asked."""
        path = shutil.which(argv[0])
        if path is None:
            return None
        path = os.path.abspath(path)
        asked = " ".join([argv[0], *argv[1:]])
        try:
            done = subprocess.run([path, *argv[1:]], capture_output=True, text=True,
                                  timeout=_PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            self.answers.append(ProbeAnswer.found_at(argv[0], path, asked, f"failed: {exc}"))
            return None
        answer = done.stdout.strip() if done.returncode == 0 else None
        self.answers.append(ProbeAnswer.found_at(argv[0], path, asked,
                                                 answer if answer is not None else f"exit {done.returncode}"))
        return answer

    def sysctl(self, name: str) -> str | None:
        return self.run(["sysctl", "-n", name])

    def nvml_gpus(self) -> tuple[GpuFacts, ...] | None:
        """GPUs through NVML (preferred over ``nvidia-smi``); None when NVML cannot answer."""
        found = _nvidia_gpus_nvml()
        if found is not None:
            rows = [gpu.to_dict() for gpu in found]
            self.answers.append(ProbeAnswer.found_at(
                "nvml", _loaded_library("libnvidia-ml"),
                "nvmlDeviceGetName/GetMemoryInfo/GetCudaComputeCapability", json.dumps(rows, sort_keys=True)))
        return found


def _loaded_library(stem: str) -> str | None:
    """The absolute path of a shared library this process has mapped (Linux), else None."""
    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        if path.startswith("/") and stem in os.path.basename(path):
            return path
    return None


def _total_memory_bytes(os_name: str, probe: _Probe) -> int | None:
    if os_name == "macos":
        value = probe.sysctl("hw.memsize")
        return int(value) if value and value.isdigit() else None
    try:
        return parse_meminfo_bytes(Path("/proc/meminfo").read_text(encoding="ascii"))
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def _nvidia_gpus_nvml() -> tuple[GpuFacts, ...] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            try:
                memory: int | None = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            except Exception:
                memory = None
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                capability: str | None = f"{major}.{minor}"
            except Exception:
                capability = None
            gpus.append(GpuFacts(name=name, memory_bytes=memory, compute_capability=capability,
                                 unified_memory=bool(_UNIFIED_MEMORY_GPU.search(name))))
        return tuple(gpus)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _nvidia_gpus(probe: _Probe) -> tuple[GpuFacts, ...]:
    via_nvml = probe.nvml_gpus()
    if via_nvml is not None:
        return via_nvml
    text = probe.run(["nvidia-smi", "--query-gpu=name,memory.total,compute_cap",
                      "--format=csv,noheader,nounits"])
    return parse_nvidia_smi_csv(text) if text else ()


def _macos_thermal_state() -> str | None:
    """Thermal pressure without root, via libSystem's notify_get_state."""
    try:
        import ctypes
        import ctypes.util

        lib = ctypes.CDLL(ctypes.util.find_library("System") or "/usr/lib/libSystem.dylib")
        token = ctypes.c_int(0)
        state = ctypes.c_uint64(0)
        if lib.notify_register_check(b"com.apple.system.thermalpressurelevel",
                                     ctypes.byref(token)) != 0:
            return None
        if lib.notify_get_state(token, ctypes.byref(state)) != 0:
            return None
        lib.notify_cancel(token)
    except (OSError, AttributeError):
        return None
    return {0: "nominal", 1: "moderate", 2: "heavy", 3: "trapping", 4: "sleeping"}.get(
        state.value, f"level-{state.value}"
    )


def _linux_thermal_state() -> str | None:
    zones = sorted(Path("/sys/class/thermal").glob("thermal_zone*/temp"))
    readings = []
    for zone in zones:
        try:
            readings.append(int(zone.read_text().strip()) / 1000)
        except (OSError, ValueError):
            continue
    return f"max {max(readings):.0f} C" if readings else None


def probe_host() -> HostFacts:
    """Probe this machine. Never raises for a missing tool: facts stay unknown.

    ``probed_with`` keeps every tool asked, its absolute path and its raw answer.
    """
    probe = _Probe()
    system = platform.system()
    os_name = {"Darwin": "macos", "Linux": "linux", "Windows": "windows"}.get(system,
                                                                               system.lower())
    if os_name == "macos":
        cpu_brand = probe.sysctl("machdep.cpu.brand_string")
        os_version = platform.mac_ver()[0] or None
        thermal = _macos_thermal_state()
        gpus: tuple[GpuFacts, ...] = ()
    else:
        cpu_brand = _linux_cpu_brand()
        os_version = _linux_os_version()
        thermal = _linux_thermal_state() if os_name == "linux" else None
        gpus = _nvidia_gpus(probe)
    memory = _total_memory_bytes(os_name, probe)
    return HostFacts(
        os=os_name,
        arch=platform.machine() or "unknown",
        os_version=os_version,
        kernel=platform.release() or None,
        cpu_brand=cpu_brand,
        cpu_count=os.cpu_count(),
        memory_bytes=memory,
        apple_chip=parse_apple_chip(cpu_brand),
        gpus=gpus,
        thermal_state=thermal,
        extra=_apple_device_info() if os_name == "macos" else {},
        source="probe",
        probed_with=tuple(probe.answers),
    )


def _linux_cpu_brand() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or None
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else (platform.processor() or None)


def _linux_os_version() -> str | None:
    try:
        release = platform.freedesktop_os_release()
    except OSError:
        return None
    return release.get("PRETTY_NAME") or release.get("VERSION_ID")


def _apple_device_info() -> dict[str, Any]:
    """MLX's view of the GPU when mlx is installed; absent otherwise."""
    try:
        import mlx.core as mx
    except ImportError:
        return {}
    try:
        info = mx.device_info()
    except Exception:
        return {}
    keep = ("architecture", "max_recommended_working_set_size", "memory_size")
    return {f"mlx_{key}": info[key] for key in keep if key in info}
