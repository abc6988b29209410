"""Mock engines for the qualification tests (real servers on 127.0.0.1, in-process threads)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_specgate.engines.mock import DEFAULT_DRAFT, MockEngine, MockSettings, boot_settings


@pytest.fixture
def mock_engine(tmp_path: Path) -> Iterator[MockEngine]:
    """A speculative mock engine, fresh per test so faults and violations never leak."""
    engine = boot_settings(MockSettings(draft=DEFAULT_DRAFT), tmp_path)
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def baseline_mock_engine(tmp_path: Path) -> Iterator[MockEngine]:
    engine = boot_settings(MockSettings(), tmp_path)
    try:
        yield engine
    finally:
        engine.close()
