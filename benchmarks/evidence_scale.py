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

The ``evidence.md`` layouts side by side (``evidence-scale-layout-*``): the suite at both sizes
writes one bundle each (layout 2, the run's host line and reasons once); a copy of each has its
``evidence.md`` rendered in layout 1 (every block repeating them, as main wrote until
2026-12-04), its manifest entry with it. The rows are the bytes of ``evidence.md`` at 1,000 ACs,
layout 2 over layout 1, and ``specgate gate`` on the 10,000-AC PR body (every block pasted, the
same gate on both), the two bundles taking turns; both must print the same verdict.
"""

from __future__ import annotations

import functools
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmarks import CycledTimes, Row, alternate, quiet_environment, run_command, slowdown_row
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


LAYOUTS = {1: "layout 1", 2: "layout 2"}


def with_layout_1_markdown(bundle: Path, into: Path) -> Path:
    """A copy of ``bundle`` whose ``evidence.md`` is its records rendered in layout 1, with its
    manifest entry (the bundle digest leaves ``evidence.md`` out, so nothing else changes)."""
    import json

    from pytest_specgate.evidence import judge, load_bundle, read_records, render_markdown
    from pytest_specgate.evidence._bundle import MANIFEST_NAME, MARKDOWN_NAME, file_entry
    from pytest_specgate.evidence._jsonio import pretty_json
    from pytest_specgate.evidence._markdown import LAYOUT_PER_BLOCK

    copy = into / bundle.name
    shutil.copytree(bundle, copy)
    loaded = load_bundle(copy)
    records = read_records(loaded)
    judged = []
    for ac_id in sorted(records):
        entry = loaded.record_entry(ac_id)
        if entry is None:
            raise RuntimeError(f"{copy}: the manifest lists no record of {ac_id}")
        judged.append((records[ac_id], judge(records[ac_id]), entry.sha256))
    markdown = render_markdown(judged, loaded.digest, layout=LAYOUT_PER_BLOCK).encode()
    (copy / MARKDOWN_NAME).write_bytes(markdown)
    manifest = json.loads((copy / MANIFEST_NAME).read_text())
    manifest["files"][MARKDOWN_NAME] = file_entry(markdown).to_dict()
    (copy / MANIFEST_NAME).write_text(pretty_json(manifest))
    return copy


@dataclass(frozen=True)
class LayoutFigures:
    """``evidence.md`` bytes per layout at both sizes, and the gate's times on the larger one."""

    small_acs: int
    large_acs: int
    small_bytes: Mapping[str, int]
    large_bytes: Mapping[str, int]
    gate: CycledTimes


def _gate_arms(bundles: Mapping[str, Path], commit: str, work: Path) -> dict[str, list[str]]:
    """``specgate gate`` on each bundle's whole ``evidence.md`` pasted, as a PR body."""
    arms = {}
    for name, bundle in bundles.items():
        body = work / f"PR-{name.replace(' ', '-')}.md"
        body.write_text("## Summary\n\n" + (bundle / "evidence.md").read_text())
        arms[name] = [*_SPECGATE, "gate", f"--pr-body={body}", f"--evidence={bundle}", f"--commit={commit}"]
    return arms


def _same_verdict(arms: Mapping[str, list[str]], work: Path) -> None:
    """Both layouts verify and the gate says the same of them (a layout it refused would print
    ``evidence.md is not what its records render``, and be timed refusing)."""
    printed = {
        name: subprocess.run(argv, cwd=work, env=quiet_environment(), capture_output=True, text=True,
                             check=False)
        for name, argv in arms.items()
    }
    shown = {(completed.returncode, completed.stdout) for completed in printed.values()}
    if len(shown) != 1 or "not what its records render" in next(iter(shown))[1]:
        raise RuntimeError(f"the gate judged the layouts differently: {printed}")


@functools.cache
def _layouts(quick: bool) -> LayoutFigures:
    small_tests, large_tests = (SMALL_TESTS // 20, LARGE_TESTS // 20) if quick else (SMALL_TESTS, LARGE_TESTS)
    cycles = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="specgate-bench-layout-") as tmp:
        sizes: dict[str, dict[str, int]] = {}
        bundles: dict[str, Path] = {}
        commit = ""
        for size, tests in (("small", small_tests), ("large", large_tests)):
            suite, commit = committed_suite(Path(tmp) / size, tests)
            _evidence_run(suite)
            bundle = the_bundle(suite)
            old = with_layout_1_markdown(bundle, Path(tmp) / f"{size}-layout-1")
            sizes[size] = {LAYOUTS[1]: (old / "evidence.md").stat().st_size,
                           LAYOUTS[2]: (bundle / "evidence.md").stat().st_size}
            bundles = {LAYOUTS[1]: old, LAYOUTS[2]: bundle}
        work = Path(tmp) / "work"
        work.mkdir()
        arms = _gate_arms(bundles, commit, work)
        _same_verdict(arms, work)
        # The bundles do not qualify (a simulated host): exit 1 is the gate's verdict.
        gate = alternate({name: functools.partial(run_command, argv, work, ok_codes=(1,))
                          for name, argv in arms.items()}, cycles)
    return LayoutFigures(small_tests // 2, large_tests // 2, sizes["small"], sizes["large"], gate)


def run_layout_bytes(quick: bool) -> Row:
    figures = _layouts(quick)
    old, new = figures.small_bytes[LAYOUTS[1]], figures.small_bytes[LAYOUTS[2]]
    large_old, large_new = figures.large_bytes[LAYOUTS[1]], figures.large_bytes[LAYOUTS[2]]
    return slowdown_row(
        f"evidence.md bytes at {figures.small_acs} ACs, layout 2 (run's host and reasons once) / layout 1",
        new / old,
        1.0,
        f"{new:,} / {old:,} B ({new / figures.small_acs:.0f} / {old / figures.small_acs:.0f} B per AC); "
        f"at {figures.large_acs} ACs {large_new:,} / {large_old:,} B",
    )


def run_layout_gate(quick: bool) -> Row:
    figures = _layouts(quick)
    return slowdown_row(
        f"specgate gate on the {figures.large_acs}-AC PR body (every block), layout 2 / layout 1 bundle",
        figures.gate.median_ratio(LAYOUTS[2], LAYOUTS[1]),
        1.0,
        f"PR bodies {figures.large_bytes[LAYOUTS[2]]:,} / {figures.large_bytes[LAYOUTS[1]]:,} B; "
        + figures.gate.describe(LAYOUTS[2], LAYOUTS[1]),
    )
