"""Evidence of recovery: the engine's request, slot and cancel counters, read before and after a fault.

A fault gate believes counters, not a 200: the request counter must advance,
the slot the fault held must be freed and a cancel counted as a cancel. The
names read are the wire names of :mod:`pytest_specgate.contracts.wire`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import is_whole
from pytest_specgate.contracts.wire import SlotKey, StatusKey, VllmMetric

__all__ = [
    "CounterProbe",
    "CounterReading",
    "FaultObservation",
    "HttpCounterProbe",
    "RecoveryNotEvidenced",
    "counter_problems",
]


class RecoveryNotEvidenced(AssertionError):
    """A fault gate failed; ``evidence`` is what it saw (a qualification gate records it)."""

    def __init__(self, message: str, evidence: Mapping[str, object]) -> None:
        super().__init__(message)
        self.evidence = dict(evidence)


@dataclass(frozen=True)
class CounterReading:
    """Engine counters at one moment; None where the engine does not expose the counter."""

    requests_total: int | None
    slots_active: int | None
    cancelled_total: int | None
    source: str

    def to_dict(self) -> dict[str, object]:
        return {
            "requests_total": self.requests_total,
            "slots_active": self.slots_active,
            "cancelled_total": self.cancelled_total,
            "source": self.source,
        }


class CounterProbe(Protocol):
    def read(self) -> CounterReading: ...


def _int_at(mapping: Mapping[str, object], key: str) -> int | None:
    value = mapping.get(key)
    return value if is_whole(value) else None


class HttpCounterProbe:
    """Counters from ``/metrics`` (vLLM names, also served by the mock) and the mock's ``/v1/status``."""

    def __init__(self, base_url: str, *, timeout_s: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str) -> str | None:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.base_url + path, timeout=self.timeout_s) as response:
                body: bytes = response.read()
        except (OSError, urllib.error.URLError):
            return None
        return body.decode("utf-8", errors="replace")

    def read(self) -> CounterReading:
        from pytest_specgate.contracts.validation import parse_json
        from pytest_specgate.engines.prometheus import MetricsParseError, metric_totals

        problems: list[str] = []
        metrics_text = self._get("/metrics")
        try:
            metrics = metric_totals(metrics_text) if metrics_text is not None else {}
        except MetricsParseError as error:
            metrics = {}
            problems.append(str(error))
        status_text = self._get("/v1/status")
        try:
            status = parse_json(status_text, "/v1/status") if status_text is not None else {}
        except SpecgateInputError as error:
            status = {}
            problems.append(str(error))
        slots = status.get(StatusKey.SLOTS) if isinstance(status, dict) else None
        slots = slots if isinstance(slots, Mapping) else {}
        requests = metrics.get(VllmMetric.REQUEST_SUCCESS_TOTAL)
        running = metrics.get(VllmMetric.NUM_REQUESTS_RUNNING)
        active = _int_at(slots, SlotKey.ACTIVE)
        sources = [name for name, found in (("/metrics", metrics), ("/v1/status", slots)) if found]
        return CounterReading(
            requests_total=None if requests is None else int(requests),
            slots_active=active if active is not None else (None if running is None else int(running)),
            cancelled_total=_int_at(slots, SlotKey.CANCELLED_TOTAL),
            source=(", ".join(sources) or "unavailable") + (f" ({'; '.join(problems)})" if problems else ""),
        )


@dataclass(frozen=True)
class FaultObservation:
    """What the client saw when the fault was provoked.

    ``expects_cancel`` is True when the engine was certainly mid-request when the
    client went away, so its cancel counter (where it has one) must advance.
    """

    provoked: bool
    detail: str
    expects_cancel: bool = False


def counter_problems(
    before: CounterReading,
    after_fault: CounterReading,
    after: CounterReading,
    observation: FaultObservation,
    settle_s: float,
) -> list[str]:
    """Slots back to where they were, the later request counted, the cancel counted as a cancel."""
    problems: list[str] = []
    if before.slots_active is not None and after.slots_active is not None:
        if after.slots_active > before.slots_active:
            problems.append(
                f"slot not freed: {after.slots_active} active after waiting {settle_s:g}s, "
                f"{before.slots_active} before the fault"
            )
    elif before.slots_active is not None:
        problems.append("slot counter disappeared after the fault")
    if after_fault.requests_total is not None and (
        after.requests_total is None or after.requests_total <= after_fault.requests_total
    ):
        problems.append(
            f"request counter did not advance for the request after the fault "
            f"({after_fault.requests_total} -> {after.requests_total})"
        )
    elif before.requests_total is not None and after_fault.requests_total is None:
        problems.append("request counter disappeared after the fault")
    if (
        observation.expects_cancel
        and before.cancelled_total is not None
        and (after.cancelled_total is None or after.cancelled_total <= before.cancelled_total)
    ):
        problems.append(
            f"the cancelled request was not counted as cancelled "
            f"({before.cancelled_total} -> {after.cancelled_total})"
        )
    return problems
