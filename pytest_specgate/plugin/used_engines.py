"""The engines a test used, as its payload records them, and the session's memory ledger.

The fixtures fill ``ITEM_ENGINES_KEY`` and the report hook reads it through here: a module
of its own, so the hooks and the fixtures share it without importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_specgate.plugin.stash import ENGINE_CHOICE_KEY, ITEM_ENGINES_KEY, MEMORY_LEDGER_KEY

if TYPE_CHECKING:
    from pytest_specgate.engines.hygiene import MemoryLedger


def memory_ledger(config: pytest.Config) -> MemoryLedger:
    """This session's record of free memory before each boot and after each close."""
    ledger = config.stash.get(MEMORY_LEDGER_KEY, None)
    if ledger is None:
        from pytest_specgate.engines.hygiene import MemoryLedger

        ledger = config.stash[MEMORY_LEDGER_KEY] = MemoryLedger()
    return ledger


def engine_entries(item: pytest.Item) -> list[dict[str, Any]]:
    """This test's engines, each with the ``system_fingerprint`` its server has answered with and
    whether its memory came back (``torn_down`` false: still up when the test's record was taken,
    as a pooled engine is until the session's last test)."""
    used = item.stash.get(ITEM_ENGINES_KEY, [])
    if not used:
        return []
    from pytest_specgate.engines.client import ClientEngine

    choice = item.stash.get(ENGINE_CHOICE_KEY, None)
    ledger = memory_ledger(item.config)
    entries = []
    for engine, record in used:
        fingerprint = engine.client.system_fingerprint if isinstance(engine, ClientEngine) else None
        entry = {**record, "identity": {**record["identity"], "system_fingerprint": fingerprint},
                 "memory_returned": ledger.entry(engine, on_this_host=record.get("loopback") is True)}
        if choice is not None and engine.backend == choice.config.backend:
            entry["selected_by"] = choice.reason()
        entries.append(entry)
    return entries
