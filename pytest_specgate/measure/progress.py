"""A progress line for long measurements, so a five-minute canary never looks hung.

The reporter writes to any text stream (the plugin hands it the terminal) and is
throttled: nothing during the first few seconds, then at most one line per interval.
The clock is injected so tests never sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


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
