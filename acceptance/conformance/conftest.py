"""Helpers for the engine-conformance specs: more engines like the one under test.

The plugin's ``engine`` fixture gives one engine per test, configured by the
``@pytest.mark.engine(...)`` marker. The greedy-identity and teardown specs need
a second engine of the same backend (speculation off, or one the test may
close): :func:`engine_like` boots it from the same configuration with some
fields replaced, and closes it afterwards even when the test fails.

The configuration comes from the plugin's ``engine_config`` fixture when there
is one (it carries options the plugin adds, e.g. the interpreter that has
vLLM); otherwise it is rebuilt from the marker with ``engine``'s backend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest

from pytest_specgate.engines import Engine, EngineConfig, boot_function
from pytest_specgate.engines.config import engine_config_for_node

EngineFactory = Callable[..., Engine]


def _config_of(engine: Engine, request: pytest.FixtureRequest) -> EngineConfig:
    try:
        config = request.getfixturevalue("engine_config")
    except pytest.FixtureLookupError:
        node = request.node
        assert isinstance(node, pytest.Item)
        return engine_config_for_node(node, {"engine": engine.backend})
    assert isinstance(config, EngineConfig), f"engine_config fixture returned {config!r}"
    return config


@pytest.fixture
def engine_like(
    engine: Engine, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EngineFactory]:
    """``engine_like(draft=None, num_draft_tokens=None)`` boots another engine like ``engine``."""
    base = _config_of(engine, request)
    booted: list[Engine] = []

    def boot_another(**changes: object) -> Engine:
        config = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
        another = boot_function(config.backend)(config, tmp_path_factory.mktemp(config.backend))
        booted.append(another)
        return another

    try:
        yield boot_another
    finally:
        for another in reversed(booted):
            another.close()
