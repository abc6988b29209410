"""The built-in mock engine: a real OpenAI-compatible server simulating speculative decoding.

``boot`` is the backend entry point the built-in backend table names; the
model, settings and app modules are importable on their own for tests that need
to compute expected outputs or counts independently of the server.
"""

from __future__ import annotations

from pytest_specgate.engines.mock.server import MockEngine, boot, boot_settings
from pytest_specgate.engines.mock.settings import (
    DEFAULT_DRAFT,
    DEFAULT_TARGET,
    FAULT_KINDS,
    GATEABLE_FEATURES,
    VIOLATIONS,
    MockSettings,
    settings_from_config,
)

__all__ = [
    "DEFAULT_DRAFT",
    "DEFAULT_TARGET",
    "FAULT_KINDS",
    "GATEABLE_FEATURES",
    "VIOLATIONS",
    "MockEngine",
    "MockSettings",
    "boot",
    "boot_settings",
    "settings_from_config",
]
