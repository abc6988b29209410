"""Registers ``real_engine`` for these tests until the plugin registers it for the whole suite."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "real_engine: boots a real inference engine (slow; deselect with -m 'not real_engine')",
    )
