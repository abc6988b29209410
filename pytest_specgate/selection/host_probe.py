"""The host probe: asks this machine what it is (CPU, memory, GPUs, OS) and records how.

Every probe step is optional and never guesses: a fact that cannot be read is ``None``.
Each tool the probe asks is recorded with its absolute path, whether that path is the
system's own (``in_system_location``) and its raw answer, so the evidence can say that a
fact came from a tool a runner could have planted. A facts file
(``--specgate-host-facts``) replaces the probe entirely (``load_host_facts``); that is how
CI simulates an M4 or a GB10, and the facts then say they are simulated.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.host import (
    NVIDIA_DRIVER_DIRS,
    SYSTEM_TOOL_DIRS,
    GpuFacts,
    HostFacts,
    HostFactsError,
    ProbeAnswer,
    host_facts_from_dict,
)
from pytest_specgate.contracts.validation import read_json_file

__all__ = [
    "answer_found_at",
    "in_system_location",
    "load_host_facts",
    "parse_apple_chip",
    "parse_meminfo_bytes",
    "parse_nvidia_smi_csv",
    "probe_host",
    "under_system_prefix",
]

_PROBE_TIMEOUT_S: Final = 5.0
# GPUs whose memory is the host's unified memory: NVML reports it as
# NOT_SUPPORTED, so memory guards must fall back to the host figure.
_UNIFIED_MEMORY_GPU = re.compile(r"\bGB10\b|\bOrin\b|\bThor\b", re.IGNORECASE)
_APPLE_CHIP = re.compile(r"\bApple (M\d+)(?: (Pro|Max|Ultra))?\b")
_SYSTEM_REAL_PREFIXES: Final = (*SYSTEM_TOOL_DIRS, *NVIDIA_DRIVER_DIRS[1:], "/usr/lib", "/usr/lib64",
                                "/usr/libexec", "/lib", "/lib64")
"""Where such a tool (or the NVML library) may really live once symlinks are resolved
(``/usr/bin/nvidia-smi`` -> ``/etc/alternatives`` -> ``/usr/lib/nvidia/...``); the driver's
mounted ``bin`` is a tool folder already."""


def under_system_prefix(path: str, real: str) -> bool:
    """Whether a tool found at absolute ``path``, whose symlinks resolve to ``real``, both lie
    in folders of the system's own (pure: the paths only, no file is asked)."""
    return all(any(candidate.startswith(prefix + "/") for prefix in _SYSTEM_REAL_PREFIXES)
               for candidate in (os.path.normpath(path), os.path.normpath(real)))


def in_system_location(path: str | None) -> bool:
    """Whether a tool (or library) found at ``path`` is the system's own: found and really
    living under a system prefix, owned by root and writable by nobody else.

    Unknown (``None``, unreadable, not POSIX) is not a system location.
    """
    if path is None or os.name != "posix" or not os.path.isabs(path):
        return False
    real = os.path.realpath(path)
    if not under_system_prefix(path, real):
        return False
    try:
        info = os.stat(real)
    except OSError:
        return False
    return info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def answer_found_at(tool: str, path: str | None, asked: str, answer: str | None) -> ProbeAnswer:
    """The probe's record of asking ``tool`` (found at ``path``), judged where it was found."""
    return ProbeAnswer(tool, path, asked, answer, in_system_location(path))


# ---------------------------------------------------------------------------
# Parsing a facts document (file or hook-edited dict)


def load_host_facts(path: Path) -> HostFacts:
    """Read a ``--specgate-host-facts`` file; errors name the file and field."""
    try:
        _, data = read_json_file(path)
    except SpecgateInputError as exc:
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
            self.answers.append(answer_found_at(argv[0], path, asked, f"failed: {exc}"))
            return None
        answer = done.stdout.strip() if done.returncode == 0 else None
        self.answers.append(answer_found_at(argv[0], path, asked,
                                                 answer if answer is not None else f"exit {done.returncode}"))
        return answer

    def sysctl(self, name: str) -> str | None:
        return self.run(["sysctl", "-n", name])

    def nvml_gpus(self) -> tuple[GpuFacts, ...] | None:
        """GPUs through NVML (preferred over ``nvidia-smi``); None when NVML cannot answer."""
        found = _nvidia_gpus_nvml()
        if found is not None:
            rows = [gpu.to_dict() for gpu in found]
            self.answers.append(answer_found_at(
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


@contextlib.contextmanager
def nvml_session() -> Iterator[Any]:
    """pynvml, initialised for the block and shut down after it; None without pynvml or a driver."""
    try:
        import pynvml
    except ImportError:
        yield None
        return
    try:
        pynvml.nvmlInit()
    except Exception:  # pynvml.NVMLError (no driver, library not found) and whatever a broken install raises
        yield None
        return
    try:
        yield pynvml
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _nvidia_gpus_nvml() -> tuple[GpuFacts, ...] | None:
    with nvml_session() as pynvml:
        return None if pynvml is None else _nvml_gpus(pynvml)


def _nvml_gpus(pynvml: Any) -> tuple[GpuFacts, ...] | None:
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            try:
                memory: int | None = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            except Exception:  # NVMLError_NotSupported on unified-memory GPUs (GB10): unknown, not 0
                memory = None
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                capability: str | None = f"{major}.{minor}"
            except Exception:  # an old driver without the query: unknown
                capability = None
            gpus.append(GpuFacts(name=name, memory_bytes=memory, compute_capability=capability,
                                 unified_memory=bool(_UNIFIED_MEMORY_GPU.search(name))))
        return tuple(gpus)
    except Exception:  # NVML failing part way: no NVML answer, so nvidia-smi is asked instead
        return None


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
    except Exception:  # mlx without a Metal device (the CPU build) raises RuntimeError, older ones others
        return {}
    keep = ("architecture", "max_recommended_working_set_size", "memory_size")
    return {f"mlx_{key}": info[key] for key in keep if key in info}
