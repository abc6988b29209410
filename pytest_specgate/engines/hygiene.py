"""Did the host get its memory back when an engine went down?

An engine that leaves memory behind (a leaked worker, a driver that keeps a model's pages, a
Metal heap that is never freed) makes every figure measured after it run on a smaller machine,
and on an 8 GB host it is the step before an OOM. So every engine's teardown compares the free
memory read just before its boot with the free memory read just after its close: host memory
(``MemAvailable`` from ``/proc/meminfo``, else psutil's ``available``, which is unified memory on
macOS) and GPU memory through NVML where pynvml is installed.

A figure that cannot be read is None, and a comparison with an unknown side is None (unknown):
never "returned". Only free memory is compared, so one reading works the same on every platform.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_specgate.selection.host_probe import nvml_session

__all__ = [
    "GPU_TOLERANCE_BYTES",
    "HOST_TOLERANCE_BYTES",
    "MemoryLedger",
    "MemoryReading",
    "MemoryReturn",
    "memory_returned",
    "parse_mem_available",
    "read_memory",
]

# Free memory on a shared host moves by hundreds of MiB on its own; a model that was not given
# back is larger than that. One GiB on the host, 512 MiB on a GPU (nothing else should use it).
HOST_TOLERANCE_BYTES = 1 << 30
GPU_TOLERANCE_BYTES = 512 << 20
_MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class MemoryReading:
    """Free memory at one moment: the host's available bytes and the GPUs' free bytes (summed)."""

    host_available_bytes: int | None
    gpu_free_bytes: int | None


MemoryReader = Callable[[], MemoryReading]


def memory_returned(before: int | None, after: int | None, tolerance: int) -> bool | None:
    """True when free memory after teardown is back within ``tolerance`` of its level before
    boot, False when it is not, None when either reading is unknown (never taken for clean)."""
    if before is None or after is None:
        return None
    return after >= before - tolerance


def parse_mem_available(text: str) -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (None when the line is missing)."""
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == "MemAvailable":
            fields = rest.split()
            if fields and fields[0].isdigit():
                return int(fields[0]) * 1024
    return None


def _host_available() -> int | None:
    try:
        return parse_mem_available(_MEMINFO.read_text(encoding="ascii"))
    except OSError:
        pass
    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return None
    available: int = psutil.virtual_memory().available
    return available


def _gpu_free() -> int | None:
    """Free bytes over every NVIDIA GPU through NVML; None without pynvml, a driver or a GPU."""
    with nvml_session() as pynvml:
        if pynvml is None:
            return None
        try:
            count = pynvml.nvmlDeviceGetCount()
            return sum(int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).free)
                       for index in range(count)) if count else None
        except Exception:  # pynvml.NVMLError (NOT_SUPPORTED on GB10) or a driver fault: unknown, not 0
            return None


def read_memory() -> MemoryReading:
    """The host's free memory now (the default reader of :class:`MemoryLedger`)."""
    return MemoryReading(_host_available(), _gpu_free())


@dataclass(frozen=True)
class MemoryReturn:
    """One engine's memory, before its boot and after its close (``after`` None: still up)."""

    before: MemoryReading
    after: MemoryReading | None
    host_tolerance_bytes: int = HOST_TOLERANCE_BYTES
    gpu_tolerance_bytes: int = GPU_TOLERANCE_BYTES

    def _side(self, kind: str) -> dict[str, Any]:
        before = getattr(self.before, kind)
        after = None if self.after is None else getattr(self.after, kind)
        tolerance = self.host_tolerance_bytes if kind == "host_available_bytes" else self.gpu_tolerance_bytes
        return {"before_bytes": before, "after_bytes": after, "tolerance_bytes": tolerance,
                "returned": memory_returned(before, after, tolerance)}

    @property
    def returned(self) -> bool | None:
        """False when the host or a GPU kept memory; True only when the host was read on both
        sides and gave it back (a GPU that cannot be read is no GPU to give back); else None."""
        host = self._side("host_available_bytes")["returned"]
        gpu = self._side("gpu_free_bytes")
        if host is False or gpu["returned"] is False:
            return False
        if host is None or (gpu["before_bytes"] is not None and gpu["returned"] is None):
            return None
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"torn_down": self.after is not None, "returned": self.returned,
                "host": self._side("host_available_bytes"), "gpu": self._side("gpu_free_bytes")}


class MemoryLedger:
    """Free memory before each engine's boot and after its close, for every engine of a session.

    The pool and ``boot_engine`` both boot and close through it, so every backend is checked in
    one place. It holds the engines it has seen, so no id is reused while it looks them up.
    """

    def __init__(self, reader: MemoryReader | None = None) -> None:
        """``reader`` None: :func:`read_memory`, looked up at each reading."""
        self._given = reader
        self._entries: dict[int, tuple[object, MemoryReturn]] = {}

    def _read(self) -> MemoryReading:
        return (self._given or read_memory)()

    def before_boot(self) -> MemoryReading:
        return self._read()

    def booted(self, engine: object, before: MemoryReading) -> None:
        self._entries[id(engine)] = (engine, MemoryReturn(before, None))

    def closed(self, engine: object) -> None:
        entry = self._entries.get(id(engine))
        if entry is not None:
            self._entries[id(engine)] = (engine, MemoryReturn(entry[1].before, self._read()))

    def of(self, engine: object) -> MemoryReturn | None:
        entry = self._entries.get(id(engine))
        return None if entry is None else entry[1]

    def entry(self, engine: object, *, on_this_host: bool) -> dict[str, Any] | None:
        """The record's ``memory_returned`` for ``engine``: None for one it did not boot or one
        on another host (this host's memory says nothing about that one's)."""
        memory = self.of(engine)
        return None if memory is None or not on_this_host else memory.to_dict()
