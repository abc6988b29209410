"""What is worked out from a run's facts, once per run, however many records hold them.

Every record joined from one ``run.json`` entry holds the run's one mapping of each run-wide
fact: its source state, its run, its host provenance, its selection. Typing such a fact record by
record did the same work 10,000 times for a bundle of 10,000 ACs (``_acrecord.RunTyping``).

:class:`LatestByIdentity` keeps the answers for the last few mappings it met, matched by identity
(never by value, which would cost what it saves), each mapping kept alive with its answer so its
id is never reused. It serves records read from files in one go, whose mappings nothing else
holds or changes, so an answer never goes stale; several runs read in turn (a merged bundle's)
each keep their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, final

Facts = TypeVar("Facts")
Answer = TypeVar("Answer")
RECENT_RUNS = 8
"""How many runs' answers are kept: a merged bundle holds the records of several runs."""


@final
class LatestByIdentity(Generic[Facts, Answer]):
    """``work(facts)`` for the last :data:`RECENT_RUNS` ``facts`` objects met, by identity."""

    def __init__(self, work: Callable[[Facts], Answer]) -> None:
        self._work = work
        self._recent: list[tuple[Facts, Answer]] = []

    def __call__(self, facts: Facts) -> Answer:
        for met, answer in self._recent:
            if met is facts:
                return answer
        answer = self._work(facts)
        self._recent = [(facts, answer), *self._recent[: RECENT_RUNS - 1]]
        return answer
