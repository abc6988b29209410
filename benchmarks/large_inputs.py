"""Peak memory of every reader handed a 200 MB JSON file (measured, not asserted).

Before the safe reader, a 200 MB manifest, AC record or host-facts file took ``render``, ``gate``,
``merge``, ``waivers`` and ``hosts`` to 3.7-5.7 GB and a MemoryError: the nesting check ran a
backtracking regular expression over the whole text. Each command now runs in its own process,
and ``os.wait4`` reports its maximum resident set size; beside them, the same reader on a
host-facts file just under the 32 MiB limit, which it parses, and a small file as the baseline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import REPO_ROOT, Row, quiet_environment
from pytest_specgate.contracts.safe_read import MAX_DOCUMENT_BYTES

LARGE_BYTES = 200 * 1024 * 1024
HOST_FACTS = REPO_ROOT / "fixtures" / "hosts" / "linux-x86_64-24gb-nogpu.json"
LINE_SHOWN = 160
"""How much of each command's error line the row shows."""
_SPECGATE = ["-c", "from pytest_specgate.cli import main; raise SystemExit(main())"]


def write_large_json(path: Path, size: int) -> None:
    """A JSON object of ``size`` bytes, most of it one list of small numbers (the costliest to parse)."""
    head, tail = b'{"os": "linux", "arch": "x86_64", "extra": [', b"0]}"
    item = b"1234567,"
    with path.open("wb") as handle:
        handle.write(head)
        body = size - len(head) - len(tail)
        chunk = item * (1024 * 1024 // len(item))
        while body >= len(chunk):
            handle.write(chunk)
            body -= len(chunk)
        handle.write(item * (body // len(item)) + b" " * (body % len(item)))
        handle.write(tail)


def peak_rss(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    """Max RSS in MiB, exit code and last stderr line of ``python argv``."""
    process = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = error.strip().splitlines()
    return usage.ru_maxrss / 1024, process.returncode, lines[-1][:LINE_SHOWN] if lines else ""


def input_size(quick: bool) -> int:
    """Quick mode (CI) proves the benchmark runs: a twentieth, which is under the limit and parsed."""
    return LARGE_BYTES // 20 if quick else LARGE_BYTES


def _measure(quick: bool) -> list[tuple[str, float, int, str]]:
    size = input_size(quick)
    with tempfile.TemporaryDirectory(prefix="specgate-bench-large-") as tmp:
        work = Path(tmp)
        large = work / "large.json"
        write_large_json(large, size)
        near = work / "near-limit.json"
        write_large_json(near, MAX_DOCUMENT_BYTES - 1024)
        bundle = work / "bundle"
        bundle.mkdir()
        os.link(large, bundle / "manifest.json")
        event = work / "event.json"
        os.link(large, event)
        shutil.copy(HOST_FACTS, work / "small.json")
        env = quiet_environment({"PYTHONPATH": str(REPO_ROOT)})
        runs = {
            "hosts --host-facts (small file, baseline)": [*_SPECGATE, "hosts", "--host-facts", "small.json"],
            f"hosts --host-facts ({size >> 20} MB)": [*_SPECGATE, "hosts", "--host-facts", str(large)],
            f"render ({size >> 20} MB manifest)": [*_SPECGATE, "render", str(bundle)],
            f"waivers ({size >> 20} MB manifest)": [*_SPECGATE, "waivers", str(bundle)],
            f"merge ({size >> 20} MB manifest)": [*_SPECGATE, "merge", str(bundle), "--out", str(work / "m")],
            f"gate --pr-body-from-event ({size >> 20} MB event)": [
                *_SPECGATE, "gate", "--pr-body-from-event", "--evidence", str(bundle), "--commit", "0" * 40
            ],
            f"hosts --host-facts ({MAX_DOCUMENT_BYTES >> 20} MiB less 1 KiB, parsed)": [
                *_SPECGATE, "hosts", "--host-facts", str(near)
            ],
        }
        return [
            (name, *peak_rss(argv, work, {**env, "GITHUB_EVENT_PATH": str(event)}))
            for name, argv in runs.items()
        ]


def run(quick: bool) -> Row:
    measured = _measure(quick)
    worst = max(rss for name, rss, _, _ in measured if "baseline" not in name and "parsed" not in name)
    detail = "; ".join(f"{name}: {rss:.0f} MiB, exit {code} ({line})" for name, rss, code, line in measured)
    return Row(
        f"reader memory: every command handed a {input_size(quick) >> 20} MB JSON file (max RSS of each)",
        f"{worst:.0f} MiB at most",
        "measured, not asserted (was 3.7-5.7 GB)",
        True,
        detail,
    )


if __name__ == "__main__":
    print(json.dumps([list(item) for item in _measure(quick="--quick" in sys.argv)], indent=1))
