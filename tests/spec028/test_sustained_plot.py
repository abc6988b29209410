"""The AC-10 sustained-window plot is a valid PNG and its series holds both arms over time."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from readme_run import BundleRun

from pytest_specgate.evidence import load_bundle, read_records

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _attachment(run: BundleRun, name: str) -> Path:
    record = dict(read_records(load_bundle(run.bundle))["AC-10"].document)
    paths = [row["path"] for row in record["attachments"] if row["name"] == name]
    assert len(paths) == 1, f"AC-10 attachments: {[row['name'] for row in record['attachments']]}"
    return run.bundle / str(paths[0])


def test_plot_is_a_png_of_plausible_size(readme_bundle: BundleRun) -> None:
    data = _attachment(readme_bundle, "ac10-sustained.png").read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (900, 480)
    assert len(data) > 10_000, "a plot with two series and a legend is not this small"


def test_series_has_both_arms_over_time(readme_bundle: BundleRun) -> None:
    data = json.loads(_attachment(readme_bundle, "ac10-sustained.json").read_text(encoding="utf-8"))
    series = data["series"]
    assert set(series) == {"baseline", "candidate"}
    for arm, points in series.items():
        assert len(points) >= 3, f"{arm}: {points}"
        times = [point["t_s"] for point in points]
        assert times == sorted(times) and times[-1] > times[0], f"{arm}: {times}"
        assert all(point["tokens_per_s"] > 0 for point in points), arm
    assert data["settings"]["scale"] == 0.02
