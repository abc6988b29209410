"""vLLM speculative-decoding telemetry from its Prometheus ``/metrics`` text.

vLLM only exposes cumulative counters since process start, so a spec that reads
them directly would count every earlier test's drafts. Everything here works on
*deltas* between two snapshots; the parser is a small pure function so the same
code is tested against recorded text and used against a live server.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ACCEPTED_PER_POSITION_TOTAL",
    "ACCEPTED_TOTAL",
    "DRAFTS_TOTAL",
    "DRAFT_TOKENS_TOTAL",
    "MetricsParseError",
    "Sample",
    "SpecDecodeCounters",
    "SpecDecodeWindow",
    "parse_prometheus_text",
    "spec_decode_counters",
    "spec_decode_window",
]

DRAFTS_TOTAL: Final = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS_TOTAL: Final = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED_TOTAL: Final = "vllm:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POSITION_TOTAL: Final = "vllm:spec_decode_num_accepted_tokens_per_pos_total"

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|\})')
_ESCAPES: Final = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_SPECIAL_VALUES: Final = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}


class MetricsParseError(ValueError):
    """A ``/metrics`` line is not Prometheus text format; the message quotes it."""


@dataclass(frozen=True)
class Sample:
    """One sample line: ``name{labels} value``."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        for name, value in self.labels:
            if name == key:
                return value
        return None


def _unescape(raw: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)], raw)


def _parse_value(token: str, line_no: int, line: str) -> float:
    if token in _SPECIAL_VALUES:
        return _SPECIAL_VALUES[token]
    try:
        return float(token)
    except ValueError:
        raise MetricsParseError(
            f"/metrics line {line_no}: value {token!r} is not a number in {line!r}"
        ) from None


def _parse_labels(text: str, line_no: int, line: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """Labels from just after ``{`` up to ``}``; returns them and the rest of the line."""
    labels: list[tuple[str, str]] = []
    position = 0
    if text.lstrip().startswith("}"):
        return (), text.lstrip()[1:]
    while True:
        match = _LABEL.match(text, position)
        if match is None:
            raise MetricsParseError(f"/metrics line {line_no}: malformed labels in {line!r}")
        labels.append((match.group(1), _unescape(match.group(2))))
        position = match.end()
        if match.group(3) == "}":
            return tuple(sorted(labels)), text[position:]
        if text[position:].lstrip().startswith("}"):
            return tuple(sorted(labels)), text[position:].lstrip()[1:]


def _parse_sample(line: str, line_no: int) -> Sample:
    name_match = _METRIC_NAME.match(line)
    if name_match is None:
        raise MetricsParseError(f"/metrics line {line_no}: no metric name in {line!r}")
    rest = line[name_match.end() :]
    labels: tuple[tuple[str, str], ...] = ()
    if rest.startswith("{"):
        labels, rest = _parse_labels(rest[1:], line_no, line)
    tokens = rest.split()
    if not tokens or len(tokens) > 2:
        raise MetricsParseError(
            f"/metrics line {line_no}: expected 'value [timestamp]' after the name in {line!r}"
        )
    return Sample(name_match.group(0), labels, _parse_value(tokens[0], line_no, line))


def parse_prometheus_text(text: str) -> tuple[Sample, ...]:
    """Every sample in a Prometheus text exposition (``# HELP``/``# TYPE`` lines skipped)."""
    samples: list[Sample] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        samples.append(_parse_sample(line, line_no))
    return tuple(samples)


@dataclass(frozen=True)
class SpecDecodeCounters:
    """Cumulative spec-decode counters at one moment, summed over engines and models.

    ``present`` is False when the server exposes none of the counters (speculation
    off, or a vLLM without them): the counts are then zero but must not be reported
    as measurements.
    """

    present: bool
    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_per_position: tuple[tuple[int, int], ...]


def _total(samples: Iterable[Sample], name: str) -> tuple[bool, int]:
    values = [sample.value for sample in samples if sample.name == name]
    return bool(values), round(sum(values))


def spec_decode_counters(samples: Iterable[Sample]) -> SpecDecodeCounters:
    """Pick the spec-decode counters out of a parsed snapshot."""
    wanted = [s for s in samples if s.name.startswith("vllm:spec_decode_")]
    has_drafts, drafts = _total(wanted, DRAFTS_TOTAL)
    has_tokens, draft_tokens = _total(wanted, DRAFT_TOKENS_TOTAL)
    has_accepted, accepted = _total(wanted, ACCEPTED_TOTAL)
    per_position: dict[int, float] = {}
    for sample in wanted:
        position = sample.label("position")
        if sample.name == ACCEPTED_PER_POSITION_TOTAL and position is not None:
            per_position[int(position)] = per_position.get(int(position), 0.0) + sample.value
    return SpecDecodeCounters(
        present=has_drafts or has_tokens or has_accepted,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        accepted_per_position=tuple(
            (position, round(value)) for position, value in sorted(per_position.items())
        ),
    )


@dataclass(frozen=True)
class SpecDecodeWindow:
    """What happened between two snapshots: the only figures a spec should see."""

    present: bool
    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_per_position: tuple[tuple[int, int], ...]

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / drafted tokens; None when nothing was drafted."""
        if not self.present or self.draft_tokens <= 0:
            return None
        return self.accepted_tokens / self.draft_tokens

    @property
    def mean_acceptance_length(self) -> float | None:
        """1 + accepted / drafts: tokens emitted per target step, counting the bonus token."""
        if not self.present or self.drafts <= 0:
            return None
        return 1.0 + self.accepted_tokens / self.drafts

    @property
    def per_position_acceptance(self) -> tuple[tuple[int, float], ...]:
        """Share of drafts whose token at each position was accepted."""
        if not self.present or self.drafts <= 0:
            return ()
        return tuple((pos, count / self.drafts) for pos, count in self.accepted_per_position)

    def to_dict(self) -> dict[str, object]:
        return {
            "present": self.present,
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted_tokens": self.accepted_tokens,
            "accepted_per_position": [list(pair) for pair in self.accepted_per_position],
            "acceptance_rate": self.acceptance_rate,
            "mean_acceptance_length": self.mean_acceptance_length,
        }


def _position_deltas(before: Mapping[int, int], after: Mapping[int, int]) -> tuple[tuple[int, int], ...]:
    return tuple(
        (position, after.get(position, 0) - before.get(position, 0))
        for position in sorted(set(before) | set(after))
    )


def spec_decode_window(baseline: SpecDecodeCounters, now: SpecDecodeCounters) -> SpecDecodeWindow:
    """Counter deltas ``now - baseline``.

    A counter that went down means the server restarted between the snapshots;
    mixing two processes' counts would be an invented figure, so that is an error.
    """
    deltas = {
        "drafts": now.drafts - baseline.drafts,
        "draft_tokens": now.draft_tokens - baseline.draft_tokens,
        "accepted_tokens": now.accepted_tokens - baseline.accepted_tokens,
    }
    positions = _position_deltas(dict(baseline.accepted_per_position), dict(now.accepted_per_position))
    went_down = [name for name, delta in deltas.items() if delta < 0]
    went_down += [f"accepted_per_position[{pos}]" for pos, delta in positions if delta < 0]
    if went_down:
        raise ValueError(
            f"vLLM /metrics counters decreased between snapshots ({', '.join(went_down)}): "
            "the server restarted, so the window cannot be measured"
        )
    return SpecDecodeWindow(
        present=now.present,
        drafts=deltas["drafts"],
        draft_tokens=deltas["draft_tokens"],
        accepted_tokens=deltas["accepted_tokens"],
        accepted_per_position=positions,
    )
