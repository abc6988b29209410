"""One module touches pytest's internals: ``plugin.pytest_adapter``.

Every import of ``_pytest`` (at module level, in a function or under ``TYPE_CHECKING``) and
every use of a private or undocumented member the adapter wraps is found with ``ast``, so a
second module reaching into pytest fails here, not at the next pytest release.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_specgate

PACKAGE = Path(pytest_specgate.__file__).parent
ADAPTER = "plugin/pytest_adapter.py"
WRAPPED = frozenset({"_do_configure", "_ensure_unconfigure", "global_and_fixture_disabled", "currentfspath"})
"""Members of pytest's objects that are private or undocumented: only the adapter names them."""


def _internals(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "_pytest"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "_pytest":
            found.append(node.module or "")
        elif isinstance(node, ast.Attribute) and node.attr in WRAPPED:
            found.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value == "_pytest" or node.value.startswith("_pytest.")):
            found.append(node.value)
    return found


def test_only_the_adapter_touches_pytest_internals() -> None:
    touching = {str(path.relative_to(PACKAGE)): found for path in sorted(PACKAGE.rglob("*.py"))
                if (found := _internals(path.read_text("utf-8")))}
    assert set(touching) == {ADAPTER}
    assert {"_pytest.config", *WRAPPED} <= set(touching[ADAPTER])


def test_every_form_of_reaching_into_pytest_is_found() -> None:
    planted = [
        "from _pytest.config import get_config",
        "import _pytest.capture",
        "def f():\n    from _pytest import nodes",
        "config._do_configure()",
        "reporter.currentfspath = path",
        "importlib.import_module('_pytest.terminal')",
    ]
    assert [source for source in planted if not _internals(source)] == []
    assert _internals("import pytest\nconfig.getoption('x')\nfrom pytest_specgate import plugin") == []
