"""Spec-local fixtures of SPEC-028: the backend's profile and the run's settings it reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from spec028_backends import BackendProfile, profile_for

from pytest_specgate.engines import EngineConfig
from pytest_specgate.plugin.stash import SETTINGS_KEY


@pytest.fixture
def spec028(engine_config: EngineConfig) -> BackendProfile:
    """How this run's backend (``--specgate-engine``) is put into each SPEC-028 situation."""
    return profile_for(engine_config.backend)


@pytest.fixture
def diagnostic_run(request: pytest.FixtureRequest) -> bool:
    """``--specgate-diagnostic``: only then may a canary run on a stand-in pair."""
    diagnostic: bool = request.config.stash[SETTINGS_KEY].run.diagnostic
    return diagnostic


@pytest.fixture
def record_reference_dir(request: pytest.FixtureRequest) -> Path | None:
    """``--specgate-record-reference=DIR``: record reference outputs there instead of comparing."""
    directory: Path | None = request.config.stash[SETTINGS_KEY].record_reference_dir
    return directory
