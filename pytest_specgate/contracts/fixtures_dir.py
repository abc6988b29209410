"""Where the running project's pinned fixtures live: set by the plugin, read by measure's loaders.

A spec calls ``model_pair("AC-10")`` with no path, so the loaders need the project's directory
from somewhere other than their arguments; it must never be the installed package's own folder
(an adopter's fixtures live in the adopter's project). The plugin pushes the project's directory
at configure and pops it at cleanup; a pytester run inside a run nests. Kept here, free of the
measure package, because the plugin's configure must not import it (it pulls numerical code).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

__all__ = ["FIXTURES_DIR_NAME", "configured_fixtures_dir", "use_project_fixtures_dir"]

FIXTURES_DIR_NAME = "fixtures"
_configured: list[Path] = []


def use_project_fixtures_dir(directory: Path) -> Callable[[], None]:
    """Make ``directory`` the project's fixtures directory; returns the undo (for cleanup)."""
    _configured.append(directory)

    def restore() -> None:
        for index in range(len(_configured) - 1, -1, -1):
            if _configured[index] is directory:
                del _configured[index]
                return

    return restore


def configured_fixtures_dir() -> Path | None:
    """The innermost running project's directory, or None outside a pytest run."""
    return _configured[-1] if _configured else None
