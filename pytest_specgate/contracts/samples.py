"""The samples behind a recorded figure, noted beside it so a later run can be compared on data.

A figure alone (a median speedup of 1.52) cannot say whether another run's 1.47 is noise; the
pair speedups or request latencies it was computed from can. A spec notes them under the key
``<measurement>_samples`` (:func:`samples_note_key`); ``specgate compare`` resamples both runs'
samples and judges the change on the interval of the difference. The writer (``measure``) and
the judge (``evidence``) share this one shape.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_specgate.contracts.jsonvalue import JsonValue

__all__ = ["SAMPLES_NOTE_SUFFIX", "RecordedSamples", "SamplesError", "samples_note_key"]

SAMPLES_NOTE_SUFFIX = "_samples"
_STATISTIC = re.compile(r"^(median|mean|p(?:[1-9]|[1-9][0-9]))$")


class SamplesError(ValueError):
    """A samples note that is not of the documented shape: names the key and what was found."""


def samples_note_key(measurement: str) -> str:
    """The note key holding ``measurement``'s samples."""
    return measurement + SAMPLES_NOTE_SUFFIX


@dataclass(frozen=True)
class RecordedSamples:
    """``values`` whose ``statistic`` (``median``, ``mean`` or a percentile ``p1``..``p99``) is the
    figure, or the figure's closest sample-level counterpart; ``what`` says what one value is."""

    values: tuple[float, ...]
    statistic: str
    what: str

    def __post_init__(self) -> None:
        if not _STATISTIC.match(self.statistic):
            raise SamplesError(f"statistic {self.statistic!r}: expected median, mean or p1..p99")
        if not self.values or not all(math.isfinite(value) for value in self.values):
            raise SamplesError(f"{self.what}: expected at least one finite value")

    @property
    def percentile(self) -> float:
        """The statistic as a percentile (median is 50); mean has none (NaN)."""
        if self.statistic == "mean":
            return math.nan
        return 50.0 if self.statistic == "median" else float(self.statistic[1:])

    def to_dict(self) -> dict[str, JsonValue]:
        return {"statistic": self.statistic, "what": self.what, "values": list(self.values)}

    @classmethod
    def from_json(cls, value: JsonValue, where: str) -> RecordedSamples:
        values = value.get("values") if isinstance(value, Mapping) else None
        statistic = value.get("statistic") if isinstance(value, Mapping) else None
        what = value.get("what", "sample") if isinstance(value, Mapping) else None
        if (not isinstance(values, Sequence) or isinstance(values, str)
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
                or not isinstance(statistic, str) or not isinstance(what, str)):
            raise SamplesError(
                f"{where}: expected {{'statistic': 'median'|'mean'|'pNN', 'what': TEXT, 'values': [numbers]}}"
            )
        try:
            return cls(tuple(float(v) for v in values), statistic, what)
        except SamplesError as error:
            raise SamplesError(f"{where}: {error}") from None
