"""The package's public names: one table at run time, the same names for type checkers.

``pytest_specgate._EXPORTS`` maps each public name to its module (loaded on first use) and
``__all__`` is derived from it; the ``TYPE_CHECKING`` imports tell type checkers the same
names, each re-exported as ``X as X``. This test keeps the two in step, for the spec
authors' names (``pytest_specgate``, at most 40) and for the backend kit
(``pytest_specgate.backends``), whose own names stay out of the spec authors' list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_specgate
import pytest_specgate.backends

INIT = Path(pytest_specgate.__file__)
BACKENDS = Path(pytest_specgate.backends.__file__)
MAX_SPEC_AUTHOR_NAMES = 40


def _type_checking_imports(source: str) -> dict[str, str]:
    """Name -> module of every ``from M import X as X`` under ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
                    found[alias.name] = statement.module
    return found


def test_type_checkers_see_exactly_the_exported_names_from_their_modules() -> None:
    exports = {name: f"pytest_specgate.{module}" for name, module in pytest_specgate._EXPORTS.items()}
    assert _type_checking_imports(INIT.read_text("utf-8")) == exports
    assert sorted(pytest_specgate.__all__) == sorted(["__version__", *exports])
    kit = pytest_specgate.backends._EXPORTS
    assert _type_checking_imports(BACKENDS.read_text("utf-8")) == kit
    assert sorted(pytest_specgate.backends.__all__) == sorted(kit)


@pytest.mark.parametrize("module", [pytest_specgate, pytest_specgate.backends])
def test_every_exported_name_resolves(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        assert getattr(module, name) is not None, name


def test_spec_authors_get_at_most_40_names_and_no_backend_kit() -> None:
    assert len(pytest_specgate.__all__) <= MAX_SPEC_AUTHOR_NAMES, sorted(pytest_specgate.__all__)
    kit_only = set(pytest_specgate.backends._KIT)
    assert {"EngineBackend", "EngineOption", "Capabilities", "start_server", "ClientEngine"} <= kit_only
    assert kit_only & set(pytest_specgate.__all__) == set()
    assert kit_only <= set(pytest_specgate.backends.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'EngineBackend'"):
        _ = pytest_specgate.EngineBackend  # type: ignore[attr-defined]


def test_names_shared_by_specs_and_backends_are_the_same_objects() -> None:
    shared = set(pytest_specgate.__all__) & set(pytest_specgate.backends.__all__)
    assert {"Engine", "EngineConfig", "Telemetry"} <= shared
    assert [name for name in sorted(shared)
            if getattr(pytest_specgate, name) is not getattr(pytest_specgate.backends, name)] == []


def test_a_name_missing_for_type_checkers_is_found() -> None:
    line = "    from pytest_specgate.measure import run_paired as run_paired\n"
    source = INIT.read_text("utf-8")
    assert line in source
    source = source.replace(line, "")
    assert "run_paired" not in _type_checking_imports(source)


def _private_evidence_imports(source: str) -> list[str]:
    """Modules named ``pytest_specgate.evidence._*`` that ``source`` imports, anywhere."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [m for m in modules if m.startswith("pytest_specgate.evidence._")]
    return found


def test_the_plugin_uses_only_what_evidence_makes_public() -> None:
    plugin = INIT.parent / "plugin"
    private = {path.name: _private_evidence_imports(path.read_text("utf-8")) for path in plugin.glob("*.py")}
    assert {name: found for name, found in private.items() if found} == {}
    planted = "def f() -> None:\n    from pytest_specgate.evidence._signing import sign_bundle\n"
    assert "pytest_specgate.evidence._signing" in _private_evidence_imports(planted)
