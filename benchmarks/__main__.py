"""``python -m benchmarks [--quick] [--only NAME ...]``: run the benchmarks, print one table.

The exit code says whether every benchmark *ran* (0) or one raised (2); goals met or
missed are in the table, not in the exit code, so CI's quick run stays a smoke test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks import (
    Row,
    census,
    compare_error_rates,
    evidence_scale,
    large_inputs,
    measurement_accuracy,
    mock_engine,
    overhead,
    provenance,
    real_engines,
    redaction,
    reliability,
    sequential_stopping,
    startup,
    xdist_scaling,
)


@dataclass(frozen=True)
class Benchmark:
    name: str
    run: Callable[[bool], Row]


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("overhead", overhead.run_with_evidence),
    Benchmark("overhead-no-evidence", overhead.run_without_evidence),
    Benchmark("evidence-vs-junitxml", overhead.run_evidence_over_junitxml),
    Benchmark("evidence-scale", evidence_scale.run_scaling),
    Benchmark("evidence-scale-commands", evidence_scale.run_commands),
    Benchmark("evidence-scale-bytes", evidence_scale.run_record_size),
    Benchmark("evidence-scale-layout-bytes", evidence_scale.run_layout_bytes),
    Benchmark("evidence-scale-layout-gate", evidence_scale.run_layout_gate),
    Benchmark("large-inputs", large_inputs.run),
    Benchmark("startup-version", startup.run_version),
    Benchmark("startup-collect", startup.run_collect),
    Benchmark("census", census.run),
    Benchmark("provenance-check", provenance.run),
    Benchmark("accuracy", measurement_accuracy.run),
    Benchmark("sequential", sequential_stopping.run),
    Benchmark("compare", compare_error_rates.run),
    Benchmark("mock-throughput", mock_engine.run),
    Benchmark("xdist", xdist_scaling.run),
    Benchmark("teardown", reliability.run_teardown),
    Benchmark("tamper", reliability.run_tamper),
    Benchmark("redaction", reliability.run_redaction),
    Benchmark("redaction-speed", redaction.run),
    Benchmark("redaction-cpu-per-mb", redaction.run_speed),
    Benchmark("redaction-first-texts", redaction.run_first_texts),
    Benchmark("shared-folder", reliability.run_shared_folder),
    Benchmark("download-faults", reliability.run_download),
    Benchmark("real-mlx", real_engines.run_mlx),
    Benchmark("real-vllm", real_engines.run_vllm),
)
EXIT_ALL_RAN = 0
EXIT_SOME_FAILED_TO_RUN = 2


@dataclass(frozen=True)
class Result:
    name: str
    row: Row
    seconds: float
    ran: bool


def run_one(benchmark: Benchmark, quick: bool) -> Result:
    """A benchmark that raises becomes an ERROR row: one broken benchmark must not hide the rest."""
    started = time.perf_counter()
    try:
        row = benchmark.run(quick)
        ran = True
    except Exception as error:
        traceback.print_exc()
        row = Row(benchmark.name, f"ERROR: {type(error).__name__}", "-", False, str(error).splitlines()[0])
        ran = False
    return Result(benchmark.name, row, time.perf_counter() - started, ran)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(results: Sequence[Result]) -> str:
    lines = ["| benchmark | measured | goal | met? |", "|---|---|---|---|"]
    for result in results:
        row = result.row
        met = "yes" if row.met else ("ERROR" if not result.ran else "NO")
        lines.append(f"| {_cell(row.benchmark)} | {_cell(row.measured)} | {_cell(row.goal)} | {met} |")
    return "\n".join(lines)


def details(results: Sequence[Result]) -> str:
    return "\n".join(
        f"- {result.name} ({result.seconds:.0f}s): {result.row.detail}" for result in results
    )


def header(argv: Sequence[str], quick: bool) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    command = "python -m benchmarks " + shlex.join(argv)
    return (
        f"pytest-specgate benchmarks ({'quick' if quick else 'full'} mode), {now}\n"
        f"command: {command.strip()}\n"
        f"host: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: proves each benchmark runs")
    parser.add_argument(
        "--only",
        action="append",
        choices=[benchmark.name for benchmark in BENCHMARKS],
        metavar="NAME",
        help="run only this benchmark (repeatable): " + ", ".join(b.name for b in BENCHMARKS),
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(arguments)
    selected = [b for b in BENCHMARKS if args.only is None or b.name in args.only]
    print(header(arguments, args.quick), flush=True)
    results: list[Result] = []
    for benchmark in selected:
        print(f"running {benchmark.name} ...", flush=True)
        result = run_one(benchmark, args.quick)
        print(f"  {result.name}: {result.row.measured} (goal {result.row.goal}), {result.seconds:.0f}s",
              flush=True)
        results.append(result)
    print()
    print(table(results))
    print()
    print(details(results), flush=True)
    return EXIT_ALL_RAN if all(result.ran for result in results) else EXIT_SOME_FAILED_TO_RUN


if __name__ == "__main__":
    raise SystemExit(main())
