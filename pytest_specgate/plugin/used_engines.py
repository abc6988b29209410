"""The engines a test used, as its payload records them.

The fixtures fill ``ITEM_ENGINES_KEY`` and the report hook reads it through here: a module
of its own, so the hooks and the fixtures share it without importing each other.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_specgate.plugin.stash import ENGINE_CHOICE_KEY, ITEM_ENGINES_KEY


def engine_entries(item: pytest.Item) -> list[dict[str, Any]]:
    """This test's engines, each with the ``system_fingerprint`` its server has answered with."""
    used = item.stash.get(ITEM_ENGINES_KEY, [])
    if not used:
        return []
    from pytest_specgate.engines.client import ClientEngine

    choice = item.stash.get(ENGINE_CHOICE_KEY, None)
    entries = []
    for engine, record in used:
        fingerprint = engine.client.system_fingerprint if isinstance(engine, ClientEngine) else None
        entry = {**record, "identity": {**record["identity"], "system_fingerprint": fingerprint}}
        if choice is not None and engine.backend == choice.config.backend:
            entry["selected_by"] = choice.reason()
        entries.append(entry)
    return entries
