"""How evidence scales from 1,000 to 10,000 ACs, and what the judge's commands cost on the larger bundle.

The overhead benchmark's suite (half the tests with their own AC and one measurement) is
generated at two sizes, 2,000 tests (1,000 ACs) and 20,000 tests (10,000 ACs), in a git repository
so the records name a commit. The two runs writing evidence take turns (A B A B), and the
ratio of their medians is the row: linear growth is 10x, the goal at most 10.5x. On the
10,000-AC bundle of the last cycle, ``specgate gate`` (every AC's block pasted, every AC
required), ``render``, ``merge`` and ``compare`` each run in their own process, the same number
of times, interleaved. ``compare`` reads two runs, as a release manager does: the bundle of an
earlier run of the same suite against the last one (not a bundle against itself, which a
command may answer from the digests alone). The bytes of AC-specific data per AC (the lines of
``records.jsonl``) are counted against 1 KB.
"""

from __future__ import annotations

import functools
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import CycledTimes, Row, alternate, run_command, slowdown_row
from benchmarks.overhead import GeneratedSuite, generate_suite

SMALL_TESTS = 2_000
LARGE_TESTS = 20_000
GOAL_SCALING = 10.5
GOAL_COMMAND_S = 2.0
GOAL_BYTES_PER_AC = 1024
_SPECGATE = [sys.executable, "-c", "from pytest_specgate.cli import main; raise SystemExit(main())"]


def _git(root: Path, *arguments: str) -> str:
    completed = subprocess.run(["git", *arguments], cwd=root, capture_output=True, text=True, check=True)
    return completed.stdout.strip()


def committed_suite(parent: Path, tests: int) -> tuple[GeneratedSuite, str]:
    """The generated suite in a fresh git repository, committed; returns it and the commit."""
    parent.mkdir(parents=True)
    suite = generate_suite(parent, tests)
    _git(suite.root, "init", "-q")
    (suite.root / ".gitignore").write_text("__pycache__/\n")
    _git(suite.root, "add", ".")
    _git(suite.root, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         "commit", "-q", "-m", "suite")
    return suite, _git(suite.root, "rev-parse", "HEAD")


def _evidence_run(suite: GeneratedSuite) -> float:
    shutil.rmtree(suite.evidence_root, ignore_errors=True)
    return run_command(suite.plugin_argv("tests", f"--specgate-evidence={suite.evidence_root}"), suite.root)


def the_bundle(suite: GeneratedSuite) -> Path:
    [bundle] = [path.parent for path in suite.evidence_root.glob("*/manifest.json")]
    return bundle


def command_arms(bundle: Path, earlier: Path, commit: str, work: Path) -> dict[str, list[str]]:
    """The judge's commands on one bundle (``compare``: an earlier run's against it); ``merge``
    writes a new folder each time."""
    body = work / "PR.md"
    body.write_text("## Summary\n\n" + (bundle / "evidence.md").read_text())
    return {
        "gate": [*_SPECGATE, "gate", f"--pr-body={body}", f"--evidence={bundle}", f"--commit={commit}"],
        "render": [*_SPECGATE, "render", str(bundle), f"--out={work / 'rendered.md'}"],
        "merge": [*_SPECGATE, "merge", str(bundle), f"--out={work / 'merged'}"],
        "compare": [*_SPECGATE, "compare", str(earlier), str(bundle)],
    }


def time_commands(bundle: Path, earlier: Path, commit: str, work: Path, cycles: int) -> CycledTimes:
    arms = command_arms(bundle, earlier, commit, work)

    def run(name: str) -> float:
        shutil.rmtree(work / "merged", ignore_errors=True)
        # The gate rejects what does not qualify (a simulated host): exit 1 is a verdict, not a failure.
        return run_command(arms[name], work, ok_codes=(0, 1))

    return alternate({name: functools.partial(run, name) for name in arms}, cycles)


@functools.cache
def _measured(quick: bool) -> tuple[CycledTimes, CycledTimes, int, int]:
    small_tests, large_tests = (SMALL_TESTS // 20, LARGE_TESTS // 20) if quick else (SMALL_TESTS, LARGE_TESTS)
    cycles = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="specgate-bench-scale-") as tmp:
        small, _ = committed_suite(Path(tmp) / "small", small_tests)
        large, commit = committed_suite(Path(tmp) / "large", large_tests)
        earlier = Path(tmp) / "earlier"
        _evidence_run(small)
        _evidence_run(large)

        def large_run_keeping_the_one_before() -> float:
            shutil.rmtree(earlier, ignore_errors=True)
            shutil.move(the_bundle(large), earlier)
            return _evidence_run(large)

        arms = {"1x": lambda: _evidence_run(small), "10x": large_run_keeping_the_one_before}
        runs = alternate(arms, cycles)
        bundle = the_bundle(large)
        line_bytes = (bundle / "records.jsonl").stat().st_size
        work = Path(tmp) / "work"
        work.mkdir()
        commands = time_commands(bundle, earlier, commit, work, cycles)
    return runs, commands, line_bytes, large.ac_count


def run_scaling(quick: bool) -> Row:
    runs, _, _, acs = _measured(quick)
    return slowdown_row(
        f"evidence scale: {acs} ACs / a tenth of them (pytest run writing evidence, 2 tests per AC, "
        "one measurement each)",
        runs.median_ratio("10x", "1x"),
        GOAL_SCALING,
        runs.describe("10x", "1x"),
    )


def run_commands(quick: bool) -> Row:
    _, commands, _, acs = _measured(quick)
    medians = {name: statistics.median(times) for name, times in commands.times.items()}
    slowest = max(medians.values())
    shown = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in medians.items())
    return Row(
        f"judge commands on the {acs}-AC bundle (gate with every block, render, merge, compare), medians",
        f"{slowest:.2f}s",
        f"< {GOAL_COMMAND_S:.0f}s each",
        slowest < GOAL_COMMAND_S,
        f"{len(commands.times['gate'])} interleaved cycles; {shown}",
    )


def run_record_size(quick: bool) -> Row:
    _, _, line_bytes, acs = _measured(quick)
    per_ac = line_bytes / acs
    return Row(
        f"AC-specific bytes per one-measurement AC (records.jsonl of the {acs}-AC bundle / ACs)",
        f"{per_ac:.0f} B",
        f"<= {GOAL_BYTES_PER_AC} B",
        per_ac <= GOAL_BYTES_PER_AC,
        f"{line_bytes} bytes for {acs} ACs",
    )
