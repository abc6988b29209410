"""Glue for the ``qualification`` and ``boot_engine`` fixtures registered in ``plugin.py``.

``qualification`` must be able to refuse a run *before* an engine boots, so it
cannot depend on the ``engine`` fixture (which boots during setup). Specs pass
``boot=`` a callable instead - usually from ``boot_engine``, which boots from
the test's ``@pytest.mark.engine(...)`` and closes what it booted at teardown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from pytest_specgate.qualification._budget import DEFAULT_HOLD_LIMIT_S, GateSpec
from pytest_specgate.qualification._session import CHECKPOINTS_NAME, NoteTaker, QualificationSession

if TYPE_CHECKING:

    from pytest_specgate.evidence import Redactor

__all__ = [
    "QUALIFICATION_DIR_NAME",
    "QualificationFactory",
    "qualification_directories",
    "qualification_factory",
]

QUALIFICATION_DIR_NAME: Final = "qualification"
"""Sessions live in ``<evidence dir>/qualification/<test>/<run id>/<session>/`` (``<test>`` as
:func:`folder_of_test` spells it), outside every
bundle directory (a bundle holds only what its manifest lists); the files are attached to the
test's evidence, so the bundle carries them hash-bound too."""

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_CHARS: Final = 40
BootedT = TypeVar("BootedT")


def folder_of_test(nodeid: str) -> str:
    """``test_engine_pair_qualifies-8b9a94ee``: the test's own name (without its file, at most 40
    characters) and 8 hex digits of the sha256 of its node id, which keep two tests apart."""
    readable = _UNSAFE.sub("_", nodeid.rsplit("::", 1)[-1]).strip("._")[:_NAME_CHARS].rstrip("._") or "test"
    return f"{readable}-{hashlib.sha256(nodeid.encode()).hexdigest()[:8]}"


def qualification_directories(
    nodeid: str, tmp_path: Path, evidence_dir: Path | None, run_id: str | None
) -> tuple[Path, Path | None]:
    """This run's directory for the test's sessions, and the previous run's (for MEASURED prices)."""
    if evidence_dir is None or run_id is None:
        return tmp_path / QUALIFICATION_DIR_NAME, None
    test_root = evidence_dir / QUALIFICATION_DIR_NAME / folder_of_test(nodeid)
    earlier = (
        sorted(p for p in test_root.glob("*") if p.is_dir() and p.name < run_id) if test_root.is_dir() else []
    )
    return test_root / run_id, earlier[-1] if earlier else None


class QualificationFactory:
    """What the ``qualification`` fixture returns: ``qualification(gates, boot=...)`` makes a session."""

    def __init__(
        self,
        directory: Path,
        *,
        previous_directory: Path | None = None,
        source_commit: str | None = None,
        redactor: Redactor | None = None,
        recorder: NoteTaker | None = None,
        hold_limit_s: float = DEFAULT_HOLD_LIMIT_S,
    ) -> None:
        self.directory = directory
        self.previous_directory = previous_directory
        self.source_commit = source_commit
        self.hold_limit_s = hold_limit_s
        self._redactor = redactor
        self._recorder = recorder
        self._sessions: list[QualificationSession[object]] = []

    def __call__(
        self,
        gates: Sequence[GateSpec],
        *,
        boot: Callable[[], BootedT] | None = None,
        name: str = "session",
        hold_limit_s: float | None = None,
    ) -> QualificationSession[BootedT]:
        if any(session.directory.name == name for session in self._sessions):
            raise ValueError(f"qualification session {name!r} already exists in this test; pass name=")
        history = self.previous_directory / name / CHECKPOINTS_NAME if self.previous_directory else None
        session = QualificationSession(
            self.directory / name,
            gates,
            source_commit=self.source_commit,
            hold_limit_s=self.hold_limit_s if hold_limit_s is None else hold_limit_s,
            history_path=history,
            boot=boot,
            redactor=self._redactor,
            recorder=self._recorder,
        )
        self._sessions.append(session)  # type: ignore[arg-type]
        return session

    def close(self) -> None:
        for session in self._sessions:
            session.close()


@contextmanager
def qualification_factory(
    *,
    nodeid: str,
    tmp_path: Path,
    evidence_dir: Path | None = None,
    run_id: str | None = None,
    rootdir: Path | None = None,
    redactor: Redactor | None = None,
    recorder: NoteTaker | None = None,
    hold_limit_s: float = DEFAULT_HOLD_LIMIT_S,
) -> Iterator[QualificationFactory]:
    """The fixture body: sessions in the evidence dir when there is one, else under ``tmp_path``."""
    directory, previous = qualification_directories(nodeid, tmp_path, evidence_dir, run_id)
    commit = None
    if rootdir is not None:
        from pytest_specgate.evidence import probe_source

        commit = probe_source(rootdir, exclude=evidence_dir).commit
    factory = QualificationFactory(
        directory,
        previous_directory=previous,
        source_commit=commit,
        redactor=redactor,
        recorder=recorder,
        hold_limit_s=hold_limit_s,
    )
    try:
        yield factory
    finally:
        factory.close()
