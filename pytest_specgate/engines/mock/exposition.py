"""What the mock says about itself: the ``/v1/status`` body and the ``/metrics`` exposition.

Key and metric names come from :mod:`pytest_specgate.contracts.wire`, the same
names the telemetry readers and the qualification probes look up.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pytest_specgate.contracts.engine import acceptance_rate_of
from pytest_specgate.contracts.wire import SlotKey, StatusKey, VllmMetric

if TYPE_CHECKING:
    from pytest_specgate.engines.mock.state import MockState

__all__ = ["metrics_text", "status_body"]


def per_position(accepted: list[int], gamma: int) -> list[int]:
    """Accepted counts at draft positions 1..gamma, zeros where no draft reached a position."""
    reached = list(accepted[:gamma])
    return reached + [0] * (gamma - len(reached))


def status_body(state: MockState) -> dict[str, object]:
    telemetry = state.telemetry
    window = telemetry.status_window()
    drafted = telemetry.window.drafted
    accepted = state.reported_accepted(telemetry.window.accepted)
    draft = state.draft
    body: dict[str, object] = {
        StatusKey.OBJECT: "status",
        StatusKey.MODEL: state.target.model_id,
        StatusKey.VOCAB: state.vocab.name,
    }
    if state.settings.speculation_support:
        body.update(
            {
                StatusKey.SPEC_DECODE_ENABLED: draft is not None,
                StatusKey.SPEC_DECODE_DRAFT_MODEL_ID: draft.model_id if draft else None,
                StatusKey.SPEC_DECODE_NUM_DRAFT_TOKENS: state.settings.num_draft_tokens if draft else None,
                StatusKey.SPEC_DECODE_DRAFTED_SINCE_LAST: drafted,
                StatusKey.SPEC_DECODE_ACCEPTED_SINCE_LAST: accepted,
                StatusKey.SPEC_DECODE_ACCEPTANCE_RATE: acceptance_rate_of(drafted, accepted),
                StatusKey.SPEC_DECODE_DRAFTS_SINCE_LAST: window["drafts"],
                StatusKey.SPEC_DECODE_ACCEPTED_PER_POSITION_SINCE_LAST: per_position(
                    telemetry.window.accepted_per_position, state.settings.num_draft_tokens
                ) if draft else None,
                StatusKey.SPEC_DECODE_DRAFT_FAILURES_SINCE_LAST: window["draft_failures"],
                StatusKey.SPEC_DECODE_ALPHA: draft.alpha if draft else None,
            }
        )
    slots = state.slots
    body.update(
        {
            StatusKey.WINDOW: window,
            StatusKey.PREVIOUS_WINDOW: telemetry.previous,
            StatusKey.ROLLS: telemetry.rolls,
            StatusKey.SWAPS: telemetry.swaps,
            StatusKey.ROLL_PERIOD_S: telemetry.roll_period_s,
            StatusKey.SLOTS: {
                SlotKey.ACTIVE: slots.active,
                SlotKey.PEAK: slots.peak,
                SlotKey.FREED_TOTAL: slots.freed,
                SlotKey.CANCELLED_TOTAL: slots.cancelled,
            },
            StatusKey.FAULTS: {
                "armed": state.faults.describe(),
                "fired": dict(state.faults.fired),
                "late_replies": state.late_replies.count,
                "late_replies_after_disconnect": state.late_replies.after_disconnect,
                "draft_failures_total": telemetry.totals.draft_failures,
            },
            StatusKey.VIOLATIONS: sorted(state.violations),
            StatusKey.GATED_FEATURES: list(state.settings.gated_features),
            StatusKey.PID: os.getpid(),
        }
    )
    return body


def metrics_text(state: MockState) -> str:
    totals = state.telemetry.totals
    label = f'model_name="{state.target.model_id}"'
    lines: list[str] = []

    def metric(name: VllmMetric, kind: str, help_text: str, samples: list[tuple[str, int]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{{{labels}}} {value}" for labels, value in samples)

    running = [(label, state.slots.active)]
    metric(VllmMetric.NUM_REQUESTS_RUNNING, "gauge", "Requests being generated.", running)
    counters = [
        (VllmMetric.PROMPT_TOKENS_TOTAL, "Prefill tokens processed.", totals.prompt_tokens),
        (VllmMetric.GENERATION_TOKENS_TOTAL, "Generation tokens processed.", totals.completion_tokens),
        (VllmMetric.REQUEST_SUCCESS_TOTAL, "Requests admitted.", totals.requests),
    ]
    if state.draft is not None:
        counters += [
            (VllmMetric.SPEC_DECODE_DRAFTS_TOTAL, "Speculative drafts.", totals.drafts),
            (VllmMetric.SPEC_DECODE_DRAFT_TOKENS_TOTAL, "Draft tokens.", totals.drafted),
            (VllmMetric.SPEC_DECODE_ACCEPTED_TOTAL, "Accepted tokens.",
             state.reported_accepted(totals.accepted)),
        ]
    for name, help_text, value in counters:
        metric(name, "counter", help_text, [(label, value)])
    if state.draft is not None:
        accepted_at = per_position(totals.accepted_per_position, state.settings.num_draft_tokens)
        metric(
            VllmMetric.SPEC_DECODE_ACCEPTED_PER_POSITION_TOTAL,
            "counter",
            "Accepted tokens per draft position.",
            [(f'{label},position="{position}"', count) for position, count in enumerate(accepted_at)],
        )
    return "\n".join(lines) + "\n"
