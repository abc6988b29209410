"""A third-party backend's ``versions()`` of the shape docs/backends.md shows
(``{"specgate-echo": "1.0"}``) counts as a known version and renders with its name; a built-in
backend still needs its own keys, and bookkeeping or "unknown" entries name nothing."""

from __future__ import annotations

import pytest

from pytest_specgate.contracts.engine import declared_version
from pytest_specgate.engines.identity import ServerIdentity, version_known
from pytest_specgate.evidence._acrecord import EngineFact
from pytest_specgate.evidence._markdown import CURRENT_LAYOUT, _engine_text

SILENT_SERVER = ServerIdentity("http://127.0.0.1:9", (), None, None, None)
DOCS_SHAPE = {"backend": "echo", "model": "echo", "specgate-echo": "1.0"}


def test_the_documented_shape_is_a_known_version_and_renders_with_its_name() -> None:
    assert declared_version(DOCS_SHAPE) == ("specgate-echo", "1.0")
    assert version_known("echo", DOCS_SHAPE, SILENT_SERVER) is True
    fact = EngineFact(backend="echo", model="echo", simulated=False, loopback=True, version_known=True,
                      versions=DOCS_SHAPE)
    assert _engine_text(fact, CURRENT_LAYOUT).startswith("echo, model echo, version 1.0 (specgate-echo); ")


@pytest.mark.parametrize("versions", [
    {"backend": "echo", "model": "echo"},
    {"backend": "echo", "model": "echo", "specgate-echo": "unknown"},
    {"backend": "echo", "model": "echo", "specgate-echo": ""},
    {"backend": "echo", "model": "echo", "specgate-echo": 1},
])
def test_entries_that_name_no_version_are_unknown(versions: dict[str, object]) -> None:
    assert version_known("echo", versions, SILENT_SERVER) is False
    fact = EngineFact(backend="echo", model="echo", simulated=False, loopback=True, version_known=False,
                      versions=versions)
    assert ", version unknown; " in _engine_text(fact, CURRENT_LAYOUT)


def test_a_built_in_backend_still_needs_its_own_key() -> None:
    assert version_known("mlx", {"backend": "mlx", "model": "m", "numpy": "2.1"}, SILENT_SERVER) is False
    assert version_known("mlx", {"backend": "mlx", "model": "m", "mlx-lm": "0.32.2"}, SILENT_SERVER) is True
    fact = EngineFact(backend="mlx", model="m", simulated=False, loopback=True, version_known=False,
                      versions={"numpy": "2.1"})
    assert ", version unknown; " in _engine_text(fact, CURRENT_LAYOUT)
