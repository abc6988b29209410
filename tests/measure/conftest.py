"""Shared fixtures for the measurement tests."""

from __future__ import annotations

import pytest
from measure_fakes import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
