"""The evidence writer: a plugin object living only on the controller (like junitxml's LogXML).

Reports reach the controller both in a serial run and under xdist, so the same three hooks
collect everything: ``logstart`` (a test began), ``logreport`` (a phase ended),
``sessionfinish`` (write the bundle). ``receipt.json`` is written once, when the first AC
test starts, and each AC test's start and end is one line appended to ``journal.jsonl``
(``_journal``), so a run killed at any point leaves ``NOT QUALIFIED`` naming what was running
(:func:`read_receipt` folds the journal in) without a file rewritten per test.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import gc
import os
import platform
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_specgate._version import __version__
from pytest_specgate.contracts.census import Census
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.host import HostProvenance
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.payload import SpecPayload, payload_of
from pytest_specgate.evidence._bundle import RECEIPT_NAME, RECEIPT_SCHEMA_ID, FileEntry
from pytest_specgate.evidence._journal import JOURNAL_NAME, RunJournal
from pytest_specgate.evidence._jsonio import replace_atomically, utc_timestamp
from pytest_specgate.evidence._nodeids import NodeIdRedactor
from pytest_specgate.evidence._payloads import RefusedPayload
from pytest_specgate.evidence._policy import JudgedRecord
from pytest_specgate.evidence._recorder import staging_dir
from pytest_specgate.evidence._records import (
    MESSAGE_LIMIT,
    ExecutedTest,
    PhaseResult,
    RunFacts,
    SelectionFacts,
    SourceState,
    ac_id_of,
    attachment_path,
    fold_outcome,
    group_by_ac,
    judged_ac_record,
    longrepr_message,
    redacted_as_shown,
)
from pytest_specgate.evidence._redact import Redactor, append_redacted, build_redactor, write_redacted
from pytest_specgate.evidence._run_provenance import with_worker_foreign
from pytest_specgate.evidence._source import (
    IMPORTED_FILES_KEY,
    bind_to_head,
    git_top,
    imported_source_files,
    run_git,
    tree_changes,
)
from pytest_specgate.evidence._staging import StagingLease, claim_staging, sweep_stale_staging
from pytest_specgate.evidence._writer import NOT_QUALIFIED, WrittenBundle, write_attachment, write_bundle
from pytest_specgate.selection.boot_session import boot_session_id

FOREIGN_MODULES_KEY = "specgate_foreign_modules"
"""``workeroutput`` key: the modules an xdist worker imported from outside the repository and
every installed distribution (name -> where)."""
SELECTION_WORKEROUTPUT = "specgate_selection"
"""The ``workeroutput`` key under which an xdist worker ships its :class:`SelectionFacts`."""
WORKER_STAGING_KEY = "specgate_staging"
"""``workerinput`` key that tells xdist workers where this run stages attachments."""


def new_run_id(now: dt.datetime) -> str:
    return f"{now.astimezone(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def probe_source(rootdir: Path, exclude: Path | None) -> SourceState:
    """Commit and dirtiness of the repository holding ``rootdir`` (``exclude``: the evidence dir,
    whose new bundles are not changes; tracked changes there still are)."""
    try:
        top = Path(run_git(["rev-parse", "--show-toplevel"], rootdir).strip())
        commit = run_git(["rev-parse", "HEAD"], top).strip()
        status = run_git(["status", "--porcelain", "-z", "--untracked-files=all"], top)
    except FileNotFoundError:
        return SourceState(commit=None, dirty=None, problem="git is not installed")
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return SourceState(commit=None, dirty=None, problem=f"no git commit for {rootdir}: {error}")
    changed = tree_changes(status, top, exclude)
    return SourceState(commit=commit, dirty=bool(changed), problem=None, changed_files=())


def bound_source(source: SourceState, rootdir: Path, imported: Iterable[Path]) -> SourceState:
    """``source`` with the imported files that are not the commit's (``changed_files``)."""
    top = git_top(rootdir.resolve())
    if source.commit is None or top is None:
        return source
    imported = list(imported)
    binding = bind_to_head(imported, top)
    resolved_top = top.resolve()
    resolved = [path.resolve() for path in imported]
    inside = sorted({path.relative_to(resolved_top).as_posix() for path in resolved
                     if path.is_relative_to(resolved_top)})
    return dataclasses.replace(
        source,
        dirty=bool(source.dirty or binding.changed_files),
        changed_files=binding.changed_files,
        problem=binding.problem or source.problem,
        imported_files=tuple(inside),
    )


def _now() -> str:
    """The time, to the second, as evidence writes it; formatted once a second, not once a line
    (two journal lines per AC test asked ``strftime`` two thousand times in a 1,000-AC run)."""
    return _second_text(int(time.time()))


@functools.lru_cache(maxsize=1)
def _second_text(second: int) -> str:
    return utc_timestamp(dt.datetime.fromtimestamp(second, dt.UTC))


def _phase(report: pytest.TestReport, redactor: Redactor) -> PhaseResult:
    """The phase's outcome; its message redacted first and only then cut, so a cut cannot
    leave half a secret behind."""
    message = longrepr_message(report.longrepr, report.outcome)
    return PhaseResult(
        when=report.when,
        outcome=report.outcome,
        duration=float(report.duration),
        message=None if message is None else redacted_as_shown(redactor, message, MESSAGE_LIMIT),
        wasxfail=hasattr(report, "wasxfail"),
    )


@dataclass(frozen=True)
class PreparedFolder:
    """The evidence folder, resolved; this run's staging lease in it; whether this run created it."""

    evidence_dir: Path
    staging: StagingLease
    created: bool


def prepare_evidence_dir(evidence_dir: Path, run_id: str) -> PreparedFolder:
    """The evidence folder, resolved, and this run's staging folder inside it, both created and
    proven writable before the first test: a folder that cannot hold evidence is a usage error
    naming it, not a lost bundle at the end. Staging folders of runs no longer alive go first."""
    try:
        resolved = evidence_dir.resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop: RuntimeError before Python 3.13
        raise SpecgateInputError(
            f"--specgate-evidence: the evidence folder {evidence_dir} cannot be resolved ({error}); "
            "expected a folder, or a link that ends at one"
        ) from None
    created = not resolved.exists()
    root = staging_dir(resolved, run_id).parent
    try:
        resolved.mkdir(parents=True, exist_ok=True)
        sweep_stale_staging(root)
        lease = claim_staging(root, run_id)
    except OSError as error:
        raise _unwritable(evidence_dir, error) from None
    try:
        probe = lease.folder / ".write-probe"
        replace_atomically(probe, b"")
        probe.unlink()
    except OSError as error:
        lease.release()
        raise _unwritable(evidence_dir, error) from None
    return PreparedFolder(resolved, lease, created)


def _unwritable(evidence_dir: Path, error: OSError) -> SpecgateInputError:
    return SpecgateInputError(
        f"--specgate-evidence: the evidence folder {evidence_dir} cannot be written "
        f"({error.strerror or error}); expected a folder this run can create files in"
    )


class EvidenceCollector:
    """Collects reports and writes ``<evidence dir>/<run id>/``; register it on the controller only."""

    def __init__(
        self,
        *,
        evidence_dir: Path,
        host_facts: Mapping[str, JsonValue],
        diagnostic: bool,
        allow_dirty: bool,
        rootdir: Path,
        redact_patterns: Sequence[str] = (),
        host_summary: str | None = None,
        duration_scale: float = 1.0,
        selection: SelectionFacts | None = None,
        environ: Mapping[str, str] | None = None,
        host_provenance: HostProvenance | Mapping[str, JsonValue] | None = None,
        census: Callable[[], Census] | None = None,
        run_provenance: Callable[[Mapping[str, object]], Mapping[str, JsonValue]] | None = None,
        run_modules: Callable[[], Mapping[str, object]] | None = None,
        job_nonce: str | None = None,
    ) -> None:
        """``selection``: what collection selected and deselected (filled in by the plugin's hooks
        on this process, and merged from xdist workers in ``pytest_testnodedown``).

        ``host_provenance`` defaults to an unedited probe that asked no tool. ``census`` takes
        the full collection of the configured testpaths at the session's end (None: no census,
        so no AC is complete); ``run_modules`` everything the run imported (None: ``sys.modules``);
        ``run_provenance`` what shaped the run from outside the repository, given those modules
        (``_run_provenance``; None: unknown, so nothing qualifies); ``job_nonce`` the
        fleet job's ``--specgate-nonce``, written into the in-toto statement.
        """
        self._job_nonce = job_nonce
        self._environ = os.environ if environ is None else environ
        self.redactor: Redactor = build_redactor(rootdir, redact_patterns, self._environ)
        self.nodeid = NodeIdRedactor(self.redactor)
        """Redacts each node id once for the journal, the records, the receipt and the run's facts."""
        started = dt.datetime.now(dt.UTC)
        self.run_id = new_run_id(started)
        self._folder = prepare_evidence_dir(evidence_dir, self.run_id)
        self.evidence_dir, self.staging = self._folder.evidence_dir, self._folder.staging.folder
        self.run_dir = self.evidence_dir / self.run_id
        self._started_at = utc_timestamp(started)
        self._boot_at_start = boot_session_id()
        self._host_facts = dict(host_facts)
        self._host_summary = host_summary or "host summary not probed"
        if isinstance(host_provenance, Mapping):
            host_provenance = HostProvenance.from_record(host_provenance)
        provenance = host_provenance or HostProvenance("probe")
        self._host_provenance = provenance.to_record(self.redactor.text)
        self._host_label = provenance.label()
        self._diagnostic = diagnostic
        self._allow_dirty = allow_dirty
        self._duration_scale = duration_scale
        self.selection = selection if selection is not None else SelectionFacts()
        self._take_census = census
        self.census: Census | None = None
        """The full collection the records' completeness is judged against (None: not taken)."""
        self._take_run_provenance = run_provenance
        self._run_modules = run_modules
        """Every module the run imported, those since removed from sys.modules too (default: sys.modules)."""
        self.run_provenance: Mapping[str, JsonValue] | None = None
        """Already redacted; xdist workers' foreign modules are merged in when they finish."""
        self._worker_foreign: dict[str, Mapping[str, JsonValue]] = {}
        self._rootdir = rootdir
        self._source = probe_source(rootdir, exclude=self.evidence_dir)
        self._imported: set[Path] = set()
        self._phases: dict[str, dict[str, PhaseResult]] = {}
        self._properties: dict[str, SpecPayload] = {}
        """Each AC test's last payload as it arrived (redacted by :meth:`executed_tests`)."""
        self._running: dict[str, None] = {}
        self._ac_by_nodeid: dict[str, str] = {}
        self._finished: dict[str, None] = {}
        self._journal = RunJournal(self.run_dir / JOURNAL_NAME, self.nodeid)
        self._receipt_written = False
        self.bundle: WrittenBundle | None = None
        self.write_problem: str | None = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: each worker stages attachments in this run's folder."""
        node.workerinput[WORKER_STAGING_KEY] = str(self.staging)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Serial runs know each test's AC before it starts; under xdist the setup report tells."""
        for item in session.items:
            marker = item.get_closest_marker("ac")
            if marker is not None and marker.args and isinstance(marker.args[0], str):
                self._ac_by_nodeid[item.nodeid] = marker.args[0]


    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._running[nodeid] = None
        if nodeid in self._ac_by_nodeid:
            self._phases.setdefault(nodeid, {})
            self._journal_start(nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test without an AC costs a lookup and the two sets the receipt and the interrupt
        check read; an AC test's phase is redacted here, where it enters the run, and its payload
        kept for :meth:`executed_tests` to redact once (the teardown's replaces the setup's)."""
        nodeid = report.nodeid
        properties = payload_of(report.user_properties)
        ac_id = None if properties is None else ac_id_of(properties)
        newly_known = ac_id is not None and nodeid not in self._ac_by_nodeid
        if ac_id is not None:
            self._ac_by_nodeid[nodeid] = ac_id
        if report.when == "teardown":
            self._running.pop(nodeid, None)
            self._finished[nodeid] = None
        if nodeid not in self._ac_by_nodeid:
            return
        self._phases.setdefault(nodeid, {})[report.when] = _phase(report, self.redactor)
        if properties is not None:
            self._properties[nodeid] = properties
        # The journal only has to name running criteria: an AC test writes to it when it starts
        # (or, under xdist, when its setup report first names the AC) and when it ends.
        if report.when == "teardown":
            with contextlib.suppress(OSError):
                self._journal.ended(nodeid, len(self._finished), _now())
        elif report.when == "setup" and newly_known:
            self._journal_start(nodeid)

    def _journal_start(self, nodeid: str) -> None:
        """The first AC test writes the receipt (status running); every one appends its start.
        A journal or receipt that cannot be written (a full disk) costs them, never the run."""
        with contextlib.suppress(OSError):
            if not self._receipt_written:
                self._receipt_written = True
                self._write_receipt("running")
            self._journal.started(nodeid, self._ac_by_nodeid.get(nodeid), _now())

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """An xdist worker is done: merge what it selected and deselected, and bind the files it
        imported (``workeroutput``) like the controller's own."""
        output = getattr(node, "workeroutput", {})
        shipped = output.get(SELECTION_WORKEROUTPUT)
        if isinstance(shipped, Mapping):
            self.selection = self.selection.merged(SelectionFacts.from_json(shipped))
        imported = output.get(IMPORTED_FILES_KEY, [])
        self._imported.update(Path(path) for path in imported if isinstance(path, str))
        foreign = output.get(FOREIGN_MODULES_KEY)
        if isinstance(foreign, Mapping):
            self._worker_foreign.update({str(name): fact for name, fact in foreign.items()
                                         if isinstance(fact, Mapping)})

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
        if exitstatus == pytest.ExitCode.USAGE_ERROR:
            # Stopped by a usage error (a bad marker or option) before any test ran: an empty
            # bundle would only be mistaken for a run; the error line says what happened.
            self.discard()
            return
        # Building the records allocates thousands of small acyclic containers that all live to
        # the end of the write: each pass of the cycle collector in between walks the whole heap
        # (pytest's items too) and frees none of them. Reference counting frees what the write
        # drops; the collector runs again from here on, as it did before.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._finish_session(session, exitstatus)
        finally:
            if collecting:
                gc.enable()

    def _finish_session(self, session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
        # Before the imported files are listed: files only the census imported are bound too.
        if self._take_census is not None:
            self.census = self._take_census()
        modules = self._run_modules() if self._run_modules is not None else sys.modules
        if self._take_run_provenance is not None:
            self.run_provenance = self._take_run_provenance(modules)
        if self._source.commit is not None:
            collected = [item.path for item in session.items]
            self._imported |= imported_source_files(modules, collected, self._rootdir)
        try:
            self.finish(exitstatus)
        except OSError as error:
            reason = error.strerror or str(error)
            self.write_problem = f"the bundle could not be written to {self.run_dir}: {reason}"
            if self.bundle is None:
                self.discard()
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        finally:
            self._folder.staging.release()

    def discard(self) -> None:
        """A bundle that could not be written leaves the evidence folder as it was before the run
        (a full disk gets its space back): the half-written run folder goes, with its receipt
        and journal, and the evidence folder too when this run created it and it is empty."""
        self._journal.close(remove=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        self._folder.staging.release()
        if self._folder.created:
            with contextlib.suppress(OSError):
                self.evidence_dir.rmdir()

    def close(self) -> None:
        """The run ends without a session finish (unconfigured early): staging goes, the receipt stays."""
        self._journal.close(remove=False)
        self._folder.staging.release()

    def finish(self, exitstatus: int | pytest.ExitCode) -> WrittenBundle:
        """Write the bundle (and the step summary); an interrupt or unfinished test disqualifies."""
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(self._running)
        try:
            self.bundle = self.write(interrupted=interrupted)
        finally:
            # Spent once the final receipt is written; kept beside a receipt still marked
            # running when the bundle could not be written.
            self._journal.close(remove=self.bundle is not None)
        summary_path = self._environ.get("GITHUB_STEP_SUMMARY")
        if summary_path:
            append_redacted(self.redactor, Path(summary_path), self.bundle.markdown)
        return self.bundle

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.bundle is not None:
            terminalreporter.write_sep(
                "-",
                f"specgate evidence: {self.bundle.path} ({self.bundle.verdict}, "
                f"{len(self.bundle.ac_ids)} AC)",
            )
        if self.write_problem is not None:
            terminalreporter.write_sep("-", f"specgate evidence: NOT WRITTEN: {self.write_problem}", red=True)

    def executed_tests(self) -> list[ExecutedTest]:
        """The tests with an ``ac`` marker, the only ones evidence records (their node ids and
        payloads redacted)."""
        tests = []
        for nodeid, phases in sorted(self._phases.items()):
            properties = self._properties.get(nodeid)
            if properties is None or ac_id_of(properties) is None:
                continue
            outcome, message = fold_outcome(phases, finished=nodeid in self._finished)
            tests.append(
                ExecutedTest(
                    nodeid=self.nodeid(nodeid),
                    outcome=outcome,
                    message=message,
                    duration=sum(phase.duration for phase in phases.values()),
                    phases=tuple(phases[when] for when in ("setup", "call", "teardown") if when in phases),
                    properties=captured_payload(properties, self.nodeid),
                )
            )
        return tests

    def _run_facts(self, interrupted: bool) -> RunFacts:
        """The run's facts with their text redacted here, once, so every AC record is built
        from parts already redacted (the record-wide pass at the write then changes nothing)."""
        return redacted_run_facts(self._raw_run_facts(interrupted), self.nodeid)

    def _raw_run_facts(self, interrupted: bool) -> RunFacts:
        return RunFacts(
            run_id=self.run_id,
            started_at=self._started_at,
            finished_at=utc_timestamp(dt.datetime.now(dt.UTC)),
            diagnostic=self._diagnostic,
            allow_dirty=self._allow_dirty,
            interrupted=interrupted,
            source=bound_source(self._source, self._rootdir, self._imported),
            host_facts=self._host_facts,
            host_summary=self._host_summary,
            duration_scale=self._duration_scale,
            host_provenance=self._host_provenance,
            selection=self.selection,
            host_label=self._host_label,
            census=self.census,
            run_provenance=self._merged_run_provenance(),
            boot_session=(self._boot_at_start, boot_session_id()),
            versions={
                "python": platform.python_version(),
                "pytest": pytest.__version__,
                "specgate": __version__,
            },
        )

    def _merged_run_provenance(self) -> Mapping[str, JsonValue] | None:
        provenance = self.run_provenance
        if provenance is None or not self._worker_foreign:
            return provenance
        return with_worker_foreign(provenance, self._worker_foreign, self.redactor.text)

    def write(self, interrupted: bool) -> WrittenBundle:
        """Copy each staged attachment into the bundle first, so that one that cannot be
        written is recorded as missing in its AC's record instead of costing the bundle."""
        run = self._run_facts(interrupted)
        records: list[JudgedRecord] = []
        attachments: dict[str, FileEntry] = {}
        for ac_id, tests in group_by_ac(self.executed_tests()).items():
            missing: list[str] = []
            kept = [self._copy_attachments(test, attachments, missing) for test in tests]
            records.append(judged_ac_record(ac_id, kept, run, missing))
        status = "interrupted" if interrupted else "finished"
        bundle = write_bundle(
            self.run_dir,
            self.redactor,
            self.run_id,
            records,
            attachments,
            lambda verdict, reasons: self._receipt(status, verdict, reasons),
            self._source.commit,
            __version__,
            job_nonce=self._job_nonce,
        )
        self._folder.staging.release()
        return bundle

    def _copy_attachments(
        self, test: ExecutedTest, written: dict[str, FileEntry], missing: list[str]
    ) -> ExecutedTest:
        """``test`` with each attachment that did not reach the bundle marked with its problem
        (``missing`` gains one line for each)."""
        marked: list[JsonValue] = []
        for item in test.properties["attachments"]:
            problem = _attachment_problem(item)
            if problem is None and isinstance(item, Mapping):
                relative = attachment_path(str(item["sha256"]), str(item["name"]))
                problem = self._copy_attachment(str(item["sha256"]), relative, written)
            if problem is not None and isinstance(item, Mapping):
                problem = self.redactor.text(problem)
                missing.append(f"{test.nodeid}: {item.get('name')} ({problem})")
                item = {**item, "problem": problem}
            marked.append(item)
        return dataclasses.replace(test, properties={**test.properties, "attachments": marked})

    def _copy_attachment(self, digest: str, relative: str, written: dict[str, FileEntry]) -> str | None:
        if relative in written:
            return None
        try:
            data = (self.staging / digest).read_bytes()
        except FileNotFoundError:
            return "not found in the staging area"
        except OSError as error:
            return f"could not be read from the staging area: {error.strerror or error}"
        try:
            written[relative] = write_attachment(self.run_dir, self.redactor, relative, data)
        except (OSError, RefusedPayload) as error:
            return f"could not be written: {getattr(error, 'strerror', None) or error}"
        return None

    def _receipt(self, status: str, verdict: str, reasons: list[str]) -> dict[str, JsonValue]:
        return {
            "schema": RECEIPT_SCHEMA_ID,
            "run_id": self.run_id,
            "status": status,
            "verdict": verdict,
            "reasons": reasons,
            "running": [
                {"nodeid": self.nodeid(nodeid), "ac": self._ac_by_nodeid.get(nodeid)}
                for nodeid in sorted(self._running)
            ],
            "tests_finished": len(self._finished),
            "started_at": self._started_at,
            "updated_at": _now(),
        }

    def _write_receipt(self, status: str) -> None:
        """A receipt that cannot be written (a full disk) costs the receipt, never the run: the
        bundle is still tried at the end."""
        running = ", ".join(sorted(self._running)) or "nothing"
        receipt = self._receipt(status, NOT_QUALIFIED, [f"run in progress; running: {running}"])
        with contextlib.suppress(OSError):
            write_redacted(self.redactor, self.run_dir / RECEIPT_NAME, receipt)


def captured_payload(payload: SpecPayload, nodeid: NodeIdRedactor) -> SpecPayload:
    """An AC test's payload with its free text redacted as it enters the run, once (the
    redactor memoises; ``nodeid`` is the run's node-id redaction and holds it): the marker's
    spec, title and waiver reason, the hardware verdict's words, the measurements' names, units
    and text values, attachment names and problems, notes and engine records. Fields the record
    schema constrains (the AC id, the gate a waiver names, the run mode, a measurement's rule,
    digests) are kept as they are, so a redaction rule can never turn a valid record into one
    the gate refuses."""
    redactor = nodeid.redactor
    text, value = redactor.text, redactor.value
    ac = payload["ac"]
    hardware = payload["hardware"]
    return {
        **payload,
        "nodeid": nodeid(payload["nodeid"]),
        "ac": None if ac is None else {
            name: text(item) if name in ("spec", "title", "reason") and isinstance(item, str) else item
            for name, item in ac.items()
        },
        "hardware": None if hardware is None else _captured_hardware(hardware, redactor),
        "measurements": [_captured_fields(item, ("name", "unit", "value"), redactor)
                         for item in payload["measurements"]],
        "attachments": [_captured_fields(item, ("name", "problem"), redactor)
                        for item in payload["attachments"]],
        "notes": {text(name): value(item) for name, item in payload["notes"].items()},
        "engines": [value(engine) for engine in payload["engines"]],
    }


def _captured_fields(item: JsonValue, names: Sequence[str], redactor: Redactor) -> JsonValue:
    if not isinstance(item, Mapping):
        return redactor.value(item)
    return {name: redactor.text(field) if name in names and isinstance(field, str) else field
            for name, field in item.items()}


def _captured_hardware(hardware: Mapping[str, JsonValue], redactor: Redactor) -> dict[str, JsonValue]:
    """The verdict's reasons, summary and profile redacted; the requirement's values (its clause
    names are the marker's keywords)."""
    text = redactor.text
    captured: dict[str, JsonValue] = dict(hardware)
    for name in ("host_summary", "profile"):
        if isinstance(captured.get(name), str):
            captured[name] = text(str(captured[name]))
    reasons = captured.get("reasons")
    if isinstance(reasons, list):
        captured["reasons"] = [text(reason) if isinstance(reason, str) else reason for reason in reasons]
    requirement = captured.get("requirement")
    if isinstance(requirement, Mapping):
        captured["requirement"] = {name: redactor.value(item) for name, item in requirement.items()}
    return captured


def redacted_run_facts(run: RunFacts, nodeid: NodeIdRedactor) -> RunFacts:
    """``run`` with every text a host, a repository or a command line put in it redacted by
    ``nodeid``'s redactor (node ids by ``nodeid``, as the tests' own, so completeness still
    matches them)."""
    redactor = nodeid.redactor
    source, selection = run.source, run.selection
    changed = source.changed_files
    return dataclasses.replace(
        run,
        source=dataclasses.replace(
            source,
            problem=None if source.problem is None else redactor.text(source.problem),
            changed_files=None if changed is None else tuple(redactor.text(path) for path in changed),
            imported_files=None if source.imported_files is None
            else tuple(redactor.text(path) for path in source.imported_files),
        ),
        host_facts=redactor.value(run.host_facts),
        host_summary=redactor.text(run.host_summary),
        host_label=None if run.host_label is None else redactor.text(run.host_label),
        selection=SelectionFacts(
            args=tuple(redactor.text(arg) for arg in selection.args),
            keyword=None if selection.keyword is None else redactor.text(selection.keyword),
            markexpr=None if selection.markexpr is None else redactor.text(selection.markexpr),
            selected={nodeid(test): ac for test, ac in selection.selected.items()},
            deselected={nodeid(test): ac for test, ac in selection.deselected.items()},
        ),
        census=None if run.census is None else redacted_census(run.census, nodeid),
    )


def redacted_census(census: Census, nodeid: NodeIdRedactor) -> Census:
    """The census with its node ids and paths redacted as the tests' own, so they still match."""
    redactor = nodeid.redactor
    return Census(
        testpaths=tuple(redactor.text(path) for path in census.testpaths),
        carriers={nodeid(test): ac for test, ac in census.carriers.items()},
        errors=tuple(nodeid(test) for test in census.errors),
        problem=None if census.problem is None else redacted_as_shown(redactor, census.problem),
    )


def _attachment_problem(item: JsonValue) -> str | None:
    """Why a reported attachment cannot be copied: its own recorded problem, or no digest."""
    if not isinstance(item, Mapping):
        return "not an attachment entry"
    problem = item.get("problem")
    if problem is not None:
        return str(problem)
    return None if isinstance(item.get("sha256"), str) else "no digest recorded"
