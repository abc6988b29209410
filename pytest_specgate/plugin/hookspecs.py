"""Hooks other plugins and conftest files implement to change specgate's behaviour."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_specgate.contracts.host import HostFacts


class SpecgateHookSpecs:
    """Added through ``pytest_addhooks``; specgate's own defaults are ``trylast``."""

    @pytest.hookspec(firstresult=True)
    def pytest_specgate_host_facts(self, config: pytest.Config) -> HostFacts | None:
        """Return the host facts of this session instead of probing the machine.

        The first non-None result wins; specgate's default reads
        ``--specgate-host-facts`` when given and probes otherwise. Facts from any other
        implementation are recorded as simulated (origin ``hook``) and never qualify.
        """

    def pytest_specgate_update_host_facts(self, config: pytest.Config,
                                          facts: dict[str, Any]) -> None:
        """Edit the host facts in place (a JSON-shaped dict) before they are validated.

        Any change (compared before and after) records the facts as simulated (origin
        ``edited``): evidence on them never qualifies.
        """
