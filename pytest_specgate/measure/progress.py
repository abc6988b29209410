"""A progress line for long measurements, so a five-minute canary never looks hung.

The reporter writes to any text stream (the plugin hands it pytest's terminal) and is
throttled: nothing during the first few seconds, then at most one line per interval.
The clock is injected so tests never sleep.

Inside pytest the plugin sets, for the running test, where long steps report
(``contracts.progress``); ``run_paired``, ``run_sustained`` and engine boots ask
``progress_for`` and get None outside pytest, under ``-q`` and on xdist workers.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from pytest_specgate.contracts.progress import progress_for

__all__ = [
    "ProgressReporter",
    "ProgressSink",
    "TextSink",
    "format_progress_line",
    "progress_ticker",
]


class TextSink(Protocol):
    """Where lines go: a text stream, or an adapter over pytest's terminal reporter."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


class ProgressSink(Protocol):
    """What runners call; :class:`ProgressReporter` is the terminal implementation."""

    def update(self, requests_done: int, current_speedup: float | None) -> None: ...

    def finish(self, requests_done: int, current_speedup: float | None) -> None: ...


def format_progress_line(
    label: str,
    elapsed_s: float,
    requests_done: int,
    current_speedup: float | None,
    planned_s: float | None = None,
) -> str:
    """One line: ``AC-10 sustained: 42s/300s elapsed, 36 requests, speedup 1.52x``."""
    elapsed = f"{elapsed_s:.0f}s" if planned_s is None else f"{elapsed_s:.0f}s/{planned_s:.0f}s"
    speedup = "n/a" if current_speedup is None else f"{current_speedup:.2f}x"
    return f"{label}: {elapsed} elapsed, {requests_done} requests, speedup {speedup}"


class ProgressReporter:
    """Throttled progress lines on ``stream``.

    ``quiet_s`` keeps short runs silent; once a line has been written, ``finish``
    writes a closing line so the last state is always visible.
    """

    def __init__(
        self,
        stream: TextSink,
        *,
        label: str,
        planned_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        min_interval_s: float = 1.0,
        quiet_s: float = 3.0,
    ) -> None:
        self._stream = stream
        self._label = label
        self._planned_s = planned_s
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._quiet_s = quiet_s
        self._started = clock()
        self._last_written: float | None = None

    @property
    def lines_written(self) -> bool:
        return self._last_written is not None

    def update(self, requests_done: int, current_speedup: float | None) -> None:
        now = self._clock()
        elapsed = now - self._started
        if elapsed < self._quiet_s:
            return
        if self._last_written is not None and now - self._last_written < self._min_interval_s:
            return
        self._write(elapsed, requests_done, current_speedup)
        self._last_written = now

    def finish(self, requests_done: int, current_speedup: float | None) -> None:
        if self._last_written is None:
            return
        self._write(self._clock() - self._started, requests_done, current_speedup, done=True)

    def tick(self, *, done: bool = False) -> None:
        """A step without counts (an engine boot): ``label: 12s elapsed``, throttled like
        :meth:`update`; ``done=True`` closes a reported step."""
        now = self._clock()
        elapsed = now - self._started
        if done:
            if self._last_written is not None:
                self._stream.write(f"{self._label}: done in {elapsed:.0f}s\n")
                self._stream.flush()
            return
        if elapsed < self._quiet_s:
            return
        if self._last_written is not None and now - self._last_written < self._min_interval_s:
            return
        self._stream.write(f"{self._label}: {elapsed:.0f}s elapsed\n")
        self._stream.flush()
        self._last_written = now

    def _write(
        self,
        elapsed_s: float,
        requests_done: int,
        current_speedup: float | None,
        *,
        done: bool = False,
    ) -> None:
        line = format_progress_line(
            self._label, elapsed_s, requests_done, current_speedup, self._planned_s
        )
        self._stream.write(f"{line}{' (done)' if done else ''}\n")
        self._stream.flush()


@contextlib.contextmanager
def progress_ticker(label: str, *, interval_s: float = 1.0) -> Iterator[None]:
    """Elapsed-time lines while a blocking step runs (an engine boot), from a helper thread;
    silent when the step is short or nobody listens."""
    reporter = progress_for(label)
    if reporter is None:
        yield
        return
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(interval_s):
            reporter.tick()

    ticker = threading.Thread(target=tick, name="specgate-progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        reporter.tick(done=True)
