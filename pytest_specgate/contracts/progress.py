"""Where the running test's long steps report progress: set by the plugin, read by the runners.

A paired run, a sustained window, an engine boot, a tiny-model build or a weights download
can take minutes; the plugin shows their
progress through pytest's terminal reporter. The runners cannot take a terminal argument
everywhere they are called, so the plugin sets a factory for the running test here
(:func:`reporting_progress`) and a long step asks :func:`progress_for`: None outside pytest,
under ``-q`` and on xdist workers, where nobody reads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Protocol

__all__ = ["ProgressFactory", "StepProgress", "progress_for", "reporting_progress"]


class StepProgress(Protocol):
    """A long step's progress: counted rounds (``update``/``finish``), elapsed time (``tick``)
    or bytes moved (``transferred``, a download)."""

    def update(self, requests_done: int, current_speedup: float | None) -> None: ...

    def finish(self, requests_done: int, current_speedup: float | None) -> None: ...

    def tick(self, *, done: bool = False, failed: bool = False) -> None: ...

    def transferred(self, done_bytes: int, total_bytes: int | None, *, done: bool = False) -> None: ...


ProgressFactory = Callable[[str, "float | None"], StepProgress]
"""``factory(label, planned_s)``: a reporter for one long step of the running test."""

_FACTORY: ContextVar[ProgressFactory | None] = ContextVar("specgate_progress", default=None)


def progress_for(label: str, planned_s: float | None = None) -> StepProgress | None:
    """Where a long step of the running test reports (None when nobody reads it)."""
    factory = _FACTORY.get()
    return None if factory is None else factory(label, planned_s)


@contextlib.contextmanager
def reporting_progress(factory: ProgressFactory | None) -> Iterator[None]:
    """Long steps inside the block report through ``factory`` (the plugin wraps each test)."""
    token = _FACTORY.set(factory)
    try:
        yield
    finally:
        _FACTORY.reset(token)
