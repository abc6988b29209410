from __future__ import annotations

import io

from measure_fakes import FakeClock

from pytest_specgate.measure.progress import (
    ProgressReporter,
    format_bytes,
    format_progress_line,
    format_transfer_line,
)


def test_line_format() -> None:
    assert format_progress_line("AC-10 sustained", 42.4, 36, 1.523, 300.0) == (
        "AC-10 sustained: 42s/300s elapsed, 36 requests, speedup 1.52x"
    )
    assert format_progress_line("AC-10", 3.0, 0, None) == (
        "AC-10: 3s elapsed, 0 requests, speedup n/a"
    )


def test_transfer_line_format() -> None:
    assert [format_bytes(n) for n in (512, 8_600, 12_000_000, 1_200_000_000)] == [
        "512 B", "8.6 kB", "12.0 MB", "1.2 GB",
    ]
    assert format_transfer_line("download org/m", 4.0, 12_000_000, 48_000_000) == (
        "download org/m: 12.0 MB of 48.0 MB, 3.0 MB/s"
    )
    assert format_transfer_line("download org/m", 0.0, 0, None) == "download org/m: 0 B, n/a"


def test_a_transfer_stays_quiet_then_throttles_and_closes(clock: FakeClock) -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, label="dl", clock=clock, quiet_s=3.0, min_interval_s=5.0)
    for done in range(1, 11):
        clock.advance(1.0)
        reporter.transferred(done * 1000, 10_000)
    reporter.transferred(10_000, 10_000, done=True)
    assert stream.getvalue().splitlines() == [
        "dl: 3.0 kB of 10.0 kB, 1.0 kB/s",
        "dl: 8.0 kB of 10.0 kB, 1.0 kB/s",
        "dl: 10.0 kB of 10.0 kB, 1.0 kB/s (done)",
    ]


def test_short_runs_stay_silent(clock: FakeClock) -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, label="AC-10", clock=clock, quiet_s=3.0)
    for done in range(1, 6):
        clock.advance(0.5)
        reporter.update(done, 1.5)
    reporter.finish(5, 1.5)
    assert stream.getvalue() == ""
    assert not reporter.lines_written


def test_at_most_one_line_per_interval(clock: FakeClock) -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, label="AC-10", clock=clock, quiet_s=3.0,
                                min_interval_s=1.0)
    for done in range(1, 41):  # 40 updates, 0.25 s apart: 0.25 s .. 10 s
        clock.advance(0.25)
        reporter.update(done, 1.4)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "AC-10: 3s elapsed, 12 requests, speedup 1.40x"
    assert len(lines) == 8  # at 3, 4, ..., 10 s
    assert lines[-1] == "AC-10: 10s elapsed, 40 requests, speedup 1.40x"


def test_finish_writes_a_closing_line_once_progress_was_shown(clock: FakeClock) -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, label="AC-10", planned_s=300.0, clock=clock,
                                quiet_s=0.0)
    clock.advance(5.0)
    reporter.update(4, None)
    clock.advance(0.2)
    reporter.finish(6, 1.61)
    assert stream.getvalue().splitlines() == [
        "AC-10: 5s/300s elapsed, 4 requests, speedup n/a",
        "AC-10: 5s/300s elapsed, 6 requests, speedup 1.61x (done)",
    ]
