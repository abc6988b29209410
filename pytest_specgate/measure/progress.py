"""A progress line for long measurements, so a five-minute canary never looks hung.

The reporter writes to any text stream (the plugin hands it pytest's terminal) and is
throttled: nothing during the first few seconds, then at most one line per interval.
The clock is injected so tests never sleep.

Inside pytest the plugin sets, for the running test, where long steps report
(``contracts.progress``); ``run_paired``, ``run_sustained``, engine boots, tiny-model
builds and weight downloads ask
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
    "format_bytes",
    "format_progress_line",
    "format_transfer_line",
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


def format_bytes(count: float) -> str:
    """``512 B``, ``3.4 MB``, ``1.20 GB``: decimal units, as the hub lists file sizes."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def format_transfer_line(label: str, elapsed_s: float, done_bytes: int, total_bytes: int | None) -> str:
    """One line: ``download org/model: 12.0 MB of 48.0 MB, 4.0 MB/s``, the rate averaged
    over the step so far."""
    total = "" if total_bytes is None else f" of {format_bytes(total_bytes)}"
    rate = "n/a" if elapsed_s <= 0 else f"{format_bytes(done_bytes / elapsed_s)}/s"
    return f"{label}: {format_bytes(done_bytes)}{total}, {rate}"


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
        self._report(lambda elapsed: self._counted(elapsed, requests_done, current_speedup), done=False)

    def finish(self, requests_done: int, current_speedup: float | None) -> None:
        self._report(lambda elapsed: f"{self._counted(elapsed, requests_done, current_speedup)} (done)",
                     done=True)

    def tick(self, *, done: bool = False, failed: bool = False) -> None:
        """A step without counts (an engine boot, a tiny-model build): ``label: 12s elapsed``,
        throttled like :meth:`update`; ``done=True`` closes a reported step (``failed=True``
        too: ``label: failed after 8s``)."""
        def line(elapsed: float) -> str:
            if done:
                return f"{self._label}: {'failed after' if failed else 'done in'} {elapsed:.0f}s"
            return f"{self._label}: {elapsed:.0f}s elapsed"

        self._report(line, done=done)

    def transferred(self, done_bytes: int, total_bytes: int | None, *, done: bool = False) -> None:
        """Bytes moved so far (a download), throttled like :meth:`update`; ``done=True``
        closes a reported step with the final count."""
        self._report(lambda elapsed: format_transfer_line(self._label, elapsed, done_bytes, total_bytes)
                     + (" (done)" if done else ""), done=done)

    def _counted(self, elapsed_s: float, requests_done: int, current_speedup: float | None) -> str:
        return format_progress_line(self._label, elapsed_s, requests_done, current_speedup, self._planned_s)

    def _report(self, line: Callable[[float], str], *, done: bool) -> None:
        """``line(elapsed)`` once past the quiet seconds and a full interval after the last
        line; a closing line (``done``) only where lines were shown."""
        now = self._clock()
        elapsed = now - self._started
        if done:
            if self._last_written is None:
                return
        elif elapsed < self._quiet_s or (
            self._last_written is not None and now - self._last_written < self._min_interval_s
        ):
            return
        else:
            self._last_written = now
        self._stream.write(f"{line(elapsed)}\n")
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
    failed = True
    try:
        yield
        failed = False
    finally:
        stop.set()
        ticker.join()
        reporter.tick(done=True, failed=failed)
