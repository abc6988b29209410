"""Run modes: what happens to a spec given its hardware verdict.

default     a host that does not match SKIPS the spec, naming every mismatch;
required    (``--specgate-require AC-10`` or ``all``) a mismatch is an ERROR:
            a required spec fails closed, it is never silently skipped;
diagnostic  (``--specgate-diagnostic``) hardware specs run on any host and the
            run never counts as qualifying.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, final

if TYPE_CHECKING:
    from pytest_specgate.contracts.hardware import HardwareVerdict

__all__ = ["REQUIRE_ALL", "RunAction", "RunDecision", "RunMode", "RunSettings", "decide_run"]

REQUIRE_ALL: Final = "all"


class RunAction(enum.Enum):
    RUN = "run"
    SKIP = "skip"
    ERROR = "error"


class RunMode(enum.Enum):
    DEFAULT = "default"
    REQUIRED = "required"
    DIAGNOSTIC = "diagnostic"


@final
@dataclass(frozen=True)
class RunSettings:
    """The mode flags of one session, resolved once from the command line."""

    required: frozenset[str] = frozenset()
    diagnostic: bool = False

    @property
    def require_all(self) -> bool:
        return REQUIRE_ALL in self.required

    @property
    def label(self) -> str:
        """The mode as the report header shows it."""
        if self.diagnostic:
            return "diagnostic"
        return f"require {', '.join(sorted(self.required))}" if self.required else "default"

    def is_required(self, ac_id: str | None) -> bool:
        return self.require_all or (ac_id is not None and ac_id in self.required)


@final
@dataclass(frozen=True)
class RunDecision:
    action: RunAction
    mode: RunMode
    message: str | None = None

    @property
    def skips(self) -> bool:
        return self.action is RunAction.SKIP

    @property
    def errors(self) -> bool:
        return self.action is RunAction.ERROR


def decide_run(verdict: HardwareVerdict | None, *, required: bool, diagnostic: bool) -> RunDecision:
    """Pure: the action and recorded mode of one spec (``verdict`` None = no hardware marker)."""
    if required and diagnostic:
        raise ValueError("a spec cannot be both required and diagnostic")
    mode = RunMode.REQUIRED if required else RunMode.DIAGNOSTIC if diagnostic else RunMode.DEFAULT
    if verdict is None or verdict.matched:
        return RunDecision(RunAction.RUN, mode)
    mismatch = verdict.mismatch_message()
    if required:
        return RunDecision(RunAction.ERROR, mode,
                           f"required by --specgate-require but the host does not match: {mismatch}")
    if diagnostic:
        return RunDecision(RunAction.RUN, mode,
                           f"diagnostic run on a non-matching host (non-qualifying): {mismatch}")
    return RunDecision(RunAction.SKIP, mode, f"hardware mismatch: {mismatch}")
