"""Old import paths of modules that moved to their layer package (0.1 -> 0.2).

Each old module file calls ``keep_old_path`` so ``import pytest_specgate.host`` and
``from pytest_specgate.hardware import HardwareVerdict`` keep working until ``REMOVED_IN``,
with a ``DeprecationWarning`` that names the new home. The package's own code never
imports an old path (the import-linter contract in pyproject.toml forbids it).
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any

__all__ = ["REMOVED_IN", "keep_old_path"]

REMOVED_IN = "0.3"
"""The release that drops the old paths: 0.2 moved the modules and still answers to both."""


class _MovedModule(types.ModuleType):
    """Stands in for a module whose names now live in several modules."""

    def __init__(self, name: str, homes: tuple[types.ModuleType, ...]) -> None:
        super().__init__(name, f"moved to {', '.join(home.__name__ for home in homes)}")
        self._homes = homes

    def __getattr__(self, attribute: str) -> Any:
        for home in self._homes:
            if hasattr(home, attribute):
                return getattr(home, attribute)
        raise AttributeError(
            f"module {self.__name__!r} has no attribute {attribute!r} "
            f"(it moved to {', '.join(home.__name__ for home in self._homes)})"
        )

    def __setattr__(self, attribute: str, value: Any) -> None:
        """Patching a moved name patches it where it lives, so ``monkeypatch`` still works."""
        if not attribute.startswith("_"):
            for home in self._homes:
                if hasattr(home, attribute):
                    setattr(home, attribute, value)
                    return
        super().__setattr__(attribute, value)

    def __dir__(self) -> list[str]:
        return sorted({name for home in self._homes for name in dir(home)})


def keep_old_path(old: str, *new: str) -> None:
    """Make module ``old`` resolve to the module(s) ``new`` it moved to, warning once."""
    homes = tuple(importlib.import_module(name) for name in new)
    warnings.warn(
        f"{old} moved to {' and '.join(new)}; the old path is removed in pytest-specgate {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,
    )
    sys.modules[old] = homes[0] if len(homes) == 1 else _MovedModule(old, homes)
