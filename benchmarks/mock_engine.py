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
from pathlib import Path

from pytest_specgate.engines.config import EngineConfig
from pytest_specgate.engines.mock import DEFAULT_DRAFT, boot

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--isolation", choices=("subprocess", "thread"), default="subprocess")
    args = parser.parse_args()
    config = EngineConfig(
        backend="mock",
        draft=DEFAULT_DRAFT,
        num_draft_tokens=4,
        options=(("isolation", args.isolation),),
    )
    with tempfile.TemporaryDirectory() as workdir, boot(config, Path(workdir)) as engine:
        print(
            f"mock engine ({args.isolation}) at {engine.base_url}, "
            f"{args.seconds:.1f}s per cell, {os.cpu_count()} cores"
        )
        best = 0.0
        for stream in (False, True):
            body = _body(engine.model_id, stream)
            for clients in (1, 8):
                done, wall, cpu = _measure(engine.port, body, clients, args.seconds, engine.pid)
                kind = "streamed" if stream else "non-streamed"
                capacity = f"{done / cpu:7.1f} req/s per server core" if cpu else "n/a (thread mode)"
                print(f"{kind:>13} x{clients} clients: {done / wall:7.1f} req/s | server capacity {capacity}")
                if not stream:
                    best = max(best, done / wall)
        print(f"non-streamed best / goal {_GOAL_RPS:.0f} req/s = {best / _GOAL_RPS:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
