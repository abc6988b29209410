"""Public names that load their module on first use, so importing a package stays cheap.

pytest imports ``pytest_specgate`` (and ``pytest_specgate.evidence`` once a test has an ``ac``
marker) at start-up; engines, numpy and jsonschema must load only when something uses them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], object]:
    """A module ``__getattr__``: ``exports`` maps each public name to its submodule of ``package``
    (or to a module's absolute name, for a name re-exported from another layer)."""

    def getattr_(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        absolute = module if module.startswith("pytest_specgate.") else f"{package}.{module}"
        value = getattr(importlib.import_module(absolute), name)
        namespace[name] = value
        return value

    return getattr_
