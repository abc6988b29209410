"""Every stash key of the plugin: what a session, a test or a worker keeps between hooks.

One module, so a hook, a fixture and a conftest (``acceptance/spec028/conftest.py``
reads the session's settings) name the same key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:
    from pytest_specgate.contracts.acceptance import AcceptanceCriterion
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.contracts.engine_config import EngineConfig
    from pytest_specgate.contracts.hardware import HardwareVerdict
    from pytest_specgate.contracts.host import HostFacts, HostProvenance
    from pytest_specgate.contracts.payload import SpecPayload
    from pytest_specgate.contracts.runmode import RunDecision
    from pytest_specgate.engines.config import EngineChoice
    from pytest_specgate.engines.hygiene import MemoryLedger
    from pytest_specgate.evidence import (
        EvidenceCollector,
        EvidenceRecorder,
        Redactor,
        SelectionFacts,
        SignedBundle,
        SigningKey,
        WatchMark,
    )
    from pytest_specgate.plugin.census import RunCollection
    from pytest_specgate.selection.collection import SpecPlan
    from pytest_specgate.selection.settings import ProjectSettings, SpecgateSettings

SETTINGS_KEY: Final[pytest.StashKey[SpecgateSettings]] = pytest.StashKey()
PROJECT_KEY: Final[pytest.StashKey[ProjectSettings]] = pytest.StashKey()
HOST_FACTS_KEY: Final[pytest.StashKey[HostFacts]] = pytest.StashKey()
DEFAULT_HOST_FACTS_KEY: Final[pytest.StashKey[tuple[HostFacts, dict[str, Any]]]] = pytest.StashKey()
HOST_PROVENANCE_KEY: Final[pytest.StashKey[HostProvenance]] = pytest.StashKey()
DECISION_KEY: Final[pytest.StashKey[RunDecision]] = pytest.StashKey()
VERDICT_KEY: Final[pytest.StashKey[HardwareVerdict]] = pytest.StashKey()
AC_KEY: Final[pytest.StashKey[AcceptanceCriterion]] = pytest.StashKey()
FIRST_PAYLOAD_KEY: Final[pytest.StashKey[SpecPayload]] = pytest.StashKey()
"""A test's setup payload, whose node id, AC, hardware verdict and mode its teardown's reuses."""
COLLECTOR_KEY: Final[pytest.StashKey[EvidenceCollector]] = pytest.StashKey()
REDACTOR_KEY: Final[pytest.StashKey[Redactor]] = pytest.StashKey()
RECORDER_KEY: Final[pytest.StashKey[EvidenceRecorder]] = pytest.StashKey()
SELECTION_KEY: Final[pytest.StashKey[SelectionFacts]] = pytest.StashKey()
ENGINE_RECORDS_KEY: Final[pytest.StashKey[dict[EngineConfig, dict[str, Any]]]] = pytest.StashKey()
SIGNING_KEY: Final[pytest.StashKey[SigningKey]] = pytest.StashKey()
SIGNED_KEY: Final[pytest.StashKey[SignedBundle | str]] = pytest.StashKey()
ENGINE_CHOICE_KEY: Final[pytest.StashKey[EngineChoice]] = pytest.StashKey()
PLAN_KEY: Final[pytest.StashKey[SpecPlan]] = pytest.StashKey()
RUN_COLLECTION_KEY: Final[pytest.StashKey[RunCollection]] = pytest.StashKey()
CURRENT_ITEM_KEY: Final[pytest.StashKey[pytest.Item]] = pytest.StashKey()
ITEM_ENGINES_KEY: Final[pytest.StashKey[list[tuple[Engine, dict[str, Any]]]]] = pytest.StashKey()
MEMORY_LEDGER_KEY: Final[pytest.StashKey[MemoryLedger]] = pytest.StashKey()
SECRETS_SENT_KEY: Final[pytest.StashKey[set[str]]] = pytest.StashKey()
"""The known secrets an xdist worker has sent the controller (``plugin.worker_secrets``)."""
IMPORT_MARK_KEY: Final[pytest.StashKey[WatchMark]] = pytest.StashKey()
"""Where this run's imports start in the import watcher (``evidence.watch_imports``)."""
