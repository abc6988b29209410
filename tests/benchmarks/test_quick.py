"""CI's run of the benchmarks: ``python -m benchmarks --quick`` runs every benchmark and prints
its row. Goals are not checked here (small counts on a shared machine say nothing about
them); that every benchmark ran, measured something and printed it is."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from benchmarks import reliability
from benchmarks.__main__ import BENCHMARKS
from benchmarks.real_engines import QUICK_MODE_ROW

REPO_ROOT = Path(__file__).resolve().parents[2]
TABLE_ROW = re.compile(
    r"^\| (?P<benchmark>.+?) \| (?P<measured>.+?) \| (?P<goal>.+?) \| (?P<met>yes|NO|ERROR) \|$"
)
TRIALS = re.compile(r"(\d+) failures / (\d+) trials")


def _quick_run() -> subprocess.CompletedProcess[str]:
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith(("PYTEST_", "HYPOTHESIS_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_quick_mode_runs_every_benchmark_and_prints_its_row() -> None:
    completed = _quick_run()
    output = completed.stdout

    assert completed.returncode == 0, output[-3000:] + completed.stderr[-3000:]
    assert "quick mode" in output and "command: python -m benchmarks --quick" in output
    rows = [match for line in output.splitlines() if (match := TABLE_ROW.match(line))]
    assert len(rows) == len(BENCHMARKS), output[-3000:]
    assert [row["met"] for row in rows if row["met"] == "ERROR"] == []
    for row in rows:
        if row["benchmark"].startswith("real-"):
            assert row["measured"] == QUICK_MODE_ROW, row
            continue
        assert re.search(r"\d", row["measured"]), f"{row['benchmark']}: nothing measured: {row['measured']}"
        assert row["goal"].strip() not in ("", "-")
    for benchmark in BENCHMARKS:
        detail_line = rf"^- {re.escape(benchmark.name)} \(\d+s\): \S"
        assert re.search(detail_line, output, re.MULTILINE), benchmark.name
    trials = [row for row in rows if row["benchmark"].startswith("reliability:")]
    assert len(trials) == len([b for b in BENCHMARKS if b.run.__module__ == reliability.__name__])
    for row in trials:
        counted = TRIALS.fullmatch(row["measured"])
        assert counted is not None, row["measured"]
        failures, total = int(counted[1]), int(counted[2])
        assert total > 0 and failures <= total, row["measured"]
