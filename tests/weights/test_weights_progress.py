"""A download through the fake hub reports its bytes and rate to the running test's progress."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

from hubfake import FakeRepo, running_fake_hub

from pytest_specgate.contracts.progress import StepProgress, reporting_progress
from pytest_specgate.fetching.weights import fetch_verified
from pytest_specgate.measure.progress import ProgressReporter, format_bytes


def test_a_download_reports_bytes_of_the_total_and_a_rate(public_repo: FakeRepo, models_dir: Path) -> None:
    stream = io.StringIO()
    ticks = itertools.count(0.0, 2.0)

    def factory(label: str, planned_s: float | None) -> StepProgress:
        return ProgressReporter(stream, label=label, planned_s=planned_s, clock=lambda: next(ticks),
                                min_interval_s=0.0)

    with running_fake_hub([public_repo]) as hub, reporting_progress(factory):
        snapshot = fetch_verified(public_repo.repo_id, "main", models_dir / "target", endpoint=hub.base_url)

    total = format_bytes(sum(file.size for file in snapshot.files))
    lines = stream.getvalue().splitlines()
    assert lines, "a download past the quiet seconds writes lines"
    assert all(line.startswith(f"download {public_repo.repo_id}: ") for line in lines)
    assert all(f" of {total}, " in line and line.split(", ")[1].endswith("/s") for line in lines[:-1])
    assert lines[-1].startswith(f"download {public_repo.repo_id}: {total} of {total}, ")
    assert lines[-1].endswith("/s (done)")

