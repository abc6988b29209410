"""What an engine can do beyond serving requests, as types a spec asks for by name.

A backend declares its extra abilities in ``Engine.capabilities()``: each field is
an object implementing one small protocol, or None when the backend cannot do
it. Specs and qualification read these fields instead of probing attributes, so
"the mock can swap, mlx cannot" is a typed fact the type checker sees, and a
missing ability is a reason a spec can name (:meth:`Capabilities.require`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, final

__all__ = [
    "Capabilities",
    "EngineProcess",
    "FaultInjection",
    "MissingCapability",
    "RawStatus",
    "TelemetryReset",
    "WarmSwap",
]


class TelemetryReset(Protocol):
    """Starts a fresh telemetry window (the mock rolls it, vLLM re-baselines ``/metrics``)."""

    def reset_telemetry(self) -> None: ...


class FaultInjection(Protocol):
    """Arms a transient server-side fault for the next ``count`` generation requests."""

    def inject_fault(
        self, kind: str, *, count: int = 1, seconds: float | None = None, after_chunks: int = 2
    ) -> Mapping[str, object]: ...

    def clear_faults(self) -> Mapping[str, object]: ...


class WarmSwap(Protocol):
    """Replaces the target model while the server keeps running."""

    def swap(self, target: str, *, vocab: str | None = None) -> Mapping[str, object]: ...


class EngineProcess(Protocol):
    """The operating-system process serving the engine (its own group, so teardown is provable)."""

    @property
    def pid(self) -> int | None: ...

    def returncode(self) -> int | None: ...


class RawStatus(Protocol):
    """The backend's own status body (the mock's ``/v1/status``), field names as served."""

    def status(self) -> dict[str, object]: ...


_Ability = TypeVar("_Ability")


class MissingCapability(Exception):
    """A spec asked an engine for an ability its backend does not have."""


@final
@dataclass(frozen=True)
class Capabilities:
    """An engine's abilities; None means the backend cannot do it (never "maybe").

    ``log`` is the file the engine writes its log to, where it has one.
    """

    telemetry_reset: TelemetryReset | None = None
    faults: FaultInjection | None = None
    swap: WarmSwap | None = None
    process: EngineProcess | None = None
    raw_status: RawStatus | None = None
    log: Path | None = None

    @staticmethod
    def require(ability: _Ability | None, backend: str, what: str) -> _Ability:
        """``ability`` itself, or MissingCapability naming the backend and what was wanted."""
        if ability is None:
            raise MissingCapability(f"the {backend} engine has no {what}")
        return ability
