"""The qualification session: ordered gates, a receipt that is always current, checkpoints.

The receipt is rewritten (atomically) before every gate body runs, so whatever
ends the run - an exception, pytest-timeout, Ctrl-C or SIGKILL - the receipt on
disk says ``NOT QUALIFIED`` and names the gate that was running. QUALIFIED is
only written by :meth:`QualificationSession.finish`, after every declared gate
passed in order and every gate file still hashes to the digest recorded when it
passed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Final, Generic, Protocol, TypeVar, cast

from pytest_specgate._version import __version__
from pytest_specgate.evidence import NOT_QUALIFIED, QUALIFIED, Redactor, build_redactor, write_redacted
from pytest_specgate.qualification._budget import (
    DEFAULT_HOLD_LIMIT_S,
    Budget,
    BudgetExceeded,
    GateSpec,
    price_gates,
    read_measured_durations,
)

__all__ = [
    "CHECKPOINTS_NAME",
    "RECEIPT_NAME",
    "GateRecorder",
    "NotQualified",
    "NoteTaker",
    "QualificationError",
    "QualificationSession",
    "QualificationVerdict",
]

RECEIPT_NAME: Final = "receipt.json"
CHECKPOINTS_NAME: Final = "checkpoints.jsonl"
RECEIPT_SCHEMA_ID: Final = "specgate.qualification-receipt/v1"
CHECKPOINT_SCHEMA_ID: Final = "specgate.qualification-checkpoint/v1"
GATE_SCHEMA_ID: Final = "specgate.qualification-gate/v1"
_ERROR_CHARS: Final = 2000

BootedT = TypeVar("BootedT")


class NoteTaker(Protocol):
    """The part of the ``evidence`` fixture's recorder a session writes to."""

    def note(self, key: str, value: object) -> None: ...

    def attach(self, name: str, content: bytes | str | Path) -> object: ...


class QualificationError(Exception):
    """The spec used the session wrongly (undeclared gate, out of order, not opened, ...)."""


class NotQualified(AssertionError):
    """Raised when a ``with`` block ends without an error but the verdict is NOT QUALIFIED."""


@dataclass(frozen=True)
class QualificationVerdict:
    verdict: str
    failing_gate: str | None
    reasons: tuple[str, ...]
    receipt: Path

    @property
    def qualified(self) -> bool:
        return self.verdict == QUALIFIED


@dataclass
class _Progress:
    """Mutable bookkeeping for one declared gate (never leaves this module)."""

    spec: GateSpec
    index: int
    state: str = "pending"
    started_at: str | None = None
    duration_s: float | None = None
    file: str | None = None
    sha256: str | None = None
    error: str | None = None

    def to_dict(self, budget: Budget | None) -> dict[str, object]:
        item = budget.items[self.index] if budget is not None else None
        return {
            "name": self.spec.name,
            "index": self.index,
            "kind": self.spec.kind,
            "state": self.state,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "priced_s": item.priced_s if item is not None else None,
            "basis": item.basis if item is not None else None,
            "file": self.file,
            "sha256": self.sha256,
            "error": self.error,
        }


@dataclass
class GateRecorder:
    """What ``with session.gate(name) as gate`` yields: the gate's evidence record."""

    name: str
    record_data: dict[str, object] = field(default_factory=dict)

    def record(self, values: Mapping[str, object]) -> None:
        """Merge ``values`` into this gate's evidence (later keys win)."""
        if not isinstance(values, Mapping):
            raise TypeError(f"gate {self.name!r}: record() takes a mapping, found {type(values).__name__}")
        self.record_data.update({str(key): value for key, value in values.items()})


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _describe(exc: BaseException, redactor: Redactor) -> str:
    """The error in one string, redacted before it is cut so a cut cannot split a secret."""
    return redactor.text_within(f"{type(exc).__name__}: {exc}".strip(), _ERROR_CHARS)


def gate_file_name(gate: str) -> str:
    """``<gate>.json``; gate names are used as file names, so they must be plain."""
    if not gate or gate in {".", ".."} or any(c in gate for c in "/\\\x00") or gate.startswith("."):
        raise QualificationError(f"gate name {gate!r} cannot be a file name (no '/', '\\', leading '.')")
    if gate in {Path(RECEIPT_NAME).stem, Path(CHECKPOINTS_NAME).stem}:
        raise QualificationError(f"gate name {gate!r} is reserved for the session's own files")
    return f"{gate}.json"


class QualificationSession(Generic[BootedT]):
    """An ordered list of gates run inside one spec, with a receipt that is always current.

    Use as ``with QualificationSession(dir, gates, boot=...) as session:`` then
    ``with session.gate("name") as gate: ...; gate.record({...})`` for each declared
    gate in order. Opening prices the gates first (:class:`BudgetExceeded` before
    ``boot`` is ever called), then boots. A clean end of the ``with`` block calls
    :meth:`finish` and raises :class:`NotQualified` when the verdict is not QUALIFIED.
    """

    def __init__(
        self,
        directory: Path,
        gates: Sequence[GateSpec],
        *,
        source_commit: str | None = None,
        hold_limit_s: float = DEFAULT_HOLD_LIMIT_S,
        checkpoint_path: Path | None = None,
        history_path: Path | None = None,
        boot: Callable[[], BootedT] | None = None,
        redactor: Redactor | None = None,
        recorder: NoteTaker | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = Path(directory)
        self.gates = tuple(gates)
        for spec in self.gates:
            gate_file_name(spec.name)
        self.source_commit = source_commit
        self.hold_limit_s = hold_limit_s
        self.checkpoint_path = checkpoint_path or self.directory / CHECKPOINTS_NAME
        self.receipt_path = self.directory / RECEIPT_NAME
        self._history_path = history_path
        self._boot = boot
        self._redactor = redactor if redactor is not None else build_redactor(None)
        self._recorder = recorder
        self._clock = clock
        self._progress = [_Progress(spec, index) for index, spec in enumerate(self.gates)]
        self._budget: Budget | None = None
        self._status = "new"
        self._reasons: list[str] = []
        self._verdict: QualificationVerdict | None = None
        self._booted: BootedT | None = None
        self._has_booted = False
        self._started_at = _utc_now()
        self._closed = False
        self._misused_gate: str | None = None

    # -- opening ---------------------------------------------------------------------------

    def open(self) -> QualificationSession[BootedT]:
        """Price, write the first receipt, then boot; refuses before boot when over budget."""
        if self._status != "new":
            raise QualificationError(f"qualification session in {self.directory} is already open")
        history = self._history_path if self._history_path is not None else self.checkpoint_path
        self._budget = price_gates(self.gates, self.hold_limit_s, read_measured_durations(history))
        if self._budget.over_limit:
            self._status = "refused"
            self._reasons.append(self._budget.refusal())
            self._write_receipt()
            raise BudgetExceeded(self._budget)
        self._status = "booting" if self._boot is not None else "running"
        self._write_receipt()
        if self._boot is not None:
            try:
                self._booted = self._boot()
            except BaseException as exc:
                self._status = "boot-failed"
                self._reasons.append(f"boot failed: {_describe(exc, self._redactor)}")
                self._write_receipt()
                raise
            self._has_booted = True
            self._status = "running"
            self._write_receipt()
        return self

    @property
    def booted(self) -> BootedT:
        """What ``boot`` returned (an engine, or a tuple of engines)."""
        if not self._has_booted:
            raise QualificationError(
                f"qualification session in {self.directory}: nothing booted (no boot= given, or not opened)"
            )
        return cast(BootedT, self._booted)

    @property
    def budget(self) -> Budget:
        if self._budget is None:
            raise QualificationError(f"qualification session in {self.directory} has not been priced yet")
        return self._budget

    # -- gates -----------------------------------------------------------------------------

    def _next_gate(self, name: str) -> _Progress:
        declared = [p.spec.name for p in self._progress]
        order = ", ".join(declared)
        pending = next((p for p in self._progress if p.state == "pending"), None)
        if self._status in {"new", "booting"}:
            problem = f"gate {name!r}: the session is not open (use `with session:` or session.open())"
        elif self._status != "running":
            problem = f"gate {name!r}: the session is {self._status} and runs no more gates"
        elif name not in declared:
            problem = f"gate {name!r} is not declared; declared gates in order: {order}"
        elif pending is None or pending.spec.name != name:
            expected = "nothing (every gate already ran)" if pending is None else repr(pending.spec.name)
            problem = f"gate {name!r} out of order: expected {expected} next; declared order: {order}"
        else:
            return pending
        self._misused_gate = self._misused_gate or name
        if self._status == "running":
            self._reasons.append(problem)
            self._write_receipt()
        raise QualificationError(problem)

    @contextmanager
    def gate(self, name: str) -> Iterator[GateRecorder]:
        """Run one gate: the receipt names it before the body runs; a pass writes ``<gate>.json``."""
        progress = self._next_gate(name)
        progress.state = "running"
        progress.started_at = _utc_now()
        self._write_receipt()
        recorder = GateRecorder(name)
        started = self._clock()
        try:
            yield recorder
        except BaseException as exc:
            progress.duration_s = self._clock() - started
            interrupted = isinstance(exc, KeyboardInterrupt | SystemExit)
            carried = getattr(exc, "evidence", None)
            if isinstance(carried, Mapping):
                recorder.record(carried)
            self._end_gate(progress, recorder, passed=False, error=_describe(exc, self._redactor))
            self._status = "interrupted" if interrupted else "failed"
            self._write_receipt()
            raise
        progress.duration_s = self._clock() - started
        self._end_gate(progress, recorder, passed=True, error=None)
        self._write_receipt()

    def run(self, name: str, body: Callable[[], Mapping[str, object] | None]) -> Mapping[str, object]:
        """Callable form of :meth:`gate`: ``body()``'s mapping becomes the gate's evidence."""
        with self.gate(name) as recorder:
            result = body()
            if result is not None:
                recorder.record(result)
        return dict(recorder.record_data)

    def _end_gate(
        self, progress: _Progress, recorder: GateRecorder, *, passed: bool, error: str | None
    ) -> None:
        progress.state = "passed" if passed else "failed"
        progress.error = error
        document = {
            "schema": GATE_SCHEMA_ID,
            "gate": progress.spec.name,
            "index": progress.index,
            "kind": progress.spec.kind,
            "passed": passed,
            "error": error,
            "started_at": progress.started_at,
            "finished_at": _utc_now(),
            "duration_s": progress.duration_s,
            "source_commit": self.source_commit,
            "record": recorder.record_data,
        }
        file_name = gate_file_name(progress.spec.name)
        written = write_redacted(self._redactor, self.directory / file_name, document)
        progress.file = file_name
        progress.sha256 = hashlib.sha256(written).hexdigest()
        self._append_checkpoint(progress)

    def _append_checkpoint(self, progress: _Progress) -> None:
        line = json.dumps(
            {
                "schema": CHECKPOINT_SCHEMA_ID,
                "gate": progress.spec.name,
                "index": progress.index,
                "passed": progress.state == "passed",
                "duration_s": progress.duration_s,
                "file": progress.file,
                "sha256": progress.sha256,
                "source_commit": self.source_commit,
                "at": _utc_now(),
            },
            sort_keys=True,
        )
        self.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
        with self.checkpoint_path.open("a", encoding="utf-8") as handle:
            handle.write(self._redactor.text(line) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    # -- the verdict -----------------------------------------------------------------------

    def _digest_problems(self) -> dict[str, str]:
        problems: dict[str, str] = {}
        for progress in self._progress:
            if progress.state != "passed" or progress.file is None:
                continue
            actual = _sha256_of(self.directory / progress.file)
            if actual is None:
                problems[progress.spec.name] = f"gate {progress.spec.name!r}: {progress.file} is missing"
            elif actual != progress.sha256:
                problems[progress.spec.name] = (
                    f"gate {progress.spec.name!r}: {progress.file} sha256 {actual[:12]}… no longer matches "
                    f"the digest recorded when it passed ({str(progress.sha256)[:12]}…)"
                )
        return problems

    def finish(self) -> QualificationVerdict:
        """Verify every gate passed and every gate file is unchanged; write the final receipt."""
        running = [p.spec.name for p in self._progress if p.state == "running"]
        if running:
            raise QualificationError(f"finish() called while gate {running[0]!r} is running")
        if self._verdict is not None:
            return self._verdict
        tampered = self._digest_problems()
        reasons = list(self._reasons)
        failing: str | None = None
        for progress in self._progress:
            name = progress.spec.name
            if progress.state != "passed":
                reasons.append(
                    f"gate {name!r} {'never ran' if progress.state == 'pending' else progress.state}"
                )
            elif name in tampered:
                reasons.append(tampered[name])
            else:
                continue
            failing = failing or name
        if reasons and failing is None:
            failing = self._misused_gate or self.gates[-1].name
        verdict = NOT_QUALIFIED if reasons else QUALIFIED
        if self._status == "running":
            self._status = "finished"
        self._reasons = reasons
        self._verdict = QualificationVerdict(verdict, failing, tuple(reasons), self.receipt_path)
        self._write_receipt()
        return self._verdict

    def failing_gate(self) -> str | None:
        """The gate that keeps this session from qualifying right now (None only when QUALIFIED)."""
        if self._verdict is not None:
            return self._verdict.failing_gate
        for state in ("running", "failed"):
            found = next((p.spec.name for p in self._progress if p.state == state), None)
            if found is not None:
                return found
        return next((p.spec.name for p in self._progress if p.state == "pending"), None)

    def receipt(self) -> dict[str, object]:
        verdict = self._verdict.verdict if self._verdict is not None else NOT_QUALIFIED
        reasons = list(self._reasons)
        if self._verdict is None and not reasons:
            reasons.append("qualification in progress: finish() has not verified the gates yet")
        return {
            "schema": RECEIPT_SCHEMA_ID,
            "specgate": __version__,
            "verdict": verdict,
            "status": self._status,
            "failing_gate": self.failing_gate(),
            "running_gate": next((p.spec.name for p in self._progress if p.state == "running"), None),
            "reasons": reasons,
            "source_commit": self.source_commit,
            "gates": [p.to_dict(self._budget) for p in self._progress],
            "budget": self._budget.to_dict() if self._budget is not None else None,
            "checkpoints": self.checkpoint_path.name,
            "started_at": self._started_at,
            "updated_at": _utc_now(),
        }

    def _write_receipt(self) -> None:
        write_redacted(self._redactor, self.receipt_path, self.receipt())

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Final receipt for a session that never finished, then copy the files into the evidence."""
        if self._closed:
            return
        self._closed = True
        if self._verdict is None and self._status != "new":
            if self._status in {"running", "booting"}:
                self._status = "abandoned"
                self._reasons.append("the spec ended before finish() verified the gates")
            self._write_receipt()
        if self._recorder is not None and self._status != "new":
            self._attach_evidence(self._recorder)

    def _attach_evidence(self, recorder: NoteTaker) -> None:
        prefix = f"qualification-{self.directory.name}"
        files = [self.receipt_path, self.checkpoint_path]
        files += [self.directory / p.file for p in self._progress if p.file is not None]
        for path in files:
            if path.is_file():
                recorder.attach(f"{prefix}-{path.name}", path)
        recorder.note(
            prefix,
            {
                "verdict": self._verdict.verdict if self._verdict is not None else NOT_QUALIFIED,
                "failing_gate": self.failing_gate(),
                "status": self._status,
                "receipt_sha256": _sha256_of(self.receipt_path),
                "gates": {p.spec.name: p.sha256 for p in self._progress},
            },
        )

    def __enter__(self) -> QualificationSession[BootedT]:
        try:
            return self.open()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            if self._status == "running":
                self._status = "interrupted" if isinstance(exc, KeyboardInterrupt | SystemExit) else "failed"
                self._reasons.append(f"the spec raised between gates: {_describe(exc, self._redactor)}")
            self.close()
            return
        verdict = self.finish()
        self.close()
        if not verdict.qualified:
            raise NotQualified(
                f"qualification {verdict.verdict}: failing gate {verdict.failing_gate!r}; "
                + "; ".join(verdict.reasons)
                + f" (receipt: {verdict.receipt})"
            )
