"""The census of a run: every test carrying each AC in a full collection of the configured testpaths.

``plugin.census`` takes it (a second, in-process collection); evidence records keep each
AC's share of it, so the verdict can name the AC's tests that the run never collected.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.jsonvalue import JsonValue

__all__ = ["BASE_CENSUS_MODULE", "BASE_CENSUS_PREFIX", "PYTEST_CONFIG_NAMES", "Census", "census_to_json",
           "spec_paths_from", "uncovered_spec_paths"]

PYTEST_CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                       "tox.ini", "setup.cfg")
"""The names of pytest's configuration files at a project's root, in the order pytest prefers them
(``pytest.toml`` since pytest 9): a file added under any of them can take over the run's settings."""
BASE_CENSUS_MODULE = "pytest_specgate.plugin.base_census"
"""The module the gate runs (``python -m``) to take the census of the trusted commit's tree."""
BASE_CENSUS_PREFIX = "specgate-base-census "
"""What starts the base census's result line (JSON follows): the census prints it, the gate reads it."""


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


def spec_paths_from(
    specgate_table: Mapping[str, object], ini_testpaths: Sequence[str], where: str
) -> tuple[str, ...]:
    """Where an AC's tests may live: ``[tool.specgate] spec_paths`` (rootdir-relative paths or
    globs), else pytest's ``testpaths``, else the rootdir itself (``.``)."""
    paths = specgate_table.get("spec_paths")
    if paths is None:
        return tuple(ini_testpaths) or (".",)
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise SpecgateInputError(
            f"{where}: [tool.specgate] spec_paths must be a non-empty list of paths, got {paths!r}"
        )
    return tuple(paths)


def uncovered_spec_paths(collected: Sequence[str], required: Sequence[str]) -> list[str]:
    """The required spec paths (globs allowed) that no path the census collected covers: a path
    is covered by itself, by a folder above it, by the rootdir (``.``), or, for a glob, by a
    collected path it matches."""

    def covered(pattern: str) -> bool:
        wanted = pattern.strip("/") or "."
        return any(
            path in (".", wanted) or wanted.startswith(f"{path}/") or fnmatch.fnmatchcase(path, wanted)
            for path in (entry.strip("/") or "." for entry in collected)
        )

    return [pattern for pattern in required if not covered(pattern)]
