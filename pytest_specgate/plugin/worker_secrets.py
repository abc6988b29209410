"""Secrets an xdist worker learns reach the controller with the worker's next report, sealed
(``evidence._worker_secrets``), so the controller's terminal, bundle and CI log mask them too:
registered before the report that may print them is shown or recorded. The sealing code loads
only when there is a value to seal or open, so a run imports the same modules with and
without xdist.
"""

from __future__ import annotations

import queue
import secrets
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_specgate.plugin.bundle import session_redactor
from pytest_specgate.plugin.stash import REDACTOR_KEY, SECRETS_SENT_KEY
from pytest_specgate.plugin.terminal import announce_masks

if TYPE_CHECKING:
    from collections.abc import MutableMapping

SEAL_KEY_INPUT: Final = "specgate_secret_seal"
"""``workerinput`` key: the hex key the controller hands each worker to seal its secrets with."""
SEALED_REPORT_FIELD: Final = "specgate_sealed_secrets"
"""Key of a serialized worker report that carries the values the worker learned since its last
report; the controller takes it off before the report is rebuilt, so no report holds it."""
_RECEIVER: Final = "specgate-worker-secrets"


class WorkerSecretsReceiver:
    """The controller's end, registered when xdist configures its first worker: the run's key,
    and the values received in xdist's receiver thread, waiting for the main thread."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self.key = secrets.token_hex(32)
        self._received: queue.SimpleQueue[str] = queue.SimpleQueue()

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(self, data: MutableMapping[str, Any]) -> Any:
        sealed = data.pop(SEALED_REPORT_FIELD, None) if isinstance(data, dict) else None
        if sealed is not None:
            from pytest_specgate.evidence import SealError, unseal

            try:
                values = unseal(sealed, self.key)
            except SealError as error:
                raise SealError(f"{data.get('nodeid')}: a worker's report is refused: {error}") from None
            for value in values:
                self._received.put(value)
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self) -> None:
        """Before the terminal shows the report or the bundle records it."""
        self._register_received()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self._register_received()

    def _register_received(self) -> None:
        values = []
        while not self._received.empty():
            values.append(self._received.get_nowait())
        if values:
            redactor = session_redactor(self._config)
            announce_masks(self._config, [value for value in values if redactor.register_secret(value)])


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand each worker the run's sealing key (``workerinput`` travels only over xdist's channel)."""
    manager = node.config.pluginmanager
    receiver = manager.get_plugin(_RECEIVER)
    if receiver is None:
        receiver = WorkerSecretsReceiver(node.config)
        manager.register(receiver, _RECEIVER)
    node.workerinput[SEAL_KEY_INPUT] = receiver.key


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    """On a worker: the values it learned since its last report ride on this one, sealed."""
    data = yield
    key = getattr(config, "workerinput", {}).get(SEAL_KEY_INPUT)
    if key is None or REDACTOR_KEY not in config.stash or not isinstance(data, dict):
        return data
    sent = config.stash.setdefault(SECRETS_SENT_KEY, set())
    new = [value for value in config.stash[REDACTOR_KEY].known_secrets if value not in sent]
    if new:
        from pytest_specgate.evidence import seal

        data[SEALED_REPORT_FIELD] = seal(new, key)
        sent.update(new)
    return data


def pytest_unconfigure(config: pytest.Config) -> None:
    receiver = config.pluginmanager.get_plugin(_RECEIVER)
    if receiver is not None:
        config.pluginmanager.unregister(receiver)
