"""The run journal: one appended line per AC test start and end, instead of receipt rewrites.

Rewriting ``receipt.json`` atomically (temp file, write, rename) when every AC test started
and ended was most of what writing evidence cost. Now the collector writes the receipt once,
when the first AC test starts (status ``running``), and appends one line per event to
``journal.jsonl`` through a descriptor it opened once. A run killed at any point, SIGKILL
included, leaves both; :func:`read_receipt` folds the journal into the receipt, so every
reader names the running AC and test. A run that ends (finished or interrupted) writes its
final receipt with the bundle and removes the journal.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from pytest_specgate.contracts.jsonvalue import JsonValue

if TYPE_CHECKING:
    from pytest_specgate.evidence._nodeids import NodeIdRedactor

__all__ = ["JOURNAL_NAME", "JournalState", "RunJournal", "fold_journal", "read_receipt"]

JOURNAL_NAME: Final = "journal.jsonl"
RUNNING_STATUS: Final = "running"
_START, _END = "start", "end"


@final
@dataclass(frozen=True)
class JournalState:
    """What a journal says: the tests started and not ended, and how many tests had ended."""

    running: tuple[tuple[str, str | None], ...]
    tests_finished: int | None
    updated_at: str | None

    def running_entries(self) -> list[dict[str, str | None]]:
        return [{"nodeid": nodeid, "ac": ac} for nodeid, ac in self.running]


def fold_journal(text: str) -> JournalState:
    """Fold journal lines in order; a line that does not parse (a write torn by the kill that
    ended the run) or names no test is skipped."""
    running: dict[str, str | None] = {}
    finished: int | None = None
    updated_at: str | None = None
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("nodeid"), str):
            continue
        nodeid, ac, at = entry["nodeid"], entry.get("ac"), entry.get("at")
        if entry.get("event") == _START:
            running[nodeid] = ac if isinstance(ac, str) else None
        elif entry.get("event") == _END:
            running.pop(nodeid, None)
            count = entry.get("finished")
            if isinstance(count, int) and not isinstance(count, bool):
                finished = count
        else:
            continue
        updated_at = at if isinstance(at, str) else updated_at
    return JournalState(tuple(sorted(running.items())), finished, updated_at)


def read_receipt(run_dir: Path) -> dict[str, JsonValue]:
    """``<run dir>/receipt.json`` as a reader should see it: a run still ``running`` (killed, or
    not over yet) has its journal folded in, naming every test started and not ended. Both are
    read through the safe reader; one that cannot be read is a ``BundleError`` naming it."""
    from pytest_specgate.evidence._bundle import (
        RECEIPT_NAME,
        BundleError,
        read_bundle_bytes,
        read_bundle_json,
    )

    path = run_dir / RECEIPT_NAME
    _, document = read_bundle_json(path)
    if not isinstance(document, dict):
        raise BundleError(f"{path}: expected a JSON object, found {type(document).__name__}")
    receipt: dict[str, JsonValue] = document
    journal = run_dir / JOURNAL_NAME
    if receipt.get("status") != RUNNING_STATUS or not journal.is_file():
        return receipt
    state = fold_journal(read_bundle_bytes(journal).decode("utf-8", errors="replace"))
    running = ", ".join(nodeid for nodeid, _ in state.running) or "nothing"
    receipt["running"] = state.running_entries()
    receipt["reasons"] = [f"run in progress; running: {running}"]
    if state.tests_finished is not None:
        receipt["tests_finished"] = state.tests_finished
    if state.updated_at is not None:
        receipt["updated_at"] = state.updated_at
    return receipt


def _string(text: str | None) -> str:
    """``text`` as a JSON value, as :func:`~pytest_specgate.evidence._jsonio.canonical_json` writes
    it (one C call, no mapping to sort)."""
    return "null" if text is None else _STRING_ENCODER.encode(text)


_STRING_ENCODER: Final = json.JSONEncoder(ensure_ascii=False)


@final
class RunJournal:
    """Appends redacted one-line JSON events to ``journal.jsonl`` through one open descriptor.

    Each event is a single ``write`` on an ``O_APPEND`` descriptor, which the kernel keeps
    whole when the process is killed; nothing is renamed and nothing is rewritten.
    """

    def __init__(self, path: Path, nodeid: NodeIdRedactor) -> None:
        """``nodeid``: the run's node-id redaction, shared with its records and receipt."""
        self.path = path
        self._nodeid = nodeid
        self._descriptor: int | None = None

    def started(self, nodeid: str, ac: str | None, at: str) -> None:
        """``ac``: the test's AC id, written as its record and the receipt hold it (the ``ac``
        marker allows only ``AC-12``/``FR-3.1`` forms, nothing a redaction rule is for)."""
        self._append(f'{{"ac":{_string(ac)},"at":{_string(at)},"event":"{_START}",'
                     f'"nodeid":{_string(self._nodeid(nodeid))}}}\n')

    def ended(self, nodeid: str, tests_finished: int, at: str) -> None:
        self._append(f'{{"at":{_string(at)},"event":"{_END}","finished":{int(tests_finished)},'
                     f'"nodeid":{_string(self._nodeid(nodeid))}}}\n')

    def _append(self, line: str) -> None:
        """``line``: one event as canonical JSON (keys sorted, compact), its words the journal's
        own, its node id already redacted."""
        if self._descriptor is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        os.write(self._descriptor, line.encode())

    def close(self, *, remove: bool) -> None:
        """Close the descriptor; ``remove``: the final receipt is written, the journal is spent."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
        if remove:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
