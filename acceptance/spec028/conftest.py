"""Spec-local fixtures of SPEC-028: the backend's profile, shared engines, duration scale, terminal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from spec028_backends import BackendProfile, profile_for
from spec028_checks import TerminalLines

from pytest_specgate.engines import Engine, EngineConfig, EnginePool
from pytest_specgate.engines.config import engine_workdir
from pytest_specgate.plugin import SETTINGS_KEY

_NAMED_FIELDS = frozenset({"backend", "target", "draft", "num_draft_tokens"})


@pytest.fixture
def spec028(engine_config: EngineConfig) -> BackendProfile:
    """How this run's backend (``--specgate-engine``) is put into each SPEC-028 situation."""
    return profile_for(engine_config.backend)


def changed_config(base: EngineConfig, changes: dict[str, object]) -> EngineConfig:
    """``base`` with named fields replaced and the other changes set as backend options."""
    named = {key: value for key, value in changes.items() if key in _NAMED_FIELDS}
    options = {key: value for key, value in changes.items() if key not in _NAMED_FIELDS}
    return dataclasses.replace(base, **named).with_options(**options)  # type: ignore[arg-type]


@pytest.fixture
def shared_engine(engine_config: EngineConfig, specgate_engine_pool: EnginePool,
                  tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Engine]:
    """``shared_engine(**changes)``: like ``boot_engine`` but pooled for the session.

    For specs that only send requests and read telemetry deltas; a spec that
    swaps, rolls, injects faults or times an engine boots its own.
    """
    base = tmp_path_factory.getbasetemp() / "specgate-engines"

    def get(**changes: object) -> Engine:
        config = changed_config(engine_config, changes)
        return specgate_engine_pool.get(config, engine_workdir(base, config))

    return get


@pytest.fixture
def duration_scale(request: pytest.FixtureRequest) -> float:
    """``--specgate-duration-scale``: 1 on a qualifying run, e.g. 0.02 on the mock in CI."""
    scale: float = request.config.stash[SETTINGS_KEY].duration_scale
    return scale


@pytest.fixture
def terminal_lines(request: pytest.FixtureRequest) -> TerminalLines:
    """Progress lines for long runs, written to the terminal even while output is captured."""
    return TerminalLines(request.config)
