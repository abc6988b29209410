"""Names on the wire, spelled once: vLLM metric names, ``/v1/status`` keys and mock fault kinds.

The mock engine produces them and the telemetry readers and qualification gates
consume them; both sides import these enums, so a renamed counter or key breaks
at import, not as a silently missing figure.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "SPEC_DECODE_METRIC_PREFIX",
    "FaultKind",
    "SlotKey",
    "StatusKey",
    "VllmMetric",
]

SPEC_DECODE_METRIC_PREFIX: Final = "vllm:spec_decode_"


class VllmMetric(StrEnum):
    """vLLM ``/metrics`` names the plugin reads (and the mock serves)."""

    NUM_REQUESTS_RUNNING = "vllm:num_requests_running"
    PROMPT_TOKENS_TOTAL = "vllm:prompt_tokens_total"
    GENERATION_TOKENS_TOTAL = "vllm:generation_tokens_total"
    REQUEST_SUCCESS_TOTAL = "vllm:request_success_total"
    SPEC_DECODE_DRAFTS_TOTAL = "vllm:spec_decode_num_drafts_total"
    SPEC_DECODE_DRAFT_TOKENS_TOTAL = "vllm:spec_decode_num_draft_tokens_total"
    SPEC_DECODE_ACCEPTED_TOTAL = "vllm:spec_decode_num_accepted_tokens_total"
    SPEC_DECODE_ACCEPTED_PER_POSITION_TOTAL = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


class StatusKey(StrEnum):
    """Top-level keys of the mock's ``/v1/status`` body (``spec_decode_*`` only on a speculating build)."""

    OBJECT = "object"
    MODEL = "model"
    VOCAB = "vocab"
    SPEC_DECODE_ENABLED = "spec_decode_enabled"
    SPEC_DECODE_DRAFT_MODEL_ID = "spec_decode_draft_model_id"
    SPEC_DECODE_NUM_DRAFT_TOKENS = "spec_decode_num_draft_tokens"
    SPEC_DECODE_DRAFTED_SINCE_LAST = "spec_decode_drafted_tokens_since_last"
    SPEC_DECODE_ACCEPTED_SINCE_LAST = "spec_decode_accepted_tokens_since_last"
    SPEC_DECODE_ACCEPTANCE_RATE = "spec_decode_acceptance_rate"
    SPEC_DECODE_DRAFTS_SINCE_LAST = "spec_decode_num_drafts_since_last"
    SPEC_DECODE_DRAFT_FAILURES_SINCE_LAST = "spec_decode_draft_failures_since_last"
    SPEC_DECODE_ACCEPTED_PER_POSITION_SINCE_LAST = "spec_decode_accepted_per_position_since_last"
    SPEC_DECODE_ALPHA = "spec_decode_alpha"
    WINDOW = "window"
    PREVIOUS_WINDOW = "previous_window"
    ROLLS = "rolls"
    SWAPS = "swaps"
    ROLL_PERIOD_S = "roll_period_s"
    SLOTS = "slots"
    FAULTS = "faults"
    VIOLATIONS = "violations"
    GATED_FEATURES = "gated_features"
    PID = "pid"


class SlotKey(StrEnum):
    """Keys of the ``slots`` object inside ``/v1/status``."""

    ACTIVE = "active"
    PEAK = "peak"
    FREED_TOTAL = "freed_total"
    CANCELLED_TOTAL = "cancelled_total"


class FaultKind(StrEnum):
    """Transient faults the mock engine can arm (``--fault``, ``faults=``, ``POST /admin/faults``)."""

    RESET = "reset"
    STALL = "stall"
    LATE_REPLY = "late-reply"
    ERROR_500 = "error-500"
    CRASH = "crash"
    DRAFT_FAILURE = "draft-failure"
