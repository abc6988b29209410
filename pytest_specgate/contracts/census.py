"""The census of a run: every test carrying each AC in a full collection of the configured testpaths.

``plugin.census`` takes it (a second, in-process collection); evidence records keep each
AC's share of it, so the verdict can name the AC's tests that the run never collected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from pytest_specgate.contracts.jsonvalue import JsonValue

__all__ = ["Census", "census_to_json"]


@dataclass(frozen=True)
class Census:
    """``carriers``: node id -> AC id of every test carrying an ``ac`` marker in the full
    collection; ``errors``: collectors that failed there (their tests are unknown);
    ``problem``: why the census could not be taken at all."""

    testpaths: tuple[str, ...]
    carriers: Mapping[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    problem: str | None = None

    def of(self, ac_id: str) -> list[str]:
        """The node ids of ``ac_id``'s tests, sorted."""
        return list(self._by_ac.get(ac_id, ()))

    @cached_property
    def _by_ac(self) -> dict[str, tuple[str, ...]]:
        """AC id -> its node ids, sorted: built once, as every AC's record asks for its share."""
        grouped: dict[str, list[str]] = {}
        for nodeid, ac in self.carriers.items():
            grouped.setdefault(ac, []).append(nodeid)
        return {ac: tuple(sorted(nodeids)) for ac, nodeids in grouped.items()}


def census_to_json(census: Census, ac_id: str) -> dict[str, JsonValue]:
    """What one AC's record keeps of the census: its own tests, the errors and the problem."""
    return {
        "testpaths": list(census.testpaths),
        "tests": census.of(ac_id),
        "errors": list(census.errors),
        "problem": census.problem,
    }
