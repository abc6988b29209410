"""Helpers for the engine-conformance specs: more engines like the one under test.

The plugin's ``engine`` fixture gives one engine per test, configured by the
``@pytest.mark.engine(...)`` marker. The greedy-identity and teardown specs need
a second engine of the same backend (speculation off, or one the test may close);
:func:`engine_like` boots it from the same marker with fields replaced, and
closes it afterwards even when the test fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_specgate.engines import Engine, EngineConfig, boot_function, engine_config_from

EngineFactory = Callable[..., Engine]


def _marker_kwargs(node: pytest.Item) -> dict[str, object]:
    """Engine marker kwargs, the closest marker (function over module) winning per key."""
    merged: dict[str, object] = {}
    for marker in node.iter_markers("engine"):
        for key, value in marker.kwargs.items():
            merged.setdefault(key, value)
    return merged


@pytest.fixture
def engine_like(
    engine: Engine, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EngineFactory]:
    """``engine_like(draft=None)`` boots another engine of ``engine``'s backend."""
    booted: list[Engine] = []
    base_kwargs = _marker_kwargs(request.node)  # type: ignore[arg-type]

    def boot_another(**changes: object) -> Engine:
        kwargs = {**base_kwargs, **changes}
        config: EngineConfig = engine_config_from(
            {key: value for key, value in kwargs.items() if value is not None},
            {"engine": engine.backend},
            where=request.node.nodeid,
        )
        workdir: Path = tmp_path_factory.mktemp(f"{engine.backend}-engine")
        another = boot_function(config.backend)(config, workdir)
        booted.append(another)
        return another

    try:
        yield boot_another
    finally:
        for another in reversed(booted):
            another.close()
