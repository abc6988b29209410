"""The terminal: the report header (host and run mode), the terminal summary (signature,
evidence no bundle holds, diagnostic runs) and progress lines of long steps, written
through pytest's terminal reporter.

``write_line`` starts a fresh line, so pytest's own progress line (``test_x.py ..  [ 40%]``)
is never cut in the middle; when a step ends, the test's file prefix is written again, so
pytest's next result letter and its percentage land on a file line as usual. Lines get
past output capture, and nothing is written under ``-q`` or on an xdist worker.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_specgate.plugin.bundle import session_redactor
from pytest_specgate.plugin.host_facts import session_host_facts, session_host_provenance
from pytest_specgate.plugin.options import input_errors_stop_the_run
from pytest_specgate.plugin.pytest_adapter import output_uncaptured, resume_file_line
from pytest_specgate.plugin.stash import SETTINGS_KEY, SIGNED_KEY

if TYPE_CHECKING:
    from pytest_specgate.contracts.progress import ProgressFactory, StepProgress

__all__ = ["LINE_INTERVAL_S", "TerminalLines", "announce_masks", "progress_factory"]

LINE_INTERVAL_S = 5.0
"""At most one progress line per step this often (a 5-minute window writes about 60)."""


class TerminalLines:
    """A text sink writing whole lines to pytest's terminal, past output capture.

    ``path`` is the running test's file: :meth:`resume` writes its prefix again after
    the lines (without ``-v``, where pytest writes result letters after that prefix).
    """

    def __init__(self, config: pytest.Config, path: Path | None = None) -> None:
        self._reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._config = config
        self._path = path
        self._wrote = False

    def write(self, text: str, /) -> object:
        with output_uncaptured(self._config):
            if self._reporter is not None:
                self._reporter.write_line(text.rstrip("\n"))
            elif sys.__stderr__ is not None:
                sys.__stderr__.write(text)
        self._wrote = True
        return None

    def resume(self) -> None:
        """After a step's last line: the file prefix again, where pytest continues its line."""
        reporter = self._reporter
        if not self._wrote or reporter is None or self._path is None or reporter.verbosity > 0:
            return
        self._wrote = False
        with output_uncaptured(self._config):
            reporter.write(f"{os.path.relpath(self._path, reporter.startpath)} ", flush=True)
        resume_file_line(reporter, self._path)

    def flush(self) -> object:
        with output_uncaptured(self._config):
            if self._reporter is not None:
                self._reporter.flush()
            elif sys.__stderr__ is not None:
                sys.__stderr__.flush()
        return None


class _TerminalStep:
    """A step's reporter whose closing line hands the terminal line back to pytest."""

    def __init__(self, reporter: StepProgress, lines: TerminalLines) -> None:
        self._reporter = reporter
        self._lines = lines

    def update(self, requests_done: int, current_speedup: float | None) -> None:
        self._reporter.update(requests_done, current_speedup)

    def finish(self, requests_done: int, current_speedup: float | None) -> None:
        self._reporter.finish(requests_done, current_speedup)
        self._lines.resume()

    def tick(self, *, done: bool = False, failed: bool = False) -> None:
        self._reporter.tick(done=done, failed=failed)
        if done:
            self._lines.resume()

    def transferred(self, done_bytes: int, total_bytes: int | None, *, done: bool = False) -> None:
        self._reporter.transferred(done_bytes, total_bytes, done=done)
        if done:
            self._lines.resume()


def progress_factory(item: pytest.Item) -> ProgressFactory | None:
    """Reporters for a test's long steps; None under -q, without a terminal, on an xdist worker."""
    config = item.config
    if hasattr(config, "workerinput") or config.get_verbosity() < 0:
        return None
    if config.pluginmanager.get_plugin("terminalreporter") is None:
        return None

    def factory(label: str, planned_s: float | None) -> StepProgress:
        from pytest_specgate.measure.progress import ProgressReporter

        lines = TerminalLines(config, item.path)
        reporter = ProgressReporter(lines, label=f"specgate: {label}", planned_s=planned_s,
                                    min_interval_s=LINE_INTERVAL_S)
        return _TerminalStep(reporter, lines)

    return factory


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Every text pytest's terminal writer prints passes the session redactor's credential rules
    (paths and names stay readable): failures, ``-l`` locals, skip reasons, test ids, specgate's
    own lines and engine errors (an endpoint URL with a password)."""
    if hasattr(config, "workerinput") or config.pluginmanager.get_plugin("terminalreporter") is None:
        return
    from pytest_specgate.evidence import redact_writes

    redact_writes(config.get_terminal_writer(), lambda: session_redactor(config).secrets_only().text)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under GitHub Actions, register the values this run knows are secret with the runner
    (``::add-mask::``), so the CI log hides them wherever they appear."""
    config = session.config
    if os.environ.get("GITHUB_ACTIONS") == "true" and not hasattr(config, "workerinput"):
        announce_masks(config, session_redactor(config).known_secrets)


def announce_masks(config: pytest.Config, values: tuple[str, ...] | list[str]) -> None:
    """``::add-mask::`` for ``values`` on the real standard output, past capture and past the
    terminal's redaction (a redacted mask command would mask nothing); nothing outside GitHub
    Actions."""
    from pytest_specgate.evidence import write_mask_commands

    def end_line() -> None:
        if config.pluginmanager.get_plugin("terminalreporter") is not None:
            writer = config.get_terminal_writer()
            if writer.width_of_current_line:
                writer.line()

    with output_uncaptured(config):
        write_mask_commands(sys.stdout, values, os.environ, end_line)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    settings = config.stash[SETTINGS_KEY]
    if not (settings.run.required or settings.run.diagnostic or settings.host_facts_file):
        return None
    with input_errors_stop_the_run():
        facts = session_host_facts(config)
    provenance = session_host_provenance(config).label() or "probe"
    return [f"specgate: host {facts.summary()} ({provenance}); mode: {settings.run.label}"]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    signed = config.stash.get(SIGNED_KEY, None)
    if isinstance(signed, str):
        terminalreporter.write_line(f"specgate: the bundle is NOT signed: {signed}", red=True)
    elif signed is not None:
        statement = signed.statement
        terminalreporter.write_line(f"specgate: signed {signed.path.name} with {signed.keyid} "
                                    f"({len(statement.files)} files, commit {statement.commit})")
    if not config.stash[SETTINGS_KEY].wants_payload:
        return
    from pytest_specgate.contracts.payload import mismatched_hardware_runs, unbundled_evidence

    reports = [report for reports in terminalreporter.stats.values() for report in reports]
    if config.stash[SETTINGS_KEY].evidence_dir is not None:
        unbundled = unbundled_evidence(reports)
        if unbundled:
            terminalreporter.write_line(
                f"specgate: {len(unbundled)} test(s) recorded evidence but have no @pytest.mark.ac, "
                "so no bundle holds it:",
                yellow=True,
            )
            for entry in unbundled:
                terminalreporter.write_line(f"  {entry.describe()}", yellow=True)
    if not config.stash[SETTINGS_KEY].run.diagnostic:
        return
    mismatched = mismatched_hardware_runs(reports)
    terminalreporter.write_line(
        f"specgate: DIAGNOSTIC run: nothing here qualifies ({len(mismatched)} hardware spec(s) "
        "ran on a host that does not match)",
        yellow=True,
    )
