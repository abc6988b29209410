"""Fixtures for the engine tests: mock engines booted in-process on 127.0.0.1.

Engines whose state a test changes (faults, rolls, swaps, violations) are booted
per test by ``boot_mock``; read-only ones are shared per module to keep the run
short.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from engines_testkit import BootMock, mock_config

from pytest_specgate.engines.mock import MockEngine, boot


@pytest.fixture
def boot_mock(tmp_path: Path) -> Iterator[BootMock]:
    """Boot mock engines for one test; all of them are closed at teardown."""
    engines: list[MockEngine] = []

    def start(**kwargs: object) -> MockEngine:
        engine = boot(mock_config(**kwargs), tmp_path)  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    try:
        yield start
    finally:
        for engine in engines:
            engine.close()


@pytest.fixture(scope="module")
def spec_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockEngine]:
    """Speculative mock (alpha 0.7, gamma 4), shared by a module's read-only tests."""
    with boot(mock_config(alpha=0.7), tmp_path_factory.mktemp("spec")) as engine:
        yield engine


@pytest.fixture(scope="module")
def baseline_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockEngine]:
    """The same target without a draft: the reference for identity checks."""
    with boot(mock_config(draft=None), tmp_path_factory.mktemp("base")) as engine:
        yield engine
