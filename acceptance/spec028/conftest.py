"""Spec-local fixtures of SPEC-028: the backend's profile, duration scale, terminal."""

from __future__ import annotations

import pytest
from spec028_backends import BackendProfile, profile_for
from spec028_checks import TerminalLines

from pytest_specgate.engines import EngineConfig
from pytest_specgate.plugin import SETTINGS_KEY


@pytest.fixture
def spec028(engine_config: EngineConfig) -> BackendProfile:
    """How this run's backend (``--specgate-engine``) is put into each SPEC-028 situation."""
    return profile_for(engine_config.backend)


@pytest.fixture
def duration_scale(request: pytest.FixtureRequest) -> float:
    """``--specgate-duration-scale``: 1 on a qualifying run, e.g. 0.02 on the mock in CI."""
    scale: float = request.config.stash[SETTINGS_KEY].duration_scale
    return scale


@pytest.fixture
def terminal_lines(request: pytest.FixtureRequest) -> TerminalLines:
    """Progress lines for long runs, written to the terminal even while output is captured."""
    return TerminalLines(request.config)
