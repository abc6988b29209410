"""Speculative-decoding telemetry as deltas of the vLLM ``/metrics`` counters.

vLLM only exposes cumulative counters since process start, so a spec that read
them directly would count every earlier test's drafts. Everything here works on
*deltas* between two snapshots. The vllm backend and the endpoint backend (a
vLLM someone else runs, whose ``/v1/status`` lacks the spec-decode fields) share
it, so both measure a window the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from pytest_specgate.contracts.engine import Telemetry
from pytest_specgate.contracts.wire import SPEC_DECODE_METRIC_PREFIX, VllmMetric
from pytest_specgate.engines.prometheus import Sample, parse_prometheus_text

__all__ = [
    "ACCEPTED_PER_POSITION_TOTAL",
    "ACCEPTED_TOTAL",
    "DRAFTS_TOTAL",
    "DRAFT_TOKENS_TOTAL",
    "SpecDecodeCounters",
    "SpecDecodeTelemetry",
    "SpecDecodeWindow",
    "spec_decode_counters",
    "spec_decode_window",
]

DRAFTS_TOTAL: Final = VllmMetric.SPEC_DECODE_DRAFTS_TOTAL
DRAFT_TOKENS_TOTAL: Final = VllmMetric.SPEC_DECODE_DRAFT_TOKENS_TOTAL
ACCEPTED_TOTAL: Final = VllmMetric.SPEC_DECODE_ACCEPTED_TOTAL
ACCEPTED_PER_POSITION_TOTAL: Final = VllmMetric.SPEC_DECODE_ACCEPTED_PER_POSITION_TOTAL


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
    """Pick the spec-decode counters out of a parsed snapshot (``*_created`` gauges are not counters)."""
    wanted = [s for s in samples if s.name.startswith(SPEC_DECODE_METRIC_PREFIX)]
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


def positions_from_zero(counts: tuple[tuple[int, int], ...]) -> tuple[int, ...] | None:
    """vLLM's ``position`` labels count from 0; the counts in position order with gaps as 0,
    or None when the server exports no per-position counter."""
    if not counts:
        return None
    by_position = dict(counts)
    return tuple(by_position.get(position, 0) for position in range(max(by_position) + 1))


class SpecDecodeTelemetry:
    """Spec-decode telemetry as ``/metrics`` deltas since the last :meth:`reset`.

    The baseline is taken at construction (once the server is healthy), so
    warm-up traffic from earlier tests never counts; :meth:`window` adds what
    :class:`Telemetry` has no field for (mean acceptance length, per-position
    acceptance). vLLM only exposes the counters while speculating, so counters
    that are present also mean speculation is enabled.
    """

    def __init__(
        self,
        fetch_text: Callable[[], str],
        *,
        enabled: bool,
        draft_model_id: str | None,
        num_draft_tokens: int | None,
    ) -> None:
        self._fetch = fetch_text
        self._enabled = enabled
        self._draft_model_id = draft_model_id
        self._num_draft_tokens = num_draft_tokens
        self._baseline = self._snapshot()

    def _snapshot(self) -> SpecDecodeCounters:
        return spec_decode_counters(parse_prometheus_text(self._fetch()))

    def reset(self) -> None:
        self._baseline = self._snapshot()

    def window(self) -> SpecDecodeWindow:
        return spec_decode_window(self._baseline, self._snapshot())

    def telemetry(self) -> Telemetry:
        window = self.window()
        if not window.present:
            return Telemetry.unavailable(
                enabled=self._enabled,
                draft_model_id=self._draft_model_id,
                num_draft_tokens=self._num_draft_tokens,
            )
        return Telemetry(
            available=True,
            enabled=True,
            draft_model_id=self._draft_model_id,
            num_draft_tokens=self._num_draft_tokens,
            drafted=window.draft_tokens,
            accepted=window.accepted_tokens,
            acceptance_rate=window.acceptance_rate,
            window="delta:/metrics",
            source="/metrics",
            drafts=window.drafts,
            accepted_per_position=positions_from_zero(window.accepted_per_position),
        )
