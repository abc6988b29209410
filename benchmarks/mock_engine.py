"""Mock engine throughput with zero simulated latency: requests/s for 1 and 8 clients.

The mock carries every CI contract, so its own overhead must stay small next to
what the specs measure; the goal is >= 500 non-streamed requests/s on 2 cores.
The load comes from stdlib ``http.client`` keep-alive connections on threads,
the cheapest well-kept client, so the number reflects the server rather than
the client. In subprocess mode the server's own CPU time is read from /proc as
well, giving its capacity per core independently of machine noise.

Run: ``python benchmarks/mock_engine.py [--seconds 3] [--isolation subprocess|thread]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.mock import DEFAULT_DRAFT, boot

if TYPE_CHECKING:
    from benchmarks import Row

_GOAL_RPS = 500.0


def _body(model: str, stream: bool) -> bytes:
    return json.dumps(
        {
            "model": model,
            "messages": [{"role": "user", "content": "benchmark the mock engine"}],
            "temperature": 0,
            "max_tokens": 16,
            "stream": stream,
        }
    ).encode()


def _client_loop(port: int, body: bytes, until: float, counts: list[int]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    done = 0
    try:
        while time.perf_counter() < until:
            connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"mock engine answered HTTP {response.status}")
            done += 1
    finally:
        connection.close()
        counts.append(done)


def _cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of a process (Linux /proc), or None where unreadable."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(
    port: int, body: bytes, clients: int, seconds: float, pid: int | None
) -> tuple[int, float, float | None]:
    """(requests, wall seconds, server CPU seconds or None) for one cell."""
    _client_loop(port, body, time.perf_counter() + 0.2, [])
    counts: list[int] = []
    cpu_before = _cpu_seconds(pid)
    started = time.perf_counter()
    threads = [
        threading.Thread(target=_client_loop, args=(port, body, started + seconds, counts))
        for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    cpu_after = _cpu_seconds(pid)
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return sum(counts), wall, cpu


@dataclass(frozen=True)
class Cell:
    """One measured cell: requests/s from the clients, capacity from the server's CPU time."""

    stream: bool
    clients: int
    requests_per_s: float
    per_server_core: float | None

    def describe(self) -> str:
        kind = "streamed" if self.stream else "non-streamed"
        capacity = (
            f"{self.per_server_core:7.1f} req/s per server core"
            if self.per_server_core
            else "n/a (thread mode)"
        )
        rate = f"{self.requests_per_s:7.1f} req/s"
        return f"{kind:>13} x{self.clients} clients: {rate} | server capacity {capacity}"


def measure_cells(seconds: float, isolation: str, report: Callable[[str], None]) -> list[Cell]:
    """Boot one zero-latency mock and measure non-streamed and streamed at 1 and 8 clients."""
    config = EngineConfig(
        backend="mock",
        draft=DEFAULT_DRAFT,
        num_draft_tokens=4,
        options=(("isolation", isolation),),
    )
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory() as workdir, boot(config, Path(workdir)) as engine:
        report(
            f"mock engine ({isolation}) at {engine.base_url}, "
            f"{seconds:.1f}s per cell, {os.cpu_count()} cores"
        )
        for stream in (False, True):
            body = _body(engine.model_id, stream)
            for clients in (1, 8):
                done, wall, cpu = _measure(engine.port, body, clients, seconds, engine.pid)
                cell = Cell(stream, clients, done / wall, done / cpu if cpu else None)
                report(cell.describe())
                cells.append(cell)
    return cells


def best_non_streamed(cells: list[Cell]) -> float:
    return max(cell.requests_per_s for cell in cells if not cell.stream)


def run(quick: bool) -> Row:
    """The table row of ``python -m benchmarks`` (quick: 0.5 s per cell).

    Imported here, not at the top, so ``python benchmarks/mock_engine.py`` keeps working.
    """
    from benchmarks import Row

    cells = measure_cells(0.5 if quick else 3.0, "subprocess", lambda _line: None)
    best = best_non_streamed(cells)
    return Row(
        benchmark="mock engine throughput, non-streamed, best of 1 and 8 clients",
        measured=f"{best:.0f} req/s",
        goal=f">= {_GOAL_RPS:.0f} req/s",
        met=best >= _GOAL_RPS,
        detail="; ".join(" ".join(cell.describe().split()) for cell in cells),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--isolation", choices=("subprocess", "thread"), default="subprocess")
    args = parser.parse_args()
    best = best_non_streamed(measure_cells(args.seconds, args.isolation, print))
    print(f"non-streamed best / goal {_GOAL_RPS:.0f} req/s = {best / _GOAL_RPS:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
