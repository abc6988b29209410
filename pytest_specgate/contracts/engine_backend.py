"""What a backend package hands pytest-specgate: a boot function and the options it takes.

A third-party package points an entry point of the group ``pytest_specgate.backends`` at
an :class:`EngineBackend`; the plugin checks every ``@pytest.mark.engine`` naming it against
``options`` at collection and calls ``boot`` when a test first asks for that configuration.
docs/backends.md walks through a whole package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import final

from pytest_specgate.contracts.engine import Engine
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.engine_options import EngineOption, OptionTable, option_table

__all__ = ["BootFunction", "EngineBackend"]

BootFunction = Callable[[EngineConfig, Path], Engine]
"""``boot(config, workdir)``: start (or attach to) an engine for ``config``, logging under ``workdir``."""


@final
@dataclass(frozen=True, init=False)
class EngineBackend:
    """A backend: ``boot`` and the marker options it declares (none unless listed).

    ``builds_tiny_models``: the plugin builds ``tiny:<role>`` and ``local-pair:<role>``
    models into its session cache and passes the folder as the ``model_cache`` option.
    """

    boot: BootFunction
    options: OptionTable = field(default_factory=dict)
    builds_tiny_models: bool = False

    def __init__(self, boot: BootFunction, options: Iterable[EngineOption] = (), *,
                 builds_tiny_models: bool = False) -> None:
        object.__setattr__(self, "boot", boot)
        object.__setattr__(self, "options", option_table(options))
        object.__setattr__(self, "builds_tiny_models", builds_tiny_models)
